#!/usr/bin/env bash
# A real harness as a pod-native rollout on --backend k8s, then verified
# there by real test.sh scripts, against the fake cluster's real mode (a test
# double whose pods are Docker containers). The unmodified Codex CLI (npm
# @openai/codex, its static musl binary, in the task image's harness layer at
# /opt/forge/harnesses as --registry's layer puts it) is the pod's own
# process under forge-box supervise; it reaches forge-proxy by the proxy
# Service's cluster DNS name (no hostNetwork: a selector-less Service whose
# Endpoints name the proxy's listener on the node), and forge-proxy
# translates to chat completions for the scripted fake model upstream.
# Shown: the harness wrote its file with its own tool; every call it made is
# recorded by forge-proxy under the rollout, with token ids; the launch made
# one exec a rollout, before the harness's first call (none while it ran);
# forge-verify --backend k8s passes the rollout whose test.sh finds the file
# and fails the one whose test.sh wants other content, each verification one
# exec (forge-box verify) between the pod's GET and its DELETE.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
k8s_real_mode_or_skip launch_k8s_harness
HARNESSES=${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}
CODEX=codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
# A missing harness is a failed test, not a pass: scripts/install-harnesses.sh installs it.
[ -x "$HARNESSES/$CODEX" ] || { echo "FAIL: $HARNESSES/$CODEX is missing (run scripts/install-harnesses.sh)" >&2; exit 1; }
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
BOX_IMAGE=$(bash "$FORGE_SRC/scripts/make-box-image.sh" "$FORGE_BIN/forge-box" forge-box-e2e) || exit 1
K8S_NS=forge-e2e
pids=()
trap k8s_e2e_cleanup EXIT

# The task image: busybox plus the harness layer, tagged by the binary's hash.
sum=$(sha256sum "$HARNESSES/$CODEX" | cut -c1-16)
IMAGE=forge-e2e-codex:$sum
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  mkdir -p "$WORK/image/h/$(dirname "$CODEX")"
  ln "$HARNESSES/$CODEX" "$WORK/image/h/$CODEX" 2>/dev/null || cp "$HARNESSES/$CODEX" "$WORK/image/h/$CODEX"
  printf 'FROM forge-busybox:latest\nCOPY h/ /opt/forge/harnesses/\n' >"$WORK/image/Dockerfile"
  docker build -q -t "$IMAGE" "$WORK/image" >/dev/null 2>"$ERR" || { fail "build $IMAGE: $(cat "$ERR")"; finish; exit 1; }
  rm -rf "$WORK/image"
fi

start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }

# The scripted model (on loopback) behind forge-proxy (on the node's address, where pods reach it).
# The model's first turn has Codex's own exec_command tool write the file.
echo '{"steps": [{"tool_call": {"name": "exec_command", "arguments": {"cmd": "printf '"'"'forge\\n'"'"' > hello.txt"}}},
                 {"text": "Created hello.txt."}]}' >"$WORK/scenario.json"
python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --port-file "$WORK/up.port" --log "$WORK/upstream.log" \
  --scenario "$WORK/scenario.json" 2>"$WORK/upstream.err" &
pids+=($!)
for _ in $(seq 100); do [ -s "$WORK/up.port" ] && break; sleep 0.05; done
pport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("'"$K8S_NODE_IP"'", 0)); print(s.getsockname()[1])')
"$FORGE_BIN/forge-proxy" --store "$WORK/forge.db" --listen "$K8S_NODE_IP" --port "$pport" --health-interval 0 \
  --upstream "http://127.0.0.1:$(cat "$WORK/up.port")" 2>"$WORK/proxy.err" &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://$K8S_NODE_IP:$pport/healthz" && break; sleep 0.05; done
cat >"$WORK/svc.json" <<JSON
[{"apiVersion":"v1","kind":"Service","metadata":{"name":"forge-proxy"},"spec":{"ports":[{"port":8080,"targetPort":$pport}]}},
 {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"forge-proxy"},
  "subsets":[{"addresses":[{"ip":"$K8S_NODE_IP","nodeName":"fake-node-1"}],"ports":[{"port":$pport}]}]}]
