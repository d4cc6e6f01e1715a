#!/usr/bin/env bash
# forge-launch --backend k8s --registry on a Harbor task with an
# environment/Dockerfile, against the fake cluster's real mode (a test double
# whose pods are Docker containers that pull from a registry) and Debian's
# docker-registry on 127.0.0.1: the image is built, tagged by the hash of its
# inputs, pushed, and the pod runs the digest the registry reports; a second
# run (the engine's copies removed, so its pod pulls) builds and pushes
# nothing; a changed context file is a new tag; a harness profile that names
# {harnesses} gets the install directory as a layer (a new tag, and another
# when the harness changes); a registry with htpasswd is asked and pushed to
# with the docker config's credentials, and refuses without; a registry that refuses the
# push is an error naming the task and the step, and the run's other task
# still runs; a registry that is down is transient; without --registry such
# a task is refused before any pod.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
source "$FORGE_SRC/tests/support/registry.sh"
k8s_real_mode_or_skip launch_k8s_images
registry_or_skip launch_k8s_images
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
K8S_NS=forge-e2e
pids=()
runs=()
port=$(free_port); ro_port=$(free_port); dead_port=$(free_port)
registry="127.0.0.1:$port/k8s-images-$$"
repo="$registry/forge-task"
drop_local_images() {  # the engine's copies of what the runs built and pushed
  local ids
  ids=$(for r in "${runs[@]}"; do docker images -q --filter "label=forge.run=$r"; done | sort -u)
  docker image rm -f $(docker images --format '{{.Repository}}:{{.Tag}}' | grep "^127.0.0.1:\($port\|$ro_port\|${auth_port:-0}\)/") \
    $(docker images --digests --format '{{.Repository}}@{{.Digest}}' | grep "^127.0.0.1:\($port\|$ro_port\|${auth_port:-0}\)/") \
    $ids >/dev/null 2>&1
}
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  drop_local_images
  rm -rf "$WORK"
}
trap cleanup EXIT
start_registry open "$port" || { fail "registry: $(cat "$WORK/open.log")"; finish; exit 1; }
start_registry readonly "$ro_port" "  maintenance:
    readonly:
      enabled: true" || { fail "read-only registry: $(cat "$WORK/readonly.log")"; finish; exit 1; }
start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }

# A Harbor task whose environment/Dockerfile copies a context file in.
mkdir -p "$WORK/built/environment" "$WORK/built/tests"
printf 'FROM forge-busybox:latest\nCOPY data.txt /data.txt\nRUN echo built-%s > /etc/built-for\n' "$$" \
  >"$WORK/built/environment/Dockerfile"
echo first >"$WORK/built/environment/data.txt"
echo 'Say what you were built from.' >"$WORK/built/instruction.md"
: >"$WORK/built/task.toml"
printf '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n' >"$WORK/built/tests/test.sh"
echo '{"id":"plain","instruction":"x","command":"echo plain"}' >"$WORK/plain.jsonl"

L() {  # RUN_ID ARGS...: forge-launch on the fake cluster
  runs+=("$1")
  "$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
    --k8s-apply-network-policies --store "$WORK/forge.db" --image forge-busybox:latest --retry-backoff 0.1 --run-id "$1" \
    --command 'cat /etc/built-for /data.txt' "${@:2}"
}
manifest_puts() { grep -c '"PUT /v2/[^ ]*/manifests/[^ ]* HTTP/[0-9.]*" 201 ' "$WORK/open.log"; }
registry_digest() {  # TAG: Docker-Content-Digest as the registry answers HEAD for it
  curl -fsSI -H 'Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json' \
    "http://127.0.0.1:$port/v2/k8s-images-$$/forge-task/manifests/$1" | tr -d '\r' | awk -F': ' 'tolower($1) == "docker-content-digest" { print $2 }'
}

echo "== without --registry: refused before any pod, naming the task and the flag"
expect_exit 78 "no --registry" L img-noreg "$WORK/built"
grep -q "tasks built from environment/Dockerfile or a compose build: (built) need --registry on --backend k8s" "$ERR" && pass ||
  fail "the refusal names the task and --registry: $(cat "$ERR")"
[ "$(kc get pods | jq '[.items[] | select(.metadata.labels["forge.run"] == "img-noreg")] | length')" = 0 ] && pass ||
  fail "a refused run made pods"

echo "== built, pushed, and the pod runs the digest the registry reports"
expect_exit 0 "first run" L img-first --hold --registry "$registry" "$WORK/built"
jq -e '.outcome == "ok"' "$OUT" >/dev/null && pass || fail "outcome: $(cat "$OUT") $(cat "$ERR")"
[ "$(jq -r .logs.stdout "$OUT")" = "$(printf 'built-%s\nfirst' "$$")" ] && pass || fail "stdout: $(jq -c .logs "$OUT")"
tag1=$(jq -r '.image_pushed // empty' "$OUT"); image1=$(jq -r '.image // empty' "$OUT")
[ "$(jq -r '.image_built // empty' "$OUT")" = "$tag1" ] && [[ "$tag1" =~ ^$repo:[0-9a-f]{40}$ ]] && pass ||
  fail "built and pushed as $repo:<input hash>: $(jq -c '{image, image_built, image_pushed}' "$OUT")"
