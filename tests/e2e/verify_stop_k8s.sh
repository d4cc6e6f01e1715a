#!/usr/bin/env bash
# A verification on --backend k8s that ends early leaves nothing of its
# verifier in the pod (#55): closing an exec's WebSocket does not end the
# process it started (kubernetes/kubernetes#89031, #73056). Against the fake
# cluster's real mode (pods are Docker containers), a test.sh that marks its
# start, waits for the test's word (a file it makes in the pod: no timing
# assumed), then writes its reward:
#   SIGINT to forge-verify mid-run: the verdict is cancelled and says the
#     verifier was stopped in the pod (forge-box verify-stop);
#   the stream's deadline (--stream-timeout): infra_error, stopped likewise;
#   forge-verify killed with SIGKILL (no stop exec): forge-box verify sees its
#     stream's stdin end and ends the verifier's tree itself;
#   the stream dropped mid-run by the API server (POST /_fake/drop_execs, the
#     process's stdin left open): infra_error naming the dropped stream, and
#     forge-verify's one stop exec ends it in the pod before forge-verify ends;
#   forge-verify stopped (SIGSTOP): its connection open, stdin open, no
#     heartbeat: forge-box verify ends the verifier's tree after --heartbeat
#     (30 s, forge-verify's own) and says why;
# and after each, no process of the verification is left in the pod's
# container (docker top) and no reward file appears once the word is given.
# Then a re-verification of a stopped pod runs to its reward; an earlier
# forge-box verify that the pod cannot end (another user's, in a pod without
# CAP_KILL: kill() is refused, as for a process stuck in the kernel) makes
# the next verification infra_error naming the pod (forge-box exit 75); and
# forge-box verify-stop leaves PID 1 and the pod's other processes alone.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
k8s_real_mode_or_skip verify_stop_k8s
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
BOX_IMAGE=$(bash "$FORGE_SRC/scripts/make-box-image.sh" "$FORGE_BIN/forge-box" forge-box-e2e) || exit 1
K8S_NS=forge-e2e
pids=()
trap k8s_e2e_cleanup EXIT
work=$WORK
start_k8s_fake real --node-cpu 64 --node-memory 256Gi || { fail "start"; finish; exit 1; }
K=(--k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS")

mkdir -p "$work/tests"
cat >"$work/tests/test.sh" <<'EOF2'
#!/bin/sh
touch /logs/verifier/started
while [ ! -e /tmp/forge-e2e-go ]; do sleep 0.2; done
echo 1 > /logs/verifier/reward.txt
EOF2
chmod +x "$work/tests/test.sh"
: >"$work/tasks.jsonl"
for name in sigint deadline killed dropped silent; do
  jq -nc --arg id "$name" --arg tests "$work/tests" \
    '{id: $id, instruction: "x", command: "true", environment: {image: "forge-busybox:latest"},
      verifier: {kind: "harbor", tests_dir: $tests, timeout_sec: 120}}' >>"$work/tasks.jsonl"
done
"$FORGE_BIN/forge-launch" --backend k8s "${K[@]}" --k8s-box-image "$BOX_IMAGE" --store "$work/forge.db" \
  --k8s-apply-network-policies --run-id stop55 --hold -j 5 --agent-timeout 60 --harness command "$work/tasks.jsonl" \
  >"$work/rollouts.jsonl" 2>"$work/launch.err" && pass || fail "forge-launch: $(tail -5 "$work/launch.err")"
# A pod without capabilities: its root cannot signal another user's process.
jq -nc --arg tests "$work/tests" \
  '{id: "busy", instruction: "x", command: "true", environment: {image: "forge-busybox:latest"},
    verifier: {kind: "harbor", tests_dir: $tests, timeout_sec: 60}}' >"$work/busy-task.jsonl"
"$FORGE_BIN/forge-launch" --backend k8s "${K[@]}" --k8s-box-image "$BOX_IMAGE" --store "$work/forge.db" \
  --k8s-apply-network-policies --run-id stop55-busy --hold --cap-drop-all --agent-timeout 60 --harness command \
  "$work/busy-task.jsonl" >>"$work/rollouts.jsonl" 2>"$work/launch-busy.err" && pass ||
  fail "forge-launch --cap-drop-all: $(tail -5 "$work/launch-busy.err")"

