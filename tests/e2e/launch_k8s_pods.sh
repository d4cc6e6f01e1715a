#!/usr/bin/env bash
# Pod-native rollouts (forge-launch --k8s-box-image) against the fake
# cluster's real mode (a test double whose pods are Docker containers): an
# init container copies forge-box from its image into an emptyDir and the
# main container's command is forge-box's supervisor, so the harness is the
# pod's own process. Shown: the harness's exit status, output, environment
# and files arrive; its secret and command are not in the pod's spec; one
# exec per rollout (the setup, before the harness starts; none while it
# runs); the end comes from the run's one watch (the terminated state and its
# termination message); the API requests a rollout costs, by kind; output
# larger than a termination message read from the log; a deadline; a held
# pod that forge-verify passes with a verifier that is true, its sweep run by
# forge-box; a pod evicted mid-run is an infrastructure error, not an attempt.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
k8s_real_mode_or_skip launch_k8s_pods
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
BOX_IMAGE=$(bash "$FORGE_SRC/scripts/make-box-image.sh" "$FORGE_BIN/forge-box" forge-box-e2e) || exit 1
K8S_NS=forge-e2e
pids=()
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }

# The proxy's Service (selector-less, Endpoints on the node), so rollouts get a secret.
python3 -c 'import socket; s = socket.socket(); s.bind(("'"$K8S_NODE_IP"'", 0)); print(s.getsockname()[1])' >"$WORK/port"
cat >"$WORK/svc.json" <<JSON
[{"apiVersion":"v1","kind":"Service","metadata":{"name":"forge-proxy"},"spec":{"ports":[{"port":8080,"targetPort":$(cat "$WORK/port")}]}},
 {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"forge-proxy"},
  "subsets":[{"addresses":[{"ip":"$K8S_NODE_IP","nodeName":"fake-node-1"}],"ports":[{"port":$(cat "$WORK/port")}]}]}]
JSON
kc create "$WORK/svc.json" >/dev/null && pass || fail "create the proxy's Service: $(cat "$ERR")"
proxy="http://forge-proxy.$K8S_NS.svc.cluster.local:8080"

L() {
  "$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
    --store "$WORK/forge.db" --image forge-busybox:latest --retry-backoff 0.1 --proxy "$proxy" \
    --k8s-box-image "$BOX_IMAGE" "$@"
}
stats() { curl -kfsS "$K8S_URL/_fake/stats"; }
# Requests by kind since a stats snapshot: create, exec, log, delete, list, watch.
by_kind() {
  stats | jq -c --argjson t "$1" '[.log[] | select(.[0] >= $t) | .[2]] | group_by(.) | map({(.[0]): length}) | add // {}'
}

echo "== three rollouts, one at a time: exit status, output, env, files; the harness is PID 1's child"
cat >"$WORK/tasks.jsonl" <<'EOF'
{"id":"ok","instruction":"say ok"}
{"id":"three","instruction":"exit three"}
{"id":"big","instruction":"a lot of output"}
EOF
harness='
echo "pid1=$(cat /proc/1/comm) key=${#FORGE_API_KEY} task=$FORGE_TASK_ID"
echo "instruction: $(cat "$FORGE_INSTRUCTION_FILE")"
echo "mark on stderr is taken" >&2
sleep 2
case $FORGE_TASK_ID in three) exit 3 ;; big) head -c 20000 /dev/zero | tr "\0" x; echo ;; esac
true'
t0=$(python3 -c 'import time; print(time.time())')
L --run-id pods-a -j 1 --command "$harness" "$WORK/tasks.jsonl" >"$WORK/a.out" 2>"$ERR" && pass || fail "run: $(cat "$ERR")"
rec() { jq -c --arg id "$1" 'select(.task_id == $id)' "$WORK/a.out"; }
[ "$(rec ok | jq -r .exit_code)" = 0 ] && [ "$(rec three | jq -r .exit_code)" = 3 ] && pass ||
  fail "exit codes: $(jq -c '[.task_id, .exit_code, .outcome, .error]' "$WORK/a.out")"
rec ok | jq -r .logs.stdout | grep -qx "pid1=forge-box key=54 task=ok" && pass ||
  fail "the harness under forge-box with its secret and task id: $(rec ok | jq -c .logs)"
rec ok | jq -r .logs.stdout | grep -qx "instruction: say ok" && pass || fail "instruction file: $(rec ok | jq -c .logs)"
rec ok | jq -e '.baseline.t0_ns > 0' >/dev/null && pass || fail "no baseline from forge-box mark: $(rec ok | jq -c .)"
rec ok | jq -r .logs.stderr | grep -q "forge-mark" && fail "the mark line left in stderr" || pass
[ "$(rec big | jq -r '.logs.stdout | length')" -gt 20000 ] && pass || fail "big output: $(rec big | jq -c '.logs.stdout | length')"
kinds=$(by_kind "$t0")
echo "requests by kind for 3 rollouts: $kinds"
[ "$(jq -r .create <<<"$kinds")" = 3 ] && pass || fail "creates: $kinds"
[ "$(jq -r .exec <<<"$kinds")" = 3 ] && pass || fail "one exec per rollout: $kinds"
[ "$(jq -r .delete <<<"$kinds")" = 3 ] && pass || fail "deletes: $kinds"
[ "$(jq -r '.log // 0' <<<"$kinds")" = 1 ] && pass || fail "one log read (the output past 4096 bytes): $kinds"
[ "$(jq -r .watch <<<"$kinds")" = 1 ] && [ "$(jq -r .list <<<"$kinds")" = 1 ] && pass || fail "one list and one watch: $kinds"
# No exec while a harness runs: each rollout's one exec starts its harness,
# and at -j 1 the next exec comes only after that harness's 2 s.
stats | jq -e --argjson t "$t0" '[.log[] | select(.[0] >= $t and .[2] == "exec") | .[0]] | sort
  | [range(1; length) as $i | .[$i] - .[$i - 1]] | all(. >= 2)' >/dev/null && pass ||
  fail "execs closer than a harness run: $(stats | jq -c --argjson t "$t0" '[.log[] | select(.[0] >= $t)]')"

