# Shared setup for the real-harness end-to-end tests (sourced, not a test):
# a real harness from npm (scripts/install-harnesses.sh) runs one small
# file-writing task through forge-launch --backend local, pointed at
# forge-proxy, which translates its wire format to chat completions for the
# scripted fake upstream (tests/fake_upstream/fake_upstream.py --scenario).
# forge-verify then checks the file.
#
# The whole test runs in a loopback-only network namespace (loopback_netns.sh).
set -euo pipefail
: "${FORGE_BIN:?FORGE_BIN must point at the build directory}"
: "${FORGE_SRC:?FORGE_SRC must point at the source directory}"
source "$FORGE_SRC/tests/support/loopback_netns.sh"

WORK=$(mktemp -d /tmp/forge-harness-e2e.XXXXXX)
PIDS=()
HARNESS_RUN_ID="harness-e2e-$$-$RANDOM"
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  FORGE_LOCAL_ROOT="$WORK/local" "$FORGE_BIN/forge-launch" --backend local gc --run-id "$HARNESS_RUN_ID" \
    >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for f in "$WORK"/launch.err "$WORK"/proxy.err; do
    [[ -s "$f" ]] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
  done
  [[ -s "$WORK/rollouts.jsonl" ]] &&
    { echo "--- harness output" >&2; jq -r '.error // empty, .logs.stderr[-3000:], .logs.stdout[-2000:]' \
        "$WORK/rollouts.jsonl" >&2 || true; }
  exit 1
}
pass() { echo "ok - $*"; }


HARNESS_INSTALL_DIR=${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}