JSON
kc create "$WORK/svc.json" >/dev/null && pass || fail "create the proxy's Service: $(cat "$ERR")"

# Two tasks, the same instruction; test.sh of one wants what the harness
# writes, the other's something else.
for t in pass fail; do
  mkdir -p "$WORK/$t/tests"
  want=forge; [ "$t" = fail ] && want=forged
  cat >"$WORK/$t/tests/test.sh" <<EOF
#!/bin/sh
if [ "\$(cat /work/hello.txt 2>/dev/null)" = "$want" ]; then echo 1 > /logs/verifier/reward.txt; else
  echo "hello.txt holds: \$(cat /work/hello.txt 2>&1)"; echo 0 > /logs/verifier/reward.txt; fi
EOF
  jq -nc --arg id "hello-$t" --arg dir "$WORK/$t/tests" '{id: $id, agent: {timeout_sec: 240},
    instruction: "Create the file hello.txt in the current directory containing the single line: forge",
    verifier: {kind: "harbor", tests_dir: $dir, timeout_sec: 60}}'
done >"$WORK/tasks.jsonl"

stats() { curl -kfsS "$K8S_URL/_fake/stats"; }
by_kind() {
  stats | jq -c --argjson t "$1" --argjson u "$2" '[.log[] | select(.[0] >= $t and .[0] <= $u) | .[2]] | group_by(.) | map({(.[0]): length}) | add // {}'
}
now() { python3 -c 'import time; print(time.time())'; }

echo "== forge-launch --backend k8s --harness codex: two held pod-native rollouts"
t0=$(now)
"$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  --k8s-box-image "$BOX_IMAGE" --image "$IMAGE" --store "$WORK/forge.db" --run-id k8s-codex -j 1 --hold \
  --harness codex --harness-install-dir "$HARNESSES" --model gpt-5 --memory 2g \
  --proxy "http://forge-proxy.$K8S_NS.svc.cluster.local:8080" "$WORK/tasks.jsonl" >"$WORK/rollouts.jsonl" 2>"$ERR" &&
  pass || fail "forge-launch: $(tail -5 "$ERR")"
t1=$(now)
[ "$(jq -r .outcome "$WORK/rollouts.jsonl" | sort | uniq -c | awk '{print $1, $2}')" = "2 ok" ] && pass ||
  fail "outcomes: $(jq -c '{task_id, outcome, exit_code, error, out: (.logs.stdout // "" | .[-1500:]), err: (.logs.stderr // "" | .[-1500:])}' "$WORK/rollouts.jsonl")"
kinds=$(by_kind "$t0" "$t1")
echo "launch requests by kind (2 rollouts): $kinds"
[ "$(jq -r .exec <<<"$kinds")" = 2 ] && pass || fail "one exec a rollout (its setup): $kinds"

echo "== forge-proxy recorded the harness's calls under each rollout, with token ids"
for id in $(jq -r .rollout_id "$WORK/rollouts.jsonl"); do
  "$FORGE_BIN/forge-proxy" --store "$WORK/forge.db" --dump-rollout "$id" >"$WORK/calls-$id.jsonl" 2>"$ERR" ||
    fail "dump $id: $(cat "$ERR")"
  python3 - "$WORK/calls-$id.jsonl" <<'PY' && pass || fail "calls of $id: $(jq -c '{seq, http_status, client_format, n: (.prompt_ids | length), error}' "$WORK/calls-$id.jsonl")"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
assert len(calls) >= 2, f"{len(calls)} calls"
for c in calls:
    assert c["http_status"] == 200 and c["client_format"] == "responses", (c["seq"], c["http_status"], c["client_format"])
    assert c["prompt_ids"] and c["completion_ids"], c["seq"]
