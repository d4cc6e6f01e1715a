# A real npm harness end to end (sourced by tests/e2e/harness_*.sh, not a test):
# the scripted fake upstream (--scenario) → forge-proxy → forge-launch
# --backend local --harness NAME on "create hello.txt" → forge-verify (files
# verifier), then checks on what the store recorded. Everything listens on
# 127.0.0.1 inside a loopback-only network namespace (loopback_netns.sh);
# the profiles keep the harnesses off the network besides.
#
#   harness_e2e NAME WRITE_TOOL ARGS_TEMPLATE [FAIL_ONCE]
# ARGS_TEMPLATE is the write tool's arguments as JSON with @FILE@ for the
# absolute path of hello.txt; FAIL_ONCE makes the fake answer the first agent
# call with that HTTP status (to record how the harness retries).
# Afterwards: $ROLLOUT, $CALLS (the rollout's calls as JSONL), $UPSTREAM_LOG.
source "$FORGE_SRC/tests/support/loopback_netns.sh"
source "$FORGE_SRC/tests/support/proxy_env.sh"

HARNESSES=${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}
AGENT_TIMEOUT=${FORGE_HARNESS_TIMEOUT:-300s}

# require_installed PATH...: the harness e2e tests need scripts/install-harnesses.sh.
require_installed() {
  for f in "$@"; do
    if [[ ! -e "$HARNESSES/$f" ]]; then
      # A missing harness is a failed test, not a pass: scripts/test.sh installs them.
      echo "FAIL: $HARNESSES/$f is missing (run scripts/install-harnesses.sh)" >&2
      exit 1
    fi
  done
}