# The pod's main container (the fake names the pod in a label).
container_of() {
  local pod
  pod=$(jq -r --arg id "$1" 'select(.task_id == $id) | .sandbox.id | sub(".*/"; "")' "$work/rollouts.jsonl")
  docker ps -q --filter "label=io.kubernetes.pod.name=$pod" --filter "label=io.kubernetes.container.name=main"
}
# The verification's processes in that container: forge-box verify, test.sh.
# The pod is kept (forge-verify --keep): a container gone would hide them.
verifier_procs() {
  local top
  top=$(docker top "$1" -eo pid,args 2>&1) || { echo "the container is gone: $top"; return; }
  grep -E 'forge-box verify|test\.sh' <<<"$top"
}
# Starts forge-verify on one rollout in the background; waits for test.sh's start mark.
start_verify() {
  local name=$1
  shift
  jq -c --arg id "$name" 'select(.task_id == $id)' "$work/rollouts.jsonl" >"$work/$name.in"
  "$FORGE_BIN/forge-verify" run "${K[@]}" "$work/$name.in" --store "$work/forge.db" --keep "$@" \
    >"$work/$name.out" 2>"$work/$name.err" &
  vpid=$!
  pids+=("$vpid")
  c=$(container_of "$name")
  [ -n "$c" ] || { fail "$name: no container for its pod: $(head -c 600 "$work/$name.in")"; return 1; }
  for _ in $(seq 200); do
    docker exec "$c" test -e /logs/verifier/started 2>/dev/null && return 0
    sleep 0.1
  done
  fail "$name: test.sh did not start: $(cat "$work/$name.err")"
  return 1
}
# Within bound seconds no process of the verification is left; then, once
# test.sh is given its word, no reward file appears.
nothing_left() {
  local name=$1 bound=$2 left=""
  for _ in $(seq $((bound * 10 + 1))); do
    left=$(verifier_procs "$c")
    [ -z "$left" ] && break
    sleep 0.1
  done
  [ -z "$left" ] && pass || fail "$name: the verification's processes are left in the pod: $left"
  docker exec "$c" touch /tmp/forge-e2e-go
  sleep 2
  docker exec "$c" test -d /logs/verifier || fail "$name: cannot look into the pod's /logs/verifier"
  docker exec "$c" test -e /logs/verifier/reward.txt && fail "$name: a reward was written after the stop" || pass
}
verdict() { jq -r "$2" "$work/$1.out"; }

echo "== SIGINT to forge-verify while test.sh runs"
if start_verify sigint; then
  [ -n "$(verifier_procs "$c")" ] && pass ||
    fail "sigint: no verifier process seen while it runs: $(docker top "$c" -eo pid,args 2>&1) $(cat "$work/sigint.err")"
  kill -INT "$vpid"
  wait "$vpid"
  [ "$(verdict sigint .verdict.outcome)" = cancelled ] && pass || fail "sigint: verdict $(jq -c .verdict "$work/sigint.out")"
  verdict sigint .verdict.message | grep -q "stopped in the pod" && pass ||
    fail "sigint: the verdict does not say the verifier was stopped: $(verdict sigint .verdict.message)"
  nothing_left sigint 0
fi

echo "== the stream's deadline (--stream-timeout 15) while test.sh runs"
if start_verify deadline --stream-timeout 15; then
  wait "$vpid"
  [ "$(verdict deadline .verdict.outcome)" = infra_error ] && pass ||
    fail "deadline: verdict $(jq -c .verdict "$work/deadline.out")"
  verdict deadline .verdict.message | grep -q "past its deadline of 15 s; it was stopped in the pod" && pass ||
    fail "deadline: $(verdict deadline .verdict.message)"
  nothing_left deadline 0
fi

echo "== forge-verify killed (SIGKILL, no stop exec): forge-box ends the verifier itself"
if start_verify killed; then
  kill -KILL "$vpid"
  wait "$vpid" 2>/dev/null
  # The fake, like containerd, closes the exec's stdin when the connection
  # ends: forge-box sees it at once (its heartbeat bound, 30 s, is for a
  # runtime that does not).
  nothing_left killed 5
fi

echo "== the stream dropped mid-run, the process's stdin left open: forge-verify's one stop exec ends it"
if start_verify dropped; then
  n=$(curl -kfsS -X POST -d '{"command": "verify", "keep_stdin": true}' "$K8S_URL/_fake/drop_execs" | jq -r .dropped)
  [ "$n" = 1 ] && pass || fail "dropped: the fake dropped ${n:-no} streams"
  wait "$vpid"
  [ "$(verdict dropped .verdict.outcome)" = infra_error ] && pass ||
    fail "dropped: verdict $(jq -c .verdict "$work/dropped.out")"
  # Without the stop exec only forge-box's heartbeat bound (30 s) would end
  # it: still running when forge-verify has ended.
  verdict dropped .verdict.message |
    grep -q "run forge-box verify: exec in pod .*: connection ended without an exit status; it was stopped in the pod" &&
    pass || fail "dropped: $(verdict dropped .verdict.message)"
  nothing_left dropped 0
