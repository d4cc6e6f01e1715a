#!/usr/bin/env bash
# A real harness calling a real MCP server's tool: Claude Code (installed by
# scripts/install-harnesses.sh) on a Harbor task whose task.toml declares
# [[environment.mcp_servers]] (a stdio server written for this test,
# tests/support/mcp_stdio_server.py), run by forge-launch on the local
# backend through forge-proxy in front of the scripted model: step 0 calls
# the MCP tool mcp__codes__secret_code, step 1 writes the code to a file,
# step 2 ends. Checks that forge-launch handed the server to Claude Code
# (--mcp-config), that the server saw tools/call, and that the tool's result
# is in the recorded next call in the store.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
source "$FORGE_SRC/tests/support/loopback_netns.sh"
install_dir="${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}"
claude="$install_dir/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
[[ -x "$claude" ]] || { echo "FAIL: $claude missing: run scripts/install-harnesses.sh" >&2; exit 1; }

work="$(mktemp -d /tmp/forge-cc-mcp.XXXXXX)"
run="cc-mcp-$$"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  FORGE_LOCAL_ROOT="$work/local" "$FORGE_BIN/forge-launch" --backend local gc --run-id "$run" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in launch.err verify.err proxy.err mcp.log; do [[ -s "$work/$f" ]] && { echo "--- $f" >&2; tail -20 "$work/$f" >&2; }; done
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cat >"$work/scenario.json" <<'EOF'
{"steps": [
  {"tool_call": {"name": "mcp__codes__secret_code", "arguments": {}}},
  {"tool_call": {"name": "Write", "arguments": {"file_path": "answer.txt", "content": "mcp-code-7391"}}},
  {"text": "The code is in answer.txt."}
]}
EOF
python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --port-file "$work/fake.port" \
  --log "$work/fake.log" --scenario "$work/scenario.json" &
pids+=($!)
for _ in $(seq 100); do [[ -s "$work/fake.port" ]] && break; sleep 0.1; done
[[ -s "$work/fake.port" ]] || fail "fake upstream did not start"
port=$(free_port)
"$FORGE_BIN/forge-proxy" --store "$work/forge.db" --port "$port" --health-interval 0 \
  --upstream "http://127.0.0.1:$(cat "$work/fake.port")" --max-tokens-cap 4096 2>"$work/proxy.err" &
pids+=($!)
proxy="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -s -o /dev/null "$proxy/healthz" && break; sleep 0.1; done

# A Harbor task whose MCP server is a stdio command (on the local backend it
# runs on the host, beside the harness).
task="$work/mcp-task"
mkdir -p "$task/tests"
cat >"$task/task.toml" <<EOF
version = "1.0"

[agent]
timeout_sec = 180.0

[environment]
docker_image = "unused-by-the-local-backend"

[[environment.mcp_servers]]
name = "codes"
transport = "stdio"
command = "python3"
args = ["$FORGE_SRC/tests/support/mcp_stdio_server.py", "$work/mcp.log"]
EOF
echo 'Call the secret_code tool of the codes MCP server and write the code it returns to answer.txt.' >"$task/instruction.md"
printf '#!/bin/sh\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n' >"$task/tests/test.sh"

echo "== forge-launch --backend local --harness claude-code on a task with an MCP server"
FORGE_LOCAL_ROOT="$work/local" FORGE_HARNESS_INSTALL_DIR="$install_dir" \
  "$FORGE_BIN/forge-launch" --backend local --store "$work/forge.db" --run-id "$run" \
  --harness claude-code --proxy "$proxy" --agent-timeout 180 --hold "$task" \
  >"$work/rollouts.jsonl" 2>"$work/launch.err" || fail "forge-launch exit $?"
rollout=$(jq -r .rollout_id "$work/rollouts.jsonl")
[[ "$(jq -r .outcome "$work/rollouts.jsonl")" == ok ]] ||
  fail "outcome: $(jq -c '{outcome, error, exit_code, logs}' "$work/rollouts.jsonl" | head -c 2000)"
grep -q '^tools/call$' "$work/mcp.log" && grep -q '^called secret_code$' "$work/mcp.log" ||
  fail "the MCP server never saw the tool call: $(cat "$work/mcp.log" 2>/dev/null)"
box=$(jq -r .sandbox.id "$work/rollouts.jsonl")
[[ "$(cat "$box/fs/work/answer.txt")" == mcp-code-7391 ]] || fail "answer.txt not written"

echo "== the tool's result is in the recorded next call"
"$FORGE_BIN/forge-proxy" --store "$work/forge.db" --dump-rollout "$rollout" >"$work/calls.jsonl"
python3 - "$work/calls.jsonl" <<'PY' || fail "recorded calls"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
J = lambda v: json.loads(v) if isinstance(v, str) else v
agent = [c for c in calls if not c["side_call"]]
assert len(agent) == 3, [(c["seq"], c["side_call"]) for c in calls]
first, second = agent[0], agent[1]
# Claude Code defers MCP tools (ToolSearch, DeferredToolPlaceholder) rather
# than list them in every request; the call itself names the MCP tool.
call = J(first["response"])["content"][0]
assert call["type"] == "tool_use" and call["name"] == "mcp__codes__secret_code", call
results = [b for m in J(second["request"])["messages"] if m["role"] == "user" and isinstance(m["content"], list)
           for b in m["content"] if b.get("type") == "tool_result" and b.get("tool_use_id") == call["id"]]
assert len(results) == 1, results
content = results[0]["content"]
text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
assert "mcp-code-7391" in text, results[0]
# And upstream, as the policy model saw it: the tool message of the chat request.
up = [m for m in J(second["upstream_request"])["messages"] if m["role"] == "tool"]
assert up and "mcp-code-7391" in json.dumps(up[-1]), up
assert second["prompt_ids"], "no token ids recorded"
print("MCP tool result recorded in call", second["seq"])
PY

echo "harness_claude_mcp: ok"
