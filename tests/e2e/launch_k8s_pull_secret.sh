#!/usr/bin/env bash
# Images from a private registry (Debian's docker-registry on 127.0.0.1 with
# htpasswd basic auth) on the fake cluster's real mode, whose node pulls each
# registry image itself with the pod's imagePullSecrets, as a kubelet does:
# a pod without them (or with wrong ones) is ErrImagePull, then
# ImagePullBackOff; forge-launch --registry makes a kubernetes.io/
# dockerconfigjson Secret from the docker config's credentials before the
# first pod, every pod names it, it is deleted at the run's end and its
# content reaches no record, log or store; a Secret of that name already
# there (a resumed run's) is replaced; gc --run-id removes one left behind;
# --k8s-image-pull-secret names the user's own instead: missing is refused
# before any pod, and the pods pull with it (wrong credentials: the rollout's
# infra error names ErrImagePull).
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
source "$FORGE_SRC/tests/support/registry.sh"
k8s_real_mode_or_skip launch_k8s_pull_secret
registry_or_skip launch_k8s_pull_secret
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
K8S_NS=forge-e2e
pids=()
port=$(free_port)
registry="127.0.0.1:$port/ps-$$"
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  drop_registry_images "$port" ps-wrong ps-first ps-again
  rm -rf "$WORK"
}
trap cleanup EXIT
start_private_registry private "$port" || { fail "registry: $(cat "$WORK/private.log")"; finish; exit 1; }
start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }

# A Harbor task whose environment/Dockerfile forge builds and pushes.
make_built_task "$WORK/built" built
echo one >"$WORK/built/environment/data.txt"

L() {  # RUN_ID ARGS...
  "$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
    --k8s-apply-network-policies --store "$WORK/forge.db" --image forge-busybox:latest --retry-backoff 0.1 --run-id "$1" \
    --registry "$registry" --command 'cat /etc/built-for' "${@:2}"
}
secret_name() { echo "forge-pull-$1-$(printf %s "$1" | sha256sum | cut -c1-10)"; }  # run ids here are DNS-safe
dockerconfigjson() {  # CONFIG_DIR NAME [RUN]: a Secret of it, as kubectl create secret docker-registry makes one
  local json labels='{}'
  json=$(jq -c '{auths: (.auths | map_values({username: (.auth | @base64d | split(":")[0]),
                  password: (.auth | @base64d | split(":")[1:] | join(":")), auth}))}' "$1/config.json")
  [ -n "${3:-}" ] && labels="{\"app.kubernetes.io/managed-by\":\"forge\",\"forge.run\":\"$3\"}"
  jq -n --arg name "$2" --arg data "$(printf %s "$json" | base64 -w0)" --argjson labels "$labels" \
    '{apiVersion: "v1", kind: "Secret", metadata: {name: $name, labels: $labels},
      type: "kubernetes.io/dockerconfigjson", data: {".dockerconfigjson": $data}}' >"$WORK/$2.json"
  kc create "$WORK/$2.json" >/dev/null
}
requests() { curl -fsS "$K8S_URL/_fake/stats" | jq -r --arg k "$1" '.requests[$k] // 0'; }
waiting_reason() {  # POD: waits for the kubelet's verdict on its image; prints reason and message
  local got
  for _ in $(seq 150); do
    got=$(kc get pods "$1" | jq -r '.status.containerStatuses[0].state | if .waiting then "\(.waiting.reason) \(.waiting.message)" elif .running then "Running" else empty end')
    case "$got" in ErrImagePull*|ImagePullBackOff*|Running) echo "$got"; return ;; esac
    sleep 0.2
  done
  echo "none: $(kc get pods "$1" | jq -c .status)"
}
plain_pod() {  # NAME IMAGE [SECRET]
  jq -n --arg name "$1" --arg image "$2" --arg secret "${3:-}" '{apiVersion: "v1", kind: "Pod",
    metadata: {name: $name}, spec: ({restartPolicy: "Never", automountServiceAccountToken: false,
    containers: [{name: "main", image: $image, args: ["sh", "-c", "sleep 60"]}]}
    + (if $secret == "" then {} else {imagePullSecrets: [{name: $secret}]} end))}' >"$WORK/$1.json"
  kc create "$WORK/$1.json" >/dev/null
}

echo "== a pod of the private registry's image: without a Secret, or with wrong credentials, ErrImagePull as a kubelet reports"
docker tag forge-busybox:latest "$registry/plain:1" && DOCKER_CONFIG="$WORK/login" docker push "$registry/plain:1" >/dev/null 2>&1 &&
  pass || fail "push $registry/plain:1"
plain_pod anon "$registry/plain:1"
got=$(waiting_reason anon)
[[ "$got" =~ ^(ErrImagePull|ImagePullBackOff)\ .*(no\ basic\ auth\ credentials|unauthorized|401) ]] && pass ||
  fail "no Secret: $got"
