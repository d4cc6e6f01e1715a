#!/usr/bin/env bash
# Image pulls that fail on the fake cluster's real mode (a test double whose
# node pulls from Debian's docker-registry on 127.0.0.1 and reports the
# failure as a kubelet over containerd does: ErrImagePull with "rpc error:
# code = NotFound desc = failed to pull and unpack image ...: not found",
# then ImagePullBackOff carrying it): an image the registry does not have
# (a tag, a digest, a repository) and an image name that does not parse
# (InvalidImageName) each cost one pod, no infra retry, and end the rollout
# in infra_error with an error naming the image and the kubelet's words; a
# registry that does not answer (stopped mid-run) stays a transient failure:
# retried, and the rollout passes once it is back.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
source "$FORGE_SRC/tests/support/registry.sh"
k8s_real_mode_or_skip launch_k8s_pull_missing
registry_or_skip launch_k8s_pull_missing
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
K8S_NS=forge-e2e
pids=()
port=$(free_port)
down_port=$(free_port)
repo="127.0.0.1:$port/pm-$$/img"
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  drop_registry_images "$port"
  drop_registry_images "$down_port"
  rm -rf "$WORK"
}
trap cleanup EXIT
start_registry open "$port" || { fail "registry: $(cat "$WORK/open.log")"; finish; exit 1; }
start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }
docker tag forge-busybox:latest "$repo:1" && docker push "$repo:1" >/dev/null 2>&1 && pass || fail "push $repo:1"

L() {  # RUN_ID IMAGE ARGS...: one task naming IMAGE, up to 4 infra retries
  printf '{"id":"t","instruction":"x","environment":{"image":"%s"}}\n' "$2" >"$WORK/$1.jsonl"
  "$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
    --k8s-apply-network-policies --store "$WORK/forge.db" --retry-backoff 0.2 --infra-retries 4 --run-id "$1" \
    --command 'echo ran' "${@:3}" "$WORK/$1.jsonl"
}
pod_creates() { curl -fsS "$K8S_URL/_fake/stats" | jq -r '.requests["create pods"] // 0'; }
one_try() {  # WHAT IMAGE WORDS: the last run's record and the pods it cost
  local creates=$1
  [ "$(jq -r '"\(.outcome) \(.transient) \(.infra_retries)"' "$OUT")" = "infra_error false 0" ] && pass ||
    fail "$2: retried or not infra_error: $(jq -c '{outcome, transient, infra_retries, error}' "$OUT")"
  [ "$(pod_creates)" = $((creates + 1)) ] && pass || fail "$2: $(( $(pod_creates) - creates )) pods made, want 1"
  jq -r .error "$OUT" | grep -Fq "$3" && pass || fail "$2: the error does not name $3: $(jq -r .error "$OUT")"
  jq -r .error "$OUT" | grep -Eq "$4" && pass || fail "$2: the error lacks the kubelet's words /$4/: $(jq -r .error "$OUT")"
}

echo "== a tag the registry does not have: one pod, not retried, the error names the image and containerd's words"
creates=$(pod_creates)
expect_exit 69 "missing tag" L pm-tag "$repo:no-such-tag"
one_try "$creates" "missing tag" "$repo:no-such-tag" \
  "(ErrImagePull|ImagePullBackOff): .*code = NotFound .*failed to resolve reference \"$repo:no-such-tag\": $repo:no-such-tag: not found \(image $repo:no-such-tag is not in its registry"

echo "== a digest the registry does not have, a repository it does not have, a name that does not parse"
digest="$repo@sha256:$(printf %064d 0)"
nosuch="127.0.0.1:$port/pm-$$/nosuch:1"
invalid="127.0.0.1:$port/pm-$$/NotLowerCase:1"
while IFS='|' read -r what run image words; do
  creates=$(pod_creates)
  expect_exit 69 "$what" L "$run" "$image"
  one_try "$creates" "$what" "$image" "$words"
done <<CASES
missing digest|pm-digest|$digest|code = NotFound .*$digest: not found
missing repository|pm-repo|$nosuch|code = NotFound .*$nosuch: not found
invalid name|pm-invalid|$invalid|InvalidImageName: .*invalid reference format \(image .* is not a valid image reference\)
CASES

echo "== the registry stopped mid-run: a transient failure, retried, and the rollout passes once it is back"
down="127.0.0.1:$down_port/pm-$$/img:1"
start_registry down "$down_port" || fail "registry: $(cat "$WORK/down.log")"
downpid=${pids[-1]}
docker tag forge-busybox:latest "$down" && docker push "$down" >/dev/null 2>&1 && pass || fail "push $down"
kill "$downpid"; wait "$downpid" 2>/dev/null
creates=$(pod_creates)
L pm-down "$down" >"$WORK/down.out" 2>"$WORK/down.err" </dev/null &
launch=$!
for _ in $(seq 300); do [ "$(pod_creates)" -ge $((creates + 2)) ] && break; sleep 0.1; done
[ "$(pod_creates)" -ge $((creates + 2)) ] && pass || fail "an unreachable registry was not retried: $(cat "$WORK/down.out" "$WORK/down.err")"
start_registry down "$down_port" || fail "restart the registry: $(cat "$WORK/down.log")"
wait "$launch" && pass || fail "the run: exit $?: $(cat "$WORK/down.err")"
[ "$(jq -r .outcome "$WORK/down.out")" = ok ] && [ "$(jq -r .infra_retries "$WORK/down.out")" -ge 1 ] && pass ||
  fail "the rollout once the registry was back: $(jq -c '{outcome, infra_retries, error}' "$WORK/down.out")"
grep -q "connection refused" "$WORK/down.err" && pass || fail "the retries do not say why: $(cat "$WORK/down.err")"
finish