digest1=$(registry_digest "${tag1##*:}")
[ -n "$digest1" ] && [ "$image1" = "$repo@$digest1" ] && pass || fail "the record's image $image1 is not $repo@$digest1"
pod=$(kc get pods | jq -r '.items[] | select(.metadata.labels["forge.run"] == "img-first") | .metadata.name')
kc get pods "$pod" >"$WORK/pod.json" && pass || fail "the held pod: $(cat "$ERR")"
[ "$(jq -r '.spec.containers[0].image' "$WORK/pod.json")" = "$repo@$digest1" ] && pass ||
  fail "the pod's image: $(jq -c '.spec.containers[0].image' "$WORK/pod.json"), want $repo@$digest1"
[ "$(jq -r '.status.containerStatuses[0].imageID' "$WORK/pod.json")" = "$repo@$digest1" ] && pass ||
  fail "the pod's imageID: $(jq -c '.status.containerStatuses[0].imageID' "$WORK/pod.json")"
[ "$(manifest_puts)" = 1 ] && pass || fail "manifest PUTs after the first run: $(manifest_puts)"
"$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  gc --run-id img-first >/dev/null 2>&1

echo "== a second run, the engine's copies gone: nothing built or pushed, the pod pulls the digest"
drop_local_images
docker image inspect "$repo@$digest1" >/dev/null 2>&1 && fail "the engine still has $repo@$digest1" || pass
expect_exit 0 "second run" L img-second -n 2 -j 2 --registry "$registry" "$WORK/built"
[ "$(jq -r .outcome "$OUT" | sort -u)" = ok ] && pass || fail "outcomes: $(cat "$OUT") $(cat "$ERR")"
[ "$(jq -r .image "$OUT" | sort -u)" = "$repo@$digest1" ] && pass || fail "images: $(jq -r .image "$OUT")"
[ "$(jq -s 'map(select(.image_built or .image_pushed)) | length' "$OUT")" = 0 ] && pass ||
  fail "the second run built or pushed: $(jq -c '{image_built, image_pushed}' "$OUT")"
[ "$(manifest_puts)" = 1 ] && pass || fail "manifest PUTs after the second run: $(manifest_puts)"
[ -z "$(docker images -q --filter label=forge.run=img-second)" ] && pass || fail "the second run built an image"
[ "$(jq -sc 'map(.logs.stdout) | unique' "$OUT")" = "[\"built-$$\\nfirst\\n\"]" ] && pass ||
  fail "stdout: $(jq -c .logs "$OUT")"