# require_installed PATH: the harness must be where install-harnesses.sh puts it.
require_installed() {
  [[ -e "$HARNESS_INSTALL_DIR/$1" ]] ||
    fail "$HARNESS_INSTALL_DIR/$1 is missing: run scripts/install-harnesses.sh first"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_upstream SCENARIO_JSON → FAKE_PORT, FAKE_LOG; then forge-proxy → PROXY, STORE
start_upstream() {
  printf '%s\n' "$1" > "$WORK/scenario.json"
  FAKE_LOG=$WORK/upstream.log
  python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --port-file "$WORK/fake.port" \
    --log "$FAKE_LOG" --scenario "$WORK/scenario.json" &
  PIDS+=($!)
  for _ in $(seq 1 200); do [[ -s "$WORK/fake.port" ]] && break; sleep 0.05; done
  [[ -s "$WORK/fake.port" ]] || fail "the fake upstream did not start"
  FAKE_PORT=$(cat "$WORK/fake.port")
  STORE=$WORK/forge.db
  local port; port=$(free_port)
  "$FORGE_BIN/forge-proxy" --store "$STORE" --port "$port" --health-interval 0 \
    --upstream "http://127.0.0.1:$FAKE_PORT" 2>>"$WORK/proxy.err" &
  PIDS+=($!)
  PROXY=http://127.0.0.1:$port
  for _ in $(seq 1 200); do curl -s -o /dev/null "$PROXY/healthz" && return 0; sleep 0.05; done
  fail "forge-proxy does not answer at $PROXY"
}

# launch_task HARNESS MODEL: one task, "create hello.txt holding forge", whose
# files verifier checks /work/hello.txt; launched and held for verify_task.
# Sets ROLLOUT (the rollout id) and SANDBOX_FS (the sandbox's root on the host,
# there until verify_task releases it).
launch_task() {
  local harness=$1 model=$2
  cat > "$WORK/tasks.jsonl" <<EOF
{"schema": "forge.task/1", "id": "hello-$harness", "instruction": "Create the file hello.txt in the current directory containing the single line: forge", "agent": {"timeout_sec": 240}, "verifier": {"kind": "files", "expect": [{"path": "/work/hello.txt", "equals": "forge\\n"}]}}
EOF
  # --memory 2g: Harbor's default memory_mb, under which real tasks run.
  FORGE_LOCAL_ROOT="$WORK/local" "$FORGE_BIN/forge-launch" --backend local --store "$STORE" --memory 2g \
    --run-id "$HARNESS_RUN_ID" --harness "$harness" --harness-install-dir "$HARNESS_INSTALL_DIR" \
    --model "$model" --proxy "$PROXY" --hold "$WORK/tasks.jsonl" \
    >"$WORK/rollouts.jsonl" 2>"$WORK/launch.err" || fail "forge-launch exited $?"
  [[ $(wc -l <"$WORK/rollouts.jsonl") -eq 1 ]] || fail "expected one rollout record"
  ROLLOUT=$(jq -r .rollout_id "$WORK/rollouts.jsonl")
  [[ $(jq -r .outcome "$WORK/rollouts.jsonl") == ok ]] ||
    fail "$harness: outcome $(jq -c '{outcome, exit_code, error}' "$WORK/rollouts.jsonl")"
  SANDBOX_FS=$(jq -r .sandbox.id "$WORK/rollouts.jsonl")/fs
  # What the real harness wrote, before the verifier looks.
  [[ -f "$SANDBOX_FS/work/hello.txt" ]] || fail "$harness did not create hello.txt"
  [[ "$(cat "$SANDBOX_FS/work/hello.txt")" == forge ]] ||
    fail "$harness wrote hello.txt as: $(head -c 200 "$SANDBOX_FS/work/hello.txt")"
  pass "$harness created hello.txt with the right content (rollout $ROLLOUT)"
}

# verify_task: forge-verify runs the task's verifier on the held sandbox (and
# releases it); the verdict must be passed, and stored.
verify_task() {
  FORGE_LOCAL_ROOT="$WORK/local" "$FORGE_BIN/forge-verify" "$WORK/rollouts.jsonl" --store "$STORE" \
    >"$WORK/verdicts.jsonl" 2>"$WORK/verify.err" || fail "forge-verify exited $?: $(tail -5 "$WORK/verify.err")"
  [[ $(jq -r .verdict.outcome "$WORK/verdicts.jsonl") == passed ]] ||
    fail "verdict: $(jq -c .verdict "$WORK/verdicts.jsonl")"
  [[ $(sqlite3 "$STORE" "SELECT count(*) FROM verdicts WHERE rollout_id = '$ROLLOUT' AND outcome = 'passed'") -eq 1 ]] ||
    fail "the passed verdict is not in the store"
  [[ ! -e "$SANDBOX_FS" ]] || fail "forge-verify did not release the sandbox"
  pass "forge-verify: passed, stored, sandbox released"
}

# check_calls FORMAT: every request the upstream saw is a call recorded under
# the rollout, in the client's wire format, with prompt and completion token
# ids; nothing is recorded under any other rollout. Leaves the calls as JSONL
# in $WORK/calls.jsonl (forge-proxy --dump-rollout).
check_calls() {
  local format=$1
  "$FORGE_BIN/forge-proxy" --store "$STORE" --dump-rollout "$ROLLOUT" >"$WORK/calls.jsonl" ||
    fail "forge-proxy --dump-rollout failed"
  local upstream recorded others
  upstream=$(wc -l <"$FAKE_LOG")
  recorded=$(sqlite3 "$STORE" "SELECT count(*) FROM calls WHERE rollout_id = '$ROLLOUT'")
  others=$(sqlite3 "$STORE" "SELECT count(*) FROM calls WHERE rollout_id <> '$ROLLOUT'")
  [[ $upstream -ge 2 ]] || fail "the upstream saw $upstream request(s), want at least 2"
  [[ $recorded -eq $upstream ]] || fail "$recorded calls recorded for $upstream upstream requests"
  [[ $others -eq 0 ]] || fail "$others call(s) recorded under another rollout"
  python3 - "$WORK/calls.jsonl" "$format" <<'PY' || fail "recorded calls do not match"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
for c in calls:
    where = f"call {c['seq']}"
    assert c["http_status"] == 200, f"{where}: HTTP {c['http_status']} {c.get('error')}"
    assert c["client_format"] == sys.argv[2], f"{where}: client_format {c['client_format']}"
    assert not c["side_call"], f"{where}: tagged as a side call"
    assert c["prompt_ids"], f"{where}: no prompt token ids"
    assert c["completion_ids"], f"{where}: no completion token ids"
print(f"{len(calls)} calls, all {sys.argv[2]}, all with token ids")
PY
  pass "every call ($recorded) recorded under the rollout as $format, with prompt/completion token ids"
}
