#!/usr/bin/env bash
# The real Claude Code (npm @anthropic-ai/claude-code, installed by
# scripts/install-harnesses.sh) end to end on the local backend:
#   fake upstream (--scenario: step 0 a Write tool call, step 1 a final text)
#   ← forge-proxy (Anthropic Messages ↔ chat) ← claude -p, run by
#   forge-launch --harness claude-code; then forge-verify.
# Checks the file the harness wrote, the verdict, and that every model call is
# in the store under the rollout, in the anthropic format, with token ids; and
# that the harness spoke only to the proxy on 127.0.0.1, inside a
# loopback-only network namespace (tests/support/loopback_netns.sh).
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
source "$FORGE_SRC/tests/support/scripted_model.sh"
source "$FORGE_SRC/tests/support/loopback_netns.sh"
install_dir="${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}"
claude="$install_dir/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
[[ -x "$claude" ]] || { echo "FAIL: $claude missing: run scripts/install-harnesses.sh" >&2; exit 1; }

harness_test forge-cc "cc-local-$$" local launch.err verify.err proxy.err

# The scripted model: write the file, then say it is done.
cat >"$work/scenario.json" <<'EOF'
{"steps": [
  {"tool_call": {"name": "Write", "arguments": {"file_path": "hello.txt", "content": "forge"}}},
  {"text": "I wrote hello.txt."}
]}
EOF
start_scripted_model "$work" --max-tokens-cap 4096

cat >"$work/tasks.jsonl" <<'EOF'
{"id":"cc-hello","instruction":"Create the file hello.txt in the current directory containing the single word forge.","verifier":{"kind":"command","timeout_sec":30,"command":"test \"$(cat hello.txt)\" = forge"}}
EOF

echo "== forge-launch --backend local --harness claude-code"
FORGE_LOCAL_ROOT="$work/local" FORGE_HARNESS_INSTALL_DIR="$install_dir" \
  "$FORGE_BIN/forge-launch" --backend local --store "$work/forge.db" --run-id "$run" \
  --harness claude-code --proxy "$proxy" --agent-timeout 180 --hold "$work/tasks.jsonl" \
  >"$work/rollouts.jsonl" 2>"$work/launch.err" || fail "forge-launch exit $?"
rollout=$(jq -r .rollout_id "$work/rollouts.jsonl")
[[ "$(jq -r .outcome "$work/rollouts.jsonl")" == ok ]] ||
  fail "outcome: $(jq -c '{outcome, error, exit_code, logs}' "$work/rollouts.jsonl" | head -c 2000)"
# claude -p --output-format json: its own account of the run.
jq -r .logs.stdout "$work/rollouts.jsonl" >"$work/claude.json"
jq -e '.is_error == false and .num_turns == 2 and .result == "I wrote hello.txt."' "$work/claude.json" >/dev/null ||
  fail "claude's result: $(head -c 1000 "$work/claude.json")"
box=$(jq -r .sandbox.id "$work/rollouts.jsonl")
[[ "$(cat "$box/fs/work/hello.txt")" == forge ]] || fail "hello.txt not written by the harness"

echo "== forge-verify in the held sandbox"
"$FORGE_BIN/forge-verify" --store "$work/forge.db" "$work/rollouts.jsonl" >"$work/verdicts.jsonl" \
  2>"$work/verify.err" || fail "forge-verify exit $?"
[[ "$(jq -r .verdict.outcome "$work/verdicts.jsonl")" == passed ]] || fail "verdict: $(cat "$work/verdicts.jsonl")"
[[ "$(sqlite3 "$work/forge.db" "SELECT outcome || ' ' || reward FROM verdicts WHERE rollout_id = '$rollout'")" == "passed 1.0" ]] ||
  fail "verdict not in the store"

echo "== every call recorded and attributed"
# The fake upstream saw exactly the calls the store holds for this rollout,
# and nothing was recorded for any other rollout (no anonymous side calls).
upstream_calls=$(grep -c '"/v1/chat/completions"' "$work/fake.log")
[[ "$upstream_calls" -ge 2 ]] || fail "expected >= 2 upstream calls, saw $upstream_calls"
[[ "$(sqlite3 "$work/forge.db" "SELECT count(*) FROM calls WHERE rollout_id = '$rollout'")" == "$upstream_calls" ]] ||
  fail "store holds $(sqlite3 "$work/forge.db" "SELECT count(*) FROM calls WHERE rollout_id = '$rollout'") calls for the rollout, upstream saw $upstream_calls"
[[ "$(sqlite3 "$work/forge.db" "SELECT count(*) FROM calls WHERE rollout_id != '$rollout'")" == 0 ]] ||
  fail "calls recorded under another rollout"
"$FORGE_BIN/forge-proxy" --store "$work/forge.db" --dump-rollout "$rollout" >"$work/calls.jsonl"
python3 - "$work/calls.jsonl" <<'PY' || fail "recorded calls"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
J = lambda v: json.loads(v) if isinstance(v, str) else v  # bodies: objects (or JSON text)
agent = [c for c in calls if not c["side_call"]]
assert len(agent) == 2, [(c["seq"], c["side_call"]) for c in calls]
for c in calls:
    assert c["client_format"] == "anthropic", c["client_format"]
    assert c["http_status"] == 200 and not c["error"], (c["http_status"], c["error"])
    assert c["prompt_ids"] and c["completion_ids"], c["seq"]
    assert len(c["logprobs"]) == len(c["completion_ids"]), c["seq"]
first, second = agent
# The raw exchange as the harness saw it: Claude Code's own request shape.
req = J(first["request"])
assert {t["name"] for t in req["tools"]} >= {"Write", "Bash", "Read"}, [t["name"] for t in req["tools"]]
resp = J(first["response"])
assert resp["stop_reason"] == "tool_use" and resp["content"][0]["name"] == "Write", resp
assert resp["content"][0]["input"] == {"file_path": "hello.txt", "content": "forge"}, resp
assert first["finish_reason"] == "tool_calls" and second["finish_reason"] == "stop"
# The second request carries the tool result back to the model.
req2 = J(second["request"])
results = [b for m in req2["messages"] if m["role"] == "user" and isinstance(m["content"], list)
           for b in m["content"] if b.get("type") == "tool_result"]
assert len(results) == 1 and results[0]["tool_use_id"] == resp["content"][0]["id"], results
up = J(second["upstream_request"])
# Claude Code asks for more than a small policy server gives; the proxy caps
# what goes upstream (--max-tokens-cap) and keeps what the harness asked.
assert req2["max_tokens"] > 4096 and up["max_tokens"] == 4096, (req2["max_tokens"], up["max_tokens"])
assert [m["role"] for m in up["messages"]][-2:] == ["assistant", "tool"], [m["role"] for m in up["messages"]]
print(f"{len(calls)} calls, anthropic, token ids recorded")
PY

echo "== the harness spoke only to the proxy"
# Each request the proxy forwarded carried the rollout's secret (checked by the
# proxy); the fake upstream saw only chat completions, no side endpoints.
python3 - "$work/fake.log" <<'PY' || fail "fake upstream log"
import json, sys
paths = {json.loads(l)["path"] for l in open(sys.argv[1])}
assert paths == {"/v1/chat/completions"}, paths
PY
echo "harness_claude_code: ok"
