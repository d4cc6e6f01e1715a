#!/usr/bin/env bash
# An authenticated HTTPS registry: Debian's docker-registry on 127.0.0.1
# with TLS (a certificate signed by a CA this test makes) and htpasswd basic
# auth, pushed to by forge-launch --backend k8s --registry and pulled from by
# the fake cluster's real mode (a test double whose node pulls with the
# pod's imagePullSecrets). Shown: the manifest HEAD over verified TLS with
# the CA from --registry-ca, the push, the digest the pods run; a second run
# that finds the tag over TLS trusted through the engine's certs.d for
# 127.0.0.1:PORT and pushes nothing; wrong credentials and an untrusted
# certificate are errors naming the registry, not retried.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
source "$FORGE_SRC/tests/support/registry.sh"
k8s_real_mode_or_skip launch_k8s_registry_tls
registry_or_skip launch_k8s_registry_tls
command -v openssl >/dev/null || { echo "SKIP: launch_k8s_registry_tls: no openssl" >&2; exit 77; }
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
K8S_NS=forge-e2e
pids=()
port=$(free_port)
registry="127.0.0.1:$port/tls-$$"
repo="$registry/forge-task"
certs_d="/etc/docker/certs.d/127.0.0.1:$port"
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$certs_d"
  drop_registry_images "$port" tls-first tls-again
  rm -rf "$WORK"
}
trap cleanup EXIT

# A CA, the registry's certificate for 127.0.0.1 signed by it, and another CA that signs nothing here.
cd "$WORK" || exit 1
for ca in ca other; do
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$ca.key" -out "$ca.pem" -days 1 -subj "/CN=forge-e2e-$ca" 2>/dev/null
done
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile server.ext 2>/dev/null
[ -s server.pem ] && pass || fail "no server certificate"
cd - >/dev/null || exit 1
start_private_registry secure "$port" "  tls:
    certificate: $WORK/server.pem
    key: $WORK/server.key" || { fail "registry: $(cat "$WORK/secure.log")"; finish; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/ca.pem" "https://127.0.0.1:$port/v2/")" = 401 ] && pass ||
  fail "the registry does not answer HTTPS with 401: $(tail -3 "$WORK/secure.log")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2/")" = 400 ] && pass || fail "the registry answers plain HTTP"
start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }
make_built_task "$WORK/built" tls
L() {  # RUN_ID ARGS...
  "$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
    --k8s-apply-network-policies --store "$WORK/forge.db" --image forge-busybox:latest --retry-backoff 0.1 --run-id "$1" \
    --registry "$registry" --command 'cat /etc/built-for' "${@:2}"
}
registry_digest() {  # TAG, asked over verified TLS with the credentials
  curl -fsSI --cacert "$WORK/ca.pem" -u robot:s3cret \
    -H 'Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json' \
    "https://127.0.0.1:$port/v2/tls-$$/forge-task/manifests/$1" | tr -d '\r' | awk -F': ' 'tolower($1) == "docker-content-digest" { print $2 }'
}
manifest_puts() { grep -c '"PUT /v2/[^ ]*/manifests/[^ ]* HTTP/[0-9.]*" 201 ' "$WORK/secure.log"; }

echo "== --registry-ca: HEAD over verified TLS with the credentials, the push, the pod runs the registry's digest"
expect_exit 0 "first run" L tls-first --hold --registry-ca "$WORK/ca.pem" --docker-config "$WORK/login/config.json" "$WORK/built"
[ "$(jq -r .outcome "$OUT")" = ok ] && [ "$(jq -r .logs.stdout "$OUT")" = "tls-$$" ] && pass ||
  fail "the run: $(cat "$OUT") $(tail -3 "$ERR")"
tag=$(jq -r '.image_pushed // empty' "$OUT")
[[ "$tag" =~ ^$repo:[0-9a-f]{40}$ ]] && pass || fail "pushed: $(jq -c '{image, image_pushed}' "$OUT")"
digest=$(registry_digest "${tag##*:}")
[ -n "$digest" ] && [ "$(jq -r .image "$OUT")" = "$repo@$digest" ] && pass ||
  fail "the record's image $(jq -r .image "$OUT") is not $repo@$digest"
pod=$(kc get pods -l forge.run=tls-first | jq -r '.items[0].metadata.name')
[ "$(kc get pods "$pod" | jq -r '.status.containerStatuses[0].imageID')" = "$repo@$digest" ] && pass ||
  fail "the node pulled $repo@$digest: $(kc get pods "$pod" | jq -c '.status.containerStatuses[0]')"
[ "$(manifest_puts)" = 1 ] && pass || fail "manifest PUTs: $(manifest_puts)"
grep -q '"HEAD /v2/tls-'"$$"'/forge-task/manifests/[0-9a-f]* HTTP/[0-9.]*" 200' "$WORK/secure.log" && pass ||
  fail "forge's HEAD after the push: $(grep HEAD "$WORK/secure.log" | tail -3)"
"$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  gc --run-id tls-first >/dev/null 2>&1

echo "== the engine's certs.d for 127.0.0.1:$port: the tag found over verified TLS, nothing pushed"
mkdir -p "$certs_d" && cp "$WORK/ca.pem" "$certs_d/ca.crt"
expect_exit 0 "again" L tls-again --docker-config "$WORK/login/config.json" "$WORK/built"
[ "$(jq -r '"\(.outcome) \(.image) \(.image_pushed // "none")"' "$OUT")" = "ok $repo@$digest none" ] && pass ||
  fail "again: $(cat "$OUT") $(tail -3 "$ERR")"
[ "$(manifest_puts)" = 1 ] && pass || fail "manifest PUTs after the second run: $(manifest_puts)"
rm -rf "$certs_d"

echo "== wrong credentials: an error naming the registry, not retried"
expect_exit 69 "wrong credentials" L tls-wrong --infra-retries 2 --registry-ca "$WORK/ca.pem" \
  --docker-config "$WORK/wrong/config.json" "$WORK/built"
jq -r .error "$OUT" | grep -q "^task built: image for the cluster: registry 127.0.0.1:$port: HEAD /v2/tls-$$/forge-task/manifests/[0-9a-f]*: HTTP 401 (the docker config's credentials were refused)" &&
  pass || fail "wrong credentials: $(jq -r .error "$OUT")"
[ "$(jq -r '"\(.transient) \(.infra_retries)"' "$OUT")" = "false 0" ] && pass || fail "retried: $(jq -c . "$OUT")"

echo "== a certificate the given CA does not sign: an error naming the registry, not retried"
expect_exit 69 "untrusted" L tls-untrusted --infra-retries 2 --registry-ca "$WORK/other.pem" \
  --docker-config "$WORK/login/config.json" "$WORK/built"
jq -r .error "$OUT" | grep -q "^task built: image for the cluster: registry 127.0.0.1:$port: HEAD /v2/tls-$$/forge-task/manifests/[0-9a-f]*: https://127.0.0.1:$port/v2/.*: its TLS certificate is not trusted" &&
  pass || fail "untrusted: $(jq -r .error "$OUT")"
[ "$(jq -r '"\(.transient) \(.infra_retries)"' "$OUT")" = "false 0" ] && pass || fail "retried: $(jq -c . "$OUT")"
expect_exit 69 "unreadable CA" L tls-noca --registry-ca "$WORK/nosuch.pem" --docker-config "$WORK/login/config.json" "$WORK/built"
jq -r .error "$OUT" | grep -q "registry 127.0.0.1:$port: --registry-ca $WORK/nosuch.pem: not readable" && pass ||
  fail "unreadable CA: $(jq -r .error "$OUT")"
finish