fi

echo "== forge-verify stopped (SIGSTOP): no heartbeat on an open stream; forge-box ends the verifier after 30 s"
if start_verify silent; then
  kill -STOP "$vpid"
  stopped_at=$SECONDS
  [ -n "$(verifier_procs "$c")" ] && pass || fail "silent: the verifier ended before its heartbeat bound"
  nothing_left silent 50
  echo "silent: ended after ~$((SECONDS - stopped_at)) s (bound 30 s)"
  [ $((SECONDS - stopped_at)) -ge 25 ] && pass || fail "silent: ended after $((SECONDS - stopped_at)) s, before its 30 s bound"
  kill -CONT "$vpid"
  wait "$vpid"
  # Resumed, forge-verify reads forge-box's answer: infra_error saying why, not test.sh's death blamed on the agent.
  [ "$(verdict silent .verdict.outcome)" = infra_error ] && verdict silent .verdict.message |
    grep -q "the client sent no heartbeat within its bound: the client is gone, the verifier's tree was ended" && pass ||
    fail "silent: forge-box did not say the heartbeat ended it: $(jq -c .verdict "$work/silent.out") $(tail -3 "$work/silent.err")"
fi

echo "== an earlier forge-box verify the pod cannot end: the next verification is infra_error naming the pod"
cb=$(container_of busy)
if [ -z "$cb" ]; then
  fail "busy: no container for its pod"
else
  grep -q '^CapEff:[[:space:]]*0*$' <(docker exec "$cb" cat /proc/1/status) && pass ||
    fail "busy: the pod's main process has capabilities: $(docker exec "$cb" grep Cap /proc/1/status)"
  docker exec -u 1234 -d "$cb" sh -c 'sleep 600 | /forge/bin/forge-box verify --tag survivor'
  for _ in $(seq 50); do docker top "$cb" -eo pid,args | grep -q "forge-box verify --tag survivor" && break; sleep 0.1; done
  jq -c 'select(.task_id == "busy")' "$work/rollouts.jsonl" >"$work/busy.in"
  pod=$(jq -r .sandbox.id "$work/busy.in")
  "$FORGE_BIN/forge-verify" run "${K[@]}" "$work/busy.in" --store "$work/forge.db" --keep >"$work/busy.out" 2>"$work/busy.err"
  [ "$(verdict busy .verdict.outcome)" = infra_error ] && pass || fail "busy: verdict $(jq -c .verdict "$work/busy.out")"
  verdict busy .verdict.message | grep -qF "an earlier verification in k8s sandbox $pod would not stop: forge-box: verify: 1 earlier forge-box verify still running here after SIGKILL" &&
    pass || fail "busy: $(verdict busy .verdict.message)"
  docker top "$cb" -eo pid,args | grep -q "forge-box verify --tag survivor" && pass || fail "busy: the survivor is gone, so nothing was busy"
  docker exec "$cb" test -e /logs/verifier/reward.txt && fail "busy: a reward was written" || pass
  docker exec -u 1234 "$cb" /forge/bin/forge-box verify-stop --wait 1 >/dev/null
fi

echo "== a re-verification of the stopped pod runs to its reward"
"$FORGE_BIN/forge-verify" run "${K[@]}" "$work/sigint.in" --store "$work/forge.db" --keep >"$work/again.out" 2>"$work/again.err"
[ "$(verdict again .verdict.outcome)" = passed ] && [ "$(verdict again .verdict.reward)" = 1 ] && pass ||
  fail "re-verification: $(jq -c .verdict "$work/again.out") $(tail -3 "$work/again.err")"

echo "== verify-stop ends forge-box verify only: PID 1 and the pod's other processes stay"
docker exec -d "$c" sleep 300
docker exec -d "$c" /forge/bin/forge-box sleep 302
sleep 0.5
out=$(docker exec "$c" /forge/bin/forge-box verify-stop --wait 1)
[ "$out" = "forge-box: verify-stop: stopped 0" ] && pass || fail "verify-stop: $out"
top=$(docker top "$c" -eo pid,args)
grep -q "sleep 300" <<<"$top" && grep -q "forge-box sleep 302" <<<"$top" && pass || fail "verify-stop ended another process: $top"
[ "$(docker inspect -f '{{.State.Running}}' "$c")" = true ] && pass || fail "verify-stop ended the pod's PID 1"
[ -n "${KEEP_WORK:-}" ] && cp -r "$work" "$KEEP_WORK"
finish
