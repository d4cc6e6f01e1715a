#!/usr/bin/env bash
# Real harnesses calling a real MCP server's tool: Claude Code, Qwen Code,
# opencode, Gemini CLI, OpenClaw and Codex (installed by
# scripts/install-harnesses.sh), each on a Harbor task whose task.toml
# declares [[environment.mcp_servers]] (a stdio server written for this test,
# tests/support/mcp_stdio_server.py), run by forge-launch on the local backend
# (at the task's default memory, Harbor's 2 GB) through forge-proxy in front
# of the scripted model. The model calls the MCP tool under the name the
# harness gives it (Claude Code and Qwen Code mcp__codes__secret_code,
# opencode codes_secret_code, Gemini CLI mcp_codes_secret_code, OpenClaw
# codes__secret_code through its tool_call, Codex mcp__codes__secret_code
# after a first command), then ends. Checks that forge-launch handed the
# server to the harness in its own config format (Claude Code: --mcp-config),
# that the server saw tools/call, and that the tool's result is in the
# recorded next call, as the policy saw it upstream. Codex sends its MCP
# tools as a Responses "namespace" tool, which forge-proxy gives the policy as
# mcp__codes__secret_code and whose call goes back with the namespace.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
source "$FORGE_SRC/tests/support/loopback_netns.sh"
source "$FORGE_SRC/tests/support/scripted_model.sh"
install_dir="${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}"
work="$(mktemp -d /tmp/forge-mcp.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/{launch.err,proxy.err,mcp.log}; do [[ -s "$f" ]] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}

declare -A TOOL=([claude-code]=mcp__codes__secret_code [qwen-code]=mcp__codes__secret_code
                 [opencode]=codes_secret_code [gemini-cli]=mcp_codes_secret_code [openclaw]=codes__secret_code
                 [codex]=mcp__codes__secret_code)
# Claude Code (ToolSearch), Qwen Code (tool_search) and OpenClaw (tool_search,
# tool_call) defer MCP tools instead of listing them in every request; the
# other two list them.
declare -A LISTED=([claude-code]=0 [qwen-code]=0 [opencode]=1 [gemini-cli]=1 [openclaw]=0 [codex]=1)
declare -A ENTRY=([claude-code]=claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe
                  [qwen-code]=qwen-code/node_modules/@qwen-code/qwen-code/cli-entry.js
                  [opencode]=opencode/node_modules/opencode-linux-x64/bin/opencode
                  [gemini-cli]=gemini-cli/node_modules/@google/gemini-cli
                  [openclaw]=openclaw/node_modules/openclaw/openclaw.mjs
                  [codex]=codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex)
# Codex lists a server's tools only once the server is up, which its first
# request does not wait for: the model runs a command first, as a model
# exploring would, and calls the MCP tool in its second turn.
declare -A FIRST=([codex]='{"tool_call": {"name": "exec_command", "arguments": {"cmd": "sleep 1"}}}, ')

for harness in ${FORGE_MCP_HARNESSES:-claude-code qwen-code opencode gemini-cli openclaw codex}; do
  dir="$work/$harness"
  mkdir -p "$dir/task/tests"
  [[ -e "$install_dir/${ENTRY[$harness]}" ]] || fail "$install_dir/${ENTRY[$harness]} missing: run scripts/install-harnesses.sh"
  call=$(printf '{"name": "%s", "arguments": {}}' "${TOOL[$harness]}")
  # OpenClaw lists MCP tools behind its Tool Search: the model calls them through tool_call by name.
  [[ $harness == openclaw ]] && call=$(printf '{"name": "tool_call", "arguments": {"id": "%s", "args": {}}}' "${TOOL[$harness]}")
  printf '{"steps": [%s{"tool_call": %s}, {"text": "The code is mcp-code-7391."}]}\n' "${FIRST[$harness]:-}" "$call" \
    >"$dir/scenario.json"
  start_scripted_model "$dir" --max-tokens-cap 4096
  cat >"$dir/task/task.toml" <<EOF
version = "1.0"

[agent]
timeout_sec = 180.0

[environment]
docker_image = "unused-by-the-local-backend"

[[environment.mcp_servers]]
name = "codes"
transport = "stdio"
command = "python3"
args = ["$FORGE_SRC/tests/support/mcp_stdio_server.py", "$dir/mcp.log"]
EOF
  echo 'Call the secret_code tool of the codes MCP server and say the code it returns.' >"$dir/task/instruction.md"
  printf '#!/bin/sh\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n' >"$dir/task/tests/test.sh"

  echo "== $harness: forge-launch --backend local on a task with an MCP server"
  FORGE_LOCAL_ROOT="$dir/local" FORGE_HARNESS_INSTALL_DIR="$install_dir" \
    "$FORGE_BIN/forge-launch" --backend local --store "$dir/forge.db" --run-id "mcp-$harness-$$" \
    --harness "$harness" --proxy "$proxy" --model policy --agent-timeout 180 \
    "$dir/task" >"$dir/rollouts.jsonl" 2>"$dir/launch.err" || fail "$harness: forge-launch exit $?"
  [[ "$(jq -r .outcome "$dir/rollouts.jsonl")" == ok ]] ||
    fail "$harness outcome: $(jq -c '{outcome, error, exit_code}' "$dir/rollouts.jsonl" | head -c 2000)"
  grep -q '^tools/call$' "$dir/mcp.log" && grep -q '^called secret_code$' "$dir/mcp.log" ||
    fail "$harness: the MCP server never saw the tool call: $(tr '\n' ' ' <"$dir/mcp.log" 2>/dev/null)"
  rollout=$(jq -r .rollout_id "$dir/rollouts.jsonl")
  "$FORGE_BIN/forge-proxy" --store "$dir/forge.db" --dump-rollout "$rollout" >"$dir/calls.jsonl"
  python3 - "$dir/calls.jsonl" "${TOOL[$harness]}" "${LISTED[$harness]}" <<'PY' || fail "$harness: recorded calls"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
J = lambda v: json.loads(v) if isinstance(v, str) else v
def upstream(c):
    return J(c["upstream_request"]) if c.get("upstream_request") else J(c["request"])
# The call after the tool ran: its upstream (chat) request holds the tool's result.
after = [c for c in calls if not c["side_call"]
         and any(m.get("role") == "tool" and "mcp-code-7391" in json.dumps(m) for m in upstream(c).get("messages", []))]
assert after, [(c["seq"], c["side_call"]) for c in calls]
asked = [c for c in calls if sys.argv[2] in json.dumps(upstream(c).get("tools", []))]
assert asked or sys.argv[3] == "0", "the MCP tool was never offered to the policy"
assert after[0]["prompt_ids"], "no token ids recorded"
print("MCP tool offered in", len(asked), "calls; its result recorded in call", after[0]["seq"])
PY
done
echo "harness_mcp: ok"
