#!/usr/bin/env bash
# Image pulls in the fake Kubernetes API server's real mode (a test double):
# images on a Debian docker-registry on 127.0.0.1, by tag and by digest
# (imageID reports the digest), a tag the registry lacks is ErrImagePull then
# ImagePullBackOff with the registry's answer, and a registry with htpasswd
# is pulled from only with the pod's imagePullSecrets (a
# kubernetes.io/dockerconfigjson Secret).
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
source "$FORGE_SRC/tests/support/registry.sh"
k8s_real_mode_or_skip k8s_fake_registry
registry_or_skip k8s_fake_registry
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
K8S_NS=forge-e2e
pids=()
port=$(free_port); auth_port=$(free_port)
repo="127.0.0.1:$port/k8s-fake-e2e/busybox-$$"
private="127.0.0.1:$auth_port/k8s-fake-e2e/private-$$"
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  docker image rm -f "$repo:1" "$private:1" $(docker images -q "$repo" 2>/dev/null) >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
start_registry open "$port"
python3 -W ignore -c 'import crypt; print("robot:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH)))' >"$WORK/htpasswd"
start_registry private "$auth_port" "auth:
  htpasswd:
    realm: k8s-fake-e2e
    path: $WORK/htpasswd"
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.1; done
docker tag forge-busybox:latest "$repo:1" && docker push -q "$repo:1" >/dev/null || { fail "push to the registry"; finish; exit 1; }
digest=$(docker inspect -f '{{range .RepoDigests}}{{println .}}{{end}}' "$repo:1" | grep "^$repo@" | head -1)
[ -n "$digest" ] && pass || fail "no digest after the push"
for _ in $(seq 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$auth_port/v2/")" = 401 ] && break; sleep 0.1; done
mkdir -p "$WORK/docker"
printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$auth_port" "$(printf robot:s3cret | base64)" >"$WORK/docker/config.json"
docker tag forge-busybox:latest "$private:1" && DOCKER_CONFIG="$WORK/docker" docker push -q "$private:1" >/dev/null ||
  { fail "push to the private registry"; finish; exit 1; }
docker image rm "$repo:1" "$private:1" >/dev/null 2>&1

start_k8s_fake real || { fail "start"; finish; exit 1; }
pod() {  # NAME IMAGE [SECRET]
  jq -n --arg name "$1" --arg image "$2" --arg secret "${3:-}" '{apiVersion: "v1", kind: "Pod",
    metadata: {name: $name, labels: {pod: $name}},
    spec: ({restartPolicy: "Never",
            containers: [{name: "main", image: $image, imagePullPolicy: "Always", command: ["echo", "pulled"]}]}
           + (if $secret == "" then {} else {imagePullSecrets: [{name: $secret}]} end))}' >"$WORK/$1.json"
  kc create "$WORK/$1.json" >/dev/null || fail "create pod $1"
}
watched_pod() {  # NAME IMAGE [SECRET]: the pod, with a watch on it into $WORK/NAME.watch from before its creation
  local rv
  rv=$(kc get pods | jq -r .metadata.resourceVersion)
  kc watch pods --rv "$rv" --timeout 60 -l "pod=$1" >"$WORK/$1.watch" &
  pids+=($!)
  pod "$@"
}
waiting_reasons() {  # NAME: the pod's waiting states seen by its watch, into $WORK/NAME.reasons, until ErrImagePull and ImagePullBackOff were
  for _ in $(seq 300); do
    jq -r '.object.status.containerStatuses[0].state.waiting // empty | "\(.reason)|\(.message)"' "$WORK/$1.watch" 2>/dev/null |
      awk '!seen[$0]++' >"$WORK/$1.reasons"
    grep -q '^ErrImagePull|' "$WORK/$1.reasons" && grep -q '^ImagePullBackOff|' "$WORK/$1.reasons" && return 0
    sleep 0.2
  done
  return 1
}

echo "== by tag, pulled (imagePullPolicy Always); imageID is the digest"
pod bytag "$repo:1"
kc wait pods bytag --for phase=Succeeded --timeout 60 >"$OUT" && pass || fail "bytag: $(cat "$ERR")"
[ "$(jq -r '.status.containerStatuses[0].imageID' "$OUT")" = "$digest" ] && pass ||
  fail "imageID $(jq -r '.status.containerStatuses[0].imageID' "$OUT") != $digest"
[ "$(kc logs bytag)" = pulled ] && pass || fail "bytag log"

echo "== by digest"
docker image rm "$repo:1" "$digest" >/dev/null 2>&1
pod bydigest "$digest"
kc wait pods bydigest --for phase=Succeeded --timeout 60 >"$OUT" && pass || fail "bydigest: $(cat "$ERR")"

echo "== a tag the registry lacks: ErrImagePull, then ImagePullBackOff"
watched_pod notag "$repo:no-such-tag"
waiting_reasons notag && pass || fail "pull failure states: $(cat "$WORK/notag.reasons")"
grep -q "^ErrImagePull|.*no-such-tag.*not found\|^ErrImagePull|.*no-such-tag.*manifest unknown" "$WORK/notag.reasons" && pass ||
  fail "ErrImagePull names the image and the registry's answer: $(cat "$WORK/notag.reasons")"
grep -q "^ImagePullBackOff|Back-off pulling image \"$repo:no-such-tag\"" "$WORK/notag.reasons" && pass ||
  fail "ImagePullBackOff message: $(cat "$WORK/notag.reasons")"

echo "== a registry with htpasswd: refused without imagePullSecrets, pulled with them"
watched_pod noauth "$private:1"
waiting_reasons noauth && pass || fail "no credentials: $(cat "$WORK/noauth.reasons")"
grep -qi "unauthorized\|no basic auth credentials\|authentication required" "$WORK/noauth.reasons" && pass ||
  fail "the registry's refusal: $(cat "$WORK/noauth.reasons")"
cat >"$WORK/secret.json" <<JSON
{"apiVersion":"v1","kind":"Secret","metadata":{"name":"regcred"},"type":"kubernetes.io/dockerconfigjson",
 "data":{".dockerconfigjson":"$(base64 -w0 <"$WORK/docker/config.json")"}}
JSON
kc create "$WORK/secret.json" >/dev/null && pass || fail "create the pull secret"
pod withauth "$private:1" regcred
kc wait pods withauth --for phase=Succeeded --timeout 60 >"$OUT" && pass || fail "with imagePullSecrets: $(cat "$ERR") $(kc get pods withauth | jq -c .status.containerStatuses)"
finish
