#!/usr/bin/env bash
# Compose services with build: on --backend k8s, against the fake cluster's
# real mode (a test double whose node pulls registry images itself, with the
# pod's imagePullSecrets) and Debian's docker-registry on 127.0.0.1 with
# htpasswd: the corpus's simulated-user task (Harbor's cookbook recipe: a
# main container and a user-server sidecar built from ./user-server, which
# main waits on healthy) runs with the oracle harness; its sidecar's context
# is built, tagged by the hash of its inputs, pushed like the task's image,
# and the sidecar runs the digest the registry reports, pulled with the run's
# pull Secret; forge-verify passes it; a second run builds and pushes
# nothing; a sidecar context that does not build is an error naming the task,
# the service and the step; without --registry the task is refused before
# any pod.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
source "$FORGE_SRC/tests/support/registry.sh"
k8s_real_mode_or_skip launch_k8s_compose_build
registry_or_skip launch_k8s_compose_build
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
K8S_NS=forge-e2e
pids=()
runs=(cb-first cb-again cb-broken)
port=$(free_port)
registry="127.0.0.1:$port/cb-$$"
repo="$registry/forge-task"
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  drop_registry_images "$port" "${runs[@]}"
  rm -rf "$WORK"
}
trap cleanup EXIT
start_private_registry private "$port" || { fail "registry: $(cat "$WORK/private.log")"; finish; exit 1; }
start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }
cp -r "$FORGE_SRC/tests/data/harbor/simulated-user" "$WORK/task"
K=(--k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS")
L() {  # RUN_ID ARGS...
  "$FORGE_BIN/forge-launch" --backend k8s "${K[@]}" --k8s-apply-network-policies --store "$WORK/forge.db" \
    --retry-backoff 0.1 --run-id "$1" --harness oracle --docker-config "$WORK/login/config.json" "${@:2}"
}
manifest_puts() { grep -c '"PUT /v2/[^ ]*/manifests/[^ ]* HTTP/[0-9.]*" 201 ' "$WORK/private.log"; }

echo "== without --registry: refused before any pod, naming the task"
expect_exit 78 "no --registry" L cb-noreg "$WORK/task"
grep -q "compose build: (task) need --registry on --backend k8s" "$ERR" && pass || fail "the refusal: $(cat "$ERR")"

echo "== the sidecar's build: built, pushed, run from its digest; the oracle's answer passes forge-verify"
expect_exit 0 "first run" L cb-first --hold --registry "$registry" "$WORK/task"
jq -e '.outcome == "ok"' "$OUT" >/dev/null && pass || fail "outcome: $(cat "$OUT") $(tail -5 "$ERR")"
sidecar=$(jq -r '.service_images["user-server"].image // empty' "$OUT")
pushed=$(jq -r '.service_images["user-server"].pushed // empty' "$OUT")
[[ "$sidecar" =~ ^$repo@sha256:[0-9a-f]{64}$ ]] && [[ "$pushed" =~ ^$repo:[0-9a-f]{40}$ ]] && pass ||
  fail "the sidecar's image: $(jq -c .service_images "$OUT")"
[ "$(curl -fsSI -u robot:s3cret -H 'Accept: application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json' \
  "http://127.0.0.1:$port/v2/cb-$$/forge-task/manifests/${pushed##*:}" | tr -d '\r' | awk -F': ' 'tolower($1) == "docker-content-digest" { print $2 }')" = "${sidecar#*@}" ] &&
  pass || fail "the registry's digest for $pushed is not ${sidecar#*@}"
[ "$(jq -r '.image_pushed // empty' "$OUT")" != "" ] && [ "$(jq -r .image_pushed "$OUT")" != "$pushed" ] && pass ||
  fail "main's image is its own tag: $(jq -c '{image, image_pushed}' "$OUT")"
pod=$(kc get pods -l forge.run=cb-first | jq -r '.items[0].metadata.name')
kc get pods "$pod" >"$WORK/pod.json"
[ "$(jq -r '.spec.initContainers[] | select(.name == "user-server") | .image' "$WORK/pod.json")" = "$sidecar" ] && pass ||
  fail "the pod's user-server: $(jq -c '.spec.initContainers' "$WORK/pod.json")"
[ "$(jq -r '.status.initContainerStatuses[] | select(.name == "user-server") | .imageID' "$WORK/pod.json")" = "$sidecar" ] && pass ||
  fail "the node pulled the sidecar: $(jq -c '.status.initContainerStatuses' "$WORK/pod.json")"
[ "$(jq -r '.spec.imagePullSecrets[0].name' "$WORK/pod.json")" = "forge-pull-cb-first-$(printf cb-first | sha256sum | cut -c1-10)" ] &&
  pass || fail "the pod's pull Secret: $(jq -c .spec.imagePullSecrets "$WORK/pod.json")"
[ "$(manifest_puts)" = 2 ] && pass || fail "manifest PUTs (main and the sidecar): $(manifest_puts)"
"$FORGE_BIN/forge-verify" run "${K[@]}" --store "$WORK/forge.db" --tasks "$WORK/task" <"$OUT" >"$WORK/verdict" 2>"$WORK/verify.err"
[ "$(jq -r '[.verdict.outcome, .verdict.reward] | join(" ")' "$WORK/verdict")" = "passed 1" ] && pass ||
  fail "forge-verify: $(cat "$WORK/verdict") $(tail -3 "$WORK/verify.err")"
"$FORGE_BIN/forge-launch" --backend k8s "${K[@]}" gc --run-id cb-first >/dev/null 2>&1

echo "== a second run: nothing built or pushed, the same digests"
expect_exit 0 "second run" L cb-again --registry "$registry" "$WORK/task"
[ "$(jq -r .outcome "$OUT")" = ok ] && [ "$(jq -r '.service_images["user-server"].image' "$OUT")" = "$sidecar" ] && pass ||
  fail "again: $(cat "$OUT") $(tail -3 "$ERR")"
[ "$(jq -r '(.service_images["user-server"].pushed // "none") + " " + (.image_pushed // "none")' "$OUT")" = "none none" ] && pass ||
  fail "the second run pushed: $(jq -c '{service_images, image_pushed}' "$OUT")"
[ "$(manifest_puts)" = 2 ] && pass || fail "manifest PUTs after the second run: $(manifest_puts)"

echo "== a sidecar context that does not build: the task, the service and the step named"
echo 'RUN exit 7' >>"$WORK/task/environment/user-server/Dockerfile"
expect_exit 69 "broken sidecar" L cb-broken --registry "$registry" "$WORK/task"
jq -r .error "$OUT" | grep -q "^task task: service user-server: image for the cluster: .*build" && pass ||
  fail "the error: $(jq -r .error "$OUT")"
[ "$(kc get pods -l forge.run=cb-broken | jq '.items | length')" = 0 ] && pass || fail "a pod without its sidecar's image was made"
finish