PY
done
recorded=$(sqlite3 "$WORK/forge.db" "SELECT count(*) FROM calls WHERE rollout_id IN ($(jq -r .rollout_id "$WORK/rollouts.jsonl" | sed "s/.*/'&'/" | paste -sd,))")
[ "$recorded" = "$(sqlite3 "$WORK/forge.db" 'SELECT count(*) FROM calls')" ] && [ "$recorded" = "$(wc -l <"$WORK/upstream.log")" ] && pass ||
  fail "$recorded calls of the rollouts, $(sqlite3 "$WORK/forge.db" 'SELECT count(*) FROM calls') stored, $(wc -l <"$WORK/upstream.log") upstream"
# No exec while a harness ran: each rollout's one exec (at -j 1) came
# before its first recorded call, and the next exec after its last.
python3 - "$WORK/forge.db" "$WORK/rollouts.jsonl" <(stats | jq -c --argjson t "$t0" --argjson u "$t1" \
  '[.log[] | select(.[0] >= $t and .[0] <= $u and .[2] == "exec") | .[0]]') <<'PY' && pass || fail "an exec during a harness run"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
execs = sorted(json.load(open(sys.argv[3])))
col = "started_at"
spans = []
for line in open(sys.argv[2]):
    rid = json.loads(line)["rollout_id"]
    lo, hi = db.execute(f"SELECT min({col}), max({col}) FROM calls WHERE rollout_id = ?", (rid,)).fetchone()
    spans.append((float(lo), float(hi)))
for lo, hi in spans:
    inside = [e for e in execs if lo <= e <= hi]
    assert not inside, f"exec at {inside} inside the harness's calls [{lo}, {hi}]"
    assert any(e < lo for e in execs), f"no setup exec before {lo}"
print("execs", execs, "harness call spans", spans)
PY

echo "== forge-verify --backend k8s: real test.sh scripts, one exec a verification"
t2=$(now)
"$FORGE_BIN/forge-verify" --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  --store "$WORK/forge.db" --tasks "$WORK/tasks.jsonl" "$WORK/rollouts.jsonl" >"$OUT" 2>"$ERR"
rc=$?
t3=$(now)
[ "$rc" = 1 ] && pass || fail "forge-verify exit $rc (want 1: one rollout did not pass): $(tail -3 "$ERR")"
verdict() { jq -c --arg t "$1" 'select(.task_id == $t) | .verdict' "$OUT"; }
[ "$(verdict hello-pass | jq -r '[.outcome, .reward] | join(" ")')" = "passed 1" ] && pass || fail "pass: $(verdict hello-pass)"
[ "$(verdict hello-fail | jq -r '[.outcome, .reward] | join(" ")')" = "failed 0" ] && pass || fail "fail: $(verdict hello-fail)"
verdict hello-fail | jq -r .log | grep -qx "hello.txt holds: forge" && pass || fail "test.sh's output: $(verdict hello-fail)"
[ "$(verdict hello-pass | jq -r .sweep.stream)" = "forge-box verify" ] && pass || fail "sweep: $(verdict hello-pass | jq -c .sweep)"
[ "$(verdict hello-pass | jq -r '[.tamper.checked, .tamper.method, (.tamper.findings // [] | length)] | join(" ")')" = "true ptrace 0" ] &&
  pass || fail "the verifier traced in the pod, nothing of the agent's in its machinery: $(verdict hello-pass | jq -c .tamper)"
kinds=$(by_kind "$t2" "$t3")
echo "verification requests by kind (2 rollouts): $kinds"
[ "$kinds" = '{"delete":2,"exec":2,"get":2}' ] && pass || fail "a verification is GET, one exec, DELETE: $kinds"
[ "$(sqlite3 "$WORK/forge.db" "SELECT group_concat(outcome, ' ') FROM (SELECT outcome FROM verdicts ORDER BY outcome)")" = "failed passed" ] &&
  pass || fail "verdicts in the store: $(sqlite3 "$WORK/forge.db" 'SELECT rollout_id, outcome FROM verdicts')"
finish