harness_e2e() {
  local name=$1 tool=$2 template=$3 fail_once=${4:-}
  local run="e2e-$name-$$" task=hello
  ROLLOUT=$(printf '%s\n%s\n0' "$run" "$task" | sha256sum | cut -c1-24)
  local root=$WORK/local
  local file=$root/$run/$ROLLOUT/fs/work/hello.txt
  local args=${template//@FILE@/$file}
  # Step 0: the harness's own write tool; step 1: the final answer.
  python3 - "$WORK/scenario.json" "$tool" "$args" "$fail_once" <<'PY'
import json, sys
path, tool, args, fail_once = sys.argv[1:]
first = {"tool_call": {"name": tool, "arguments": json.loads(args)}}
if fail_once:
    first["fail_once"] = int(fail_once)
json.dump({"steps": [first, {"text": "Created hello.txt."}]}, open(path, "w"))
PY
  UPSTREAM_LOG=$WORK/upstream.log
  python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --port-file "$WORK/up.port" \
    --log "$UPSTREAM_LOG" --scenario "$WORK/scenario.json" &
  PIDS+=($!)
  for _ in $(seq 1 100); do [ -f "$WORK/up.port" ] && break; sleep 0.05; done
  [ -f "$WORK/up.port" ] || fail "the fake upstream did not start"
  local store=$WORK/forge.db
  start_proxy "$store" --upstream "http://127.0.0.1:$(cat "$WORK/up.port")/v1"

  printf '%s\n' '{"id":"hello","instruction":"Create a file hello.txt in the current directory containing the single line: forge","verifier":{"kind":"files","expect":[{"path":"/work/hello.txt","equals":"forge\n"}]}}' \
    >"$WORK/tasks.jsonl"
  echo "== $name: forge-launch (rollout $ROLLOUT)"
  local t0=$SECONDS
  FORGE_LOCAL_ROOT=$root "$FORGE_BIN/forge-launch" --backend local --store "$store" --run-id "$run" \
    --harness "$name" --harness-install-dir "$HARNESSES" --proxy "$PROXY" --model policy \
    --agent-timeout "$AGENT_TIMEOUT" --memory 64g --hold "$WORK/tasks.jsonl" \
    >"$WORK/rollouts.jsonl" 2>"$WORK/launch.err" || { local rc=$?; cat "$WORK/launch.err" >&2; fail "forge-launch exit $rc"; }
  echo "   harness ran in $((SECONDS - t0)) s"
  local outcome
  outcome=$(jq -r .outcome "$WORK/rollouts.jsonl")
  [[ "$outcome" == ok ]] || fail "$name outcome $outcome: $(jq -c '{error, exit_code, logs}' "$WORK/rollouts.jsonl" | cut -c1-3000)"
  [[ "$(jq -r .rollout_id "$WORK/rollouts.jsonl")" == "$ROLLOUT" ]] || fail "rollout id is not the one computed"

  # The real harness wrote the file through its own write tool.
  [[ -f "$file" ]] || fail "$name did not create $file: $(jq -r .logs.stdout "$WORK/rollouts.jsonl" | tail -c 2000)"
  [[ "$(cat "$file")" == forge ]] || fail "hello.txt holds '$(cat "$file")'"
  pass "$name created hello.txt with its $tool tool"

  "$FORGE_BIN/forge-verify" "$WORK/rollouts.jsonl" --store "$store" >"$WORK/verdicts.jsonl" 2>"$WORK/verify.err" ||
    { local rc=$?; cat "$WORK/verify.err" >&2; fail "forge-verify exit $rc: $(cat "$WORK/verdicts.jsonl")"; }
  [[ "$(jq -r .verdict.outcome "$WORK/verdicts.jsonl")" == passed ]] || fail "verdict: $(jq -c .verdict "$WORK/verdicts.jsonl")"
  [[ "$(sqlite3 "$store" "SELECT outcome || ' ' || reward FROM verdicts WHERE rollout_id = '$ROLLOUT'")" == "passed 1.0" ]] ||
    fail "verdict not in the store"
  [[ ! -e "$root/$run/$ROLLOUT" ]] || fail "forge-verify did not release the sandbox"
  pass "forge-verify: passed, reward 1, sandbox released"

  # Every call the proxy forwarded is recorded, and attributed to this rollout.
  CALLS=$WORK/calls.jsonl
  calls "$store" "$ROLLOUT" >"$CALLS"
  local recorded all forwarded
  recorded=$(wc -l <"$CALLS")
  all=$(sqlite3 "$store" "SELECT count(*) FROM calls")
  forwarded=$(wc -l <"$UPSTREAM_LOG")
  [[ "$recorded" -ge 2 && "$recorded" == "$all" ]] ||
    fail "$recorded calls of $ROLLOUT, $all in the store"
  [[ "$forwarded" == "$recorded" ]] || fail "$forwarded requests reached the upstream, $recorded recorded"
  if grep -q 'forge-[0-9a-f]\{48\}' "$UPSTREAM_LOG"; then fail "the rollout secret reached the upstream"; fi
  # Agent turns (tools offered) are not side calls and carry token ids; calls
  # without tools are side calls.
  python3 - "$CALLS" <<'PY' || fail "call records: $(jq -c '{seq, side_call, http_status, n_prompt: (.prompt_ids|length), n_completion: (.completion_ids|length), error}' "$CALLS")"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
agent = [c for c in calls if c["request"].get("tools")]
ok = [c for c in agent if c["http_status"] == 200]
assert len(ok) == 2, "expected 2 successful agent calls, got %d" % len(ok)
for c in calls:
    assert c["client_format"] == "openai-chat", c["client_format"]
    assert c["side_call"] == (not c["request"].get("tools")), (c["seq"], c["side_call"])
    if c["http_status"] == 200:
        assert c["prompt_ids"] and c["completion_ids"], c["seq"]
        assert c["usage"]["completion_tokens"] == len(c["completion_ids"]), c["seq"]
first, second = ok
tool_calls = first["response"]["choices"][0]["message"]["tool_calls"]
assert first["finish_reason"] == "tool_calls" and len(tool_calls) == 1, first["response"]
# The second turn carries the tool's result back to the model.
assert any(m["role"] == "tool" for m in second["request"]["messages"]), "no tool result in the second call"
assert second["response"]["choices"][0]["message"]["content"] == "Created hello.txt."
PY
  pass "$recorded calls recorded for the rollout: 2 agent turns with prompt and completion ids, side calls tagged"
}