echo "== the pod's spec: forge-box's init container and emptyDirs, no secret, no command"
cat >"$WORK/one.jsonl" <<'EOF'
{"id":"spec","instruction":"x"}
EOF
L --run-id pods-b --hold --command 'echo held-ran' "$WORK/one.jsonl" >"$WORK/b.out" 2>"$ERR" && pass || fail "held run: $(cat "$ERR")"
pod=$(jq -r '.sandbox.id' "$WORK/b.out" | cut -d/ -f2)
kc get pods "$pod" >"$WORK/pod.json" && pass || fail "get the held pod"
[ "$(jq -r '.spec.initContainers[0].image' "$WORK/pod.json")" = "$BOX_IMAGE" ] && pass || fail "init: $(jq -c .spec.initContainers "$WORK/pod.json")"
[ "$(jq -r '.spec.containers[0].command[1]' "$WORK/pod.json")" = supervise ] && pass || fail "command: $(jq -c .spec.containers[0].command "$WORK/pod.json")"
[ "$(jq -r '[.spec.volumes[] | select(.emptyDir)] | length' "$WORK/pod.json")" = 2 ] && pass || fail "volumes: $(jq -c .spec.volumes "$WORK/pod.json")"
grep -q "FORGE_API_KEY\|held-ran" "$WORK/pod.json" && fail "the secret or the command is in the pod's spec" || pass
[ "$(jq -r '.status.containerStatuses[0].ready' "$WORK/pod.json")" = true ] && pass || fail "held pod not ready: $(jq -c .status "$WORK/pod.json")"
[ "$(jq -r .exit_code "$WORK/b.out")" = 0 ] && [ "$(jq -r .logs.stdout "$WORK/b.out")" = "held-ran" ] && pass ||
  fail "held record: $(jq -c '[.exit_code, .logs]' "$WORK/b.out")"

echo "== forge-verify on the held pod: a verifier that is true passes; the sweep runs forge-box"
echo '{"id":"spec","instruction":"x","verifier":{"kind":"command","command":"true"}}' >"$WORK/one.jsonl"
L --run-id pods-c --hold --command 'echo held' "$WORK/one.jsonl" >"$WORK/c.out" 2>"$ERR" && pass || fail "held run: $(cat "$ERR")"
"$FORGE_BIN/forge-verify" --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  --store "$WORK/forge.db" "$WORK/c.out" >"$OUT" 2>"$ERR" && pass || fail "forge-verify: $(cat "$ERR" "$OUT")"
[ "$(jq -r '.verdict.outcome' "$OUT")" = passed ] && pass || fail "verdict: $(jq -c .verdict "$OUT")"

echo "== a deadline: the supervisor kills the harness; timed out, not an infrastructure error"
echo '{"id":"slow","instruction":"x"}' >"$WORK/slow.jsonl"
L --run-id pods-d --agent-timeout 2s --command 'sleep 60' "$WORK/slow.jsonl" >"$OUT" 2>"$ERR"
[ "$(jq -r .outcome "$OUT")" = agent_timeout ] && [ "$(jq -r .infra_retries "$OUT")" = 0 ] && pass || fail "deadline: $(jq -c . "$OUT")"

echo "== a pod evicted while its harness runs: an infrastructure error, retried, not an attempt"
echo '{"id":"evicted","instruction":"x"}' >"$WORK/ev.jsonl"
L --run-id pods-e --infra-retries 2 --command 'sleep 4; echo survived' "$WORK/ev.jsonl" >"$OUT" 2>"$ERR" &
launcher=$!
for _ in $(seq 100); do
  [ "$(kc get pods | jq '[.items[] | select(.metadata.labels["forge.run"] == "pods-e" and .status.phase == "Running")] | length')" -ge 1 ] && break
  sleep 0.2
done
sleep 1
curl -kfsS -X POST -d "{\"namespace\":\"$K8S_NS\",\"labelSelector\":\"forge.run=pods-e\",\"mode\":\"fail\"}" "$K8S_URL/_fake/evict" >/dev/null &&
  pass || fail "evict"
wait "$launcher"
[ "$(jq -r .exit_code "$OUT")" = 0 ] && [ "$(jq -r .infra_retries "$OUT")" -ge 1 ] && [ "$(jq -r .attempt "$OUT")" = 0 ] && pass ||
  fail "eviction: $(jq -c '[.outcome, .exit_code, .infra_retries, .attempt, .error]' "$OUT") $(cat "$ERR")"
finish