dockerconfigjson "$WORK/wrong" wrongcred
plain_pod badcred "$registry/plain:1" wrongcred
got=$(waiting_reason badcred)
[[ "$got" =~ ^(ErrImagePull|ImagePullBackOff)\  ]] && pass || fail "wrong credentials: $got"
dockerconfigjson "$WORK/login" goodcred
plain_pod goodcred "$registry/plain:1" goodcred
[ "$(waiting_reason goodcred)" = Running ] && pass || fail "the right Secret: $(waiting_reason goodcred)"
for p in anon badcred goodcred; do kc delete pods "$p" >/dev/null 2>&1; done

echo "== --k8s-image-pull-secret naming no Secret: refused before any pod"
expect_exit 78 "missing secret" L ps-missing --docker-config "$WORK/login/config.json" --k8s-image-pull-secret nosuch "$WORK/built"
grep -q -- "--k8s-image-pull-secret nosuch: no Secret nosuch in namespace $K8S_NS" "$ERR" && pass || fail "the refusal: $(cat "$ERR")"
[ "$(kc get pods -l forge.run=ps-missing | jq '.items | length')" = 0 ] && pass || fail "a refused run made pods"

echo "== --k8s-image-pull-secret naming the user's Secret: the pods pull with it, forge makes none"
creates=$(requests "create secrets")
expect_exit 69 "wrong user secret" L ps-wrong --hold --docker-config "$WORK/login/config.json" --k8s-image-pull-secret wrongcred "$WORK/built"
jq -r .error "$OUT" | grep -Eq "(ErrImagePull|ImagePullBackOff): .*the registry refused the credentials of the pod's imagePullSecrets" &&
  pass || fail "the error names the pull: $(jq -c . "$OUT")"
[ "$(jq -r '"\(.transient) \(.infra_retries)"' "$OUT")" = "false 0" ] && pass || fail "a refused pull is retried: $(jq -c . "$OUT")"
[ -n "$(jq -r '.image_pushed // empty' "$OUT")" ] && pass || fail "forge pushed with its own credentials: $(jq -c . "$OUT")"
[ "$(requests "create secrets")" = "$creates" ] && pass || fail "forge made a Secret beside the user's"

echo "== made from the docker config's credentials: named by the pod, which pulls with it; deleted at the run's end"
name=$(secret_name ps-first)
expect_exit 0 "first run" L ps-first --hold --docker-config "$WORK/login/config.json" "$WORK/built"
[ "$(jq -r .outcome "$OUT")" = ok ] && [ "$(jq -r .logs.stdout "$OUT")" = "built-$$" ] && pass ||
  fail "the run: $(cat "$OUT") $(cat "$ERR")"
pod=$(kc get pods -l forge.run=ps-first | jq -r '.items[0].metadata.name')
kc get pods "$pod" >"$WORK/pod.json"
[ "$(jq -c .spec.imagePullSecrets "$WORK/pod.json")" = "[{\"name\":\"$name\"}]" ] && pass ||
  fail "the pod's imagePullSecrets: $(jq -c .spec.imagePullSecrets "$WORK/pod.json"), want $name"
[ "$(jq -r '.status.containerStatuses[0].imageID' "$WORK/pod.json")" = "$(jq -r .image "$OUT")" ] && pass ||
  fail "the node pulled $(jq -r .image "$OUT"): $(jq -c '.status.containerStatuses[0]' "$WORK/pod.json")"
[ "$(requests "create secrets")" = $((creates + 1)) ] && pass || fail "secrets created: $(requests "create secrets")"
kc get secrets "$name" >/dev/null 2>&1 && fail "the Secret outlived its run" || pass
for f in "$OUT" "$ERR" "$WORK/forge.db"; do
  grep -aqE "s3cret|$(printf robot:s3cret | base64)|$(printf %s "{\"auths\"" | base64 | cut -c1-12)" "$f" &&
    fail "the credentials reached $f" || pass
done
"$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  gc --run-id ps-first >/dev/null 2>&1

echo "== a Secret of the run's name already there (a resumed run's): replaced"
name=$(secret_name ps-again)
dockerconfigjson "$WORK/wrong" "$name" ps-again
updates=$(requests "update secrets")
echo two >"$WORK/built/environment/data.txt"  # a new image, which the node has never pulled
expect_exit 0 "again" L ps-again --docker-config "$WORK/login/config.json" "$WORK/built"
[ "$(jq -r .outcome "$OUT")" = ok ] && [ -n "$(jq -r '.image_pushed // empty' "$OUT")" ] && pass ||
  fail "the run over a stale Secret: $(cat "$OUT") $(cat "$ERR")"
[ "$(requests "update secrets")" = $((updates + 1)) ] && pass || fail "secret updates: $(requests "update secrets")"
kc get secrets "$name" >/dev/null 2>&1 && fail "the replaced Secret outlived its run" || pass

echo "== gc --run-id removes a run's Secret that a killed forge-launch left"
name=$(secret_name ps-killed)
dockerconfigjson "$WORK/login" "$name" ps-killed
kc get secrets "$name" >/dev/null 2>&1 && pass || fail "made $name"
"$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  gc --run-id ps-killed >/dev/null 2>"$ERR" && pass || fail "gc: $(cat "$ERR")"
kc get secrets "$name" >/dev/null 2>&1 && fail "gc left $name" || pass
kc get secrets goodcred >/dev/null 2>&1 && pass || fail "gc removed a Secret of no run"
finish