echo "== a changed context file: a new tag, built and pushed"
echo second >"$WORK/built/environment/data.txt"
expect_exit 0 "changed context" L img-changed --registry "$registry" "$WORK/built"
tag2=$(jq -r '.image_pushed // empty' "$OUT")
[[ "$tag2" =~ ^$repo:[0-9a-f]{40}$ ]] && [ "$tag2" != "$tag1" ] && pass || fail "new tag $tag2 (first $tag1)"
[ "$(jq -r .image "$OUT")" = "$repo@$(registry_digest "${tag2##*:}")" ] && pass || fail "image: $(jq -r .image "$OUT")"
[ "$(jq -r .logs.stdout "$OUT")" = "$(printf 'built-%s\nsecond' "$$")" ] && pass || fail "stdout: $(jq -c .logs "$OUT")"
[ "$(manifest_puts)" = 2 ] && pass || fail "manifest PUTs after the changed run: $(manifest_puts)"

echo "== a harness profile that names {harnesses}: the install directory is a layer on top, at --harness-mount"
mkdir -p "$WORK/profiles" "$WORK/installed/fake-harness"
echo "fake-harness 1.0" >"$WORK/installed/fake-harness/VERSION"
printf '{"name":"layered","command":["/bin/sh","-c","cat {harnesses}/fake-harness/VERSION /data.txt"]}\n' \
  >"$WORK/profiles/layered.json"
pushes_before=$(manifest_puts)
expect_exit 0 "harness layer" L img-layer --registry "$registry" --harness-dir "$WORK/profiles" --harness layered \
  --harness-install-dir "$WORK/installed" "$WORK/built"
[ "$(jq -r .logs.stdout "$OUT")" = "$(printf 'fake-harness 1.0\nsecond')" ] && pass ||
  fail "the pod runs the harness from the layer: $(jq -c '{logs, error}' "$OUT")"
tag3=$(jq -r '.image_pushed // empty' "$OUT")
[[ "$tag3" =~ ^$repo:[0-9a-f]{40}$ ]] && [ "$tag3" != "$tag2" ] && pass || fail "the layer is a new tag: $tag3 (bare $tag2)"
[ "$(manifest_puts)" = $((pushes_before + 1)) ] && pass || fail "manifest PUTs: $(manifest_puts), before $pushes_before"
echo "fake-harness 1.1" >"$WORK/installed/fake-harness/VERSION"
expect_exit 0 "harness upgraded" L img-layer2 --registry "$registry" --harness-dir "$WORK/profiles" --harness layered \
  --harness-install-dir "$WORK/installed" "$WORK/built"
[ "$(jq -r .logs.stdout "$OUT")" = "$(printf 'fake-harness 1.1\nsecond')" ] && pass || fail "upgraded: $(jq -c .logs "$OUT")"
tag4=$(jq -r '.image_pushed // empty' "$OUT")
[ -n "$tag4" ] && [ "$tag4" != "$tag3" ] && pass || fail "an upgraded harness is a new tag: $tag4 (was $tag3)"

echo "== a registry with htpasswd: the docker config's credentials, for the HEAD (Basic) and the push"
auth_port=$(free_port)
python3 -W ignore -c 'import crypt; print("robot:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH)))' >"$WORK/htpasswd"
start_registry private "$auth_port" "auth:
  htpasswd:
    realm: forge-e2e
    path: $WORK/htpasswd" || fail "registry with htpasswd: $(cat "$WORK/private.log")"
mkdir -p "$WORK/login" "$WORK/anon"
echo '{}' >"$WORK/anon/config.json"
printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$auth_port" "$(printf robot:s3cret | base64)" >"$WORK/login/config.json"
expect_exit 69 "no credentials" L img-anon --registry "127.0.0.1:$auth_port/p" --docker-config "$WORK/anon/config.json" "$WORK/built"
jq -r .error "$OUT" | grep -q "^task built: image for the cluster: registry 127.0.0.1:$auth_port: HEAD /v2/p/forge-task/manifests/[0-9a-f]*: HTTP 401 (no credentials for it in the docker config)" &&
  pass || fail "without credentials: $(jq -r .error "$OUT")"
[ "$(jq -r .transient "$OUT")" = false ] && pass || fail "refused credentials are retried: $(jq -c . "$OUT")"
expect_exit 0 "with credentials" L img-auth --registry "127.0.0.1:$auth_port/p" --docker-config "$WORK/login/config.json" "$WORK/built"
[ -n "$(jq -r '.image_pushed // empty' "$OUT")" ] && [[ "$(jq -r .image "$OUT")" == "127.0.0.1:$auth_port/p/forge-task@sha256:"* ]] &&
  pass || fail "pushed with credentials: $(jq -c '{image, image_pushed, error}' "$OUT")"
expect_exit 0 "with credentials, again" L img-auth2 --registry "127.0.0.1:$auth_port/p" --docker-config "$WORK/login/config.json" "$WORK/built"
[ "$(jq -r '.image_pushed // "none"' "$OUT")" = none ] && [ "$(jq -r '.outcome' "$OUT")" = ok ] && pass ||
  fail "the HEAD with credentials found it: $(jq -c '{image, image_pushed, error}' "$OUT")"

echo "== a registry that refuses the push: the task and the step named, the run's other task runs"
expect_exit 69 "refused push" L img-refused --infra-retries 2 --registry "127.0.0.1:$ro_port/k8s-images-$$" \
  "$WORK/built" "$WORK/plain.jsonl"
[ "$(jq -r 'select(.task_id == "plain") | .outcome' "$OUT")" = ok ] && pass || fail "the other task: $(cat "$OUT")"
jq -r 'select(.task_id == "built") | .error' "$OUT" >"$WORK/refused.err"
grep -q "^task built: image for the cluster: the registry refused push 127.0.0.1:$ro_port/k8s-images-$$/forge-task:[0-9a-f]*: ." \
  "$WORK/refused.err" && pass || fail "the error names the task, the step and the registry's answer: $(cat "$WORK/refused.err")"
[ "$(jq -r 'select(.task_id == "built") | "\(.outcome) \(.transient) \(.infra_retries)"' "$OUT")" = "infra_error false 0" ] &&
  pass || fail "a refusal is not retried: $(jq -c 'select(.task_id == "built")' "$OUT")"
grep -q "built attempt 0: task built: image for the cluster: the registry refused" "$ERR" && pass ||
  fail "stderr names it: $(cat "$ERR")"

echo "== a registry that does not answer: transient, retried"
expect_exit 69 "registry down" L img-down --infra-retries 1 --registry "127.0.0.1:$dead_port/x" "$WORK/built"
[ "$(jq -r '"\(.transient) \(.infra_retries)"' "$OUT")" = "true 1" ] && pass || fail "down: $(cat "$OUT")"
jq -r .error "$OUT" | grep -q "^task built: image for the cluster: registry 127.0.0.1:$dead_port: HEAD /v2/x/forge-task/manifests/[0-9a-f]*: unreachable" &&
  pass || fail "the error says the registry is unreachable: $(jq -r .error "$OUT")"
finish
