#!/usr/bin/env bash
# A real harness inside a Docker pod calling the pod's MCP server, as the
# harbor-cookbook's mcp-tools recipe runs: Claude Code (from npm, mounted
# read-only into forge-node:bookworm) in the main container of a compose task
# whose mcp-server service (tests/data/harbor/mcp-server's: a streamable-HTTP
# MCP server, busybox httpd + CGI) is a sidecar in main's network namespace,
# named in task.toml's [[environment.mcp_servers]] by its service name. The
# task has allow_internet = false, so with --proxy the pod reaches
# forge-proxy only. The scripted model calls mcp__codes__secret_code, then
# writes the answer. Checks that the sidecar saw the harness's initialize and
# tools/call (Claude Code is its only client), that the tool's result is in
# the recorded next call, and that forge-verify rewards it.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
source "$FORGE_SRC/tests/support/scripted_model.sh"
install_dir="${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}"
claude="$install_dir/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
[[ -x "$claude" ]] || { echo "FAIL: $claude missing: run scripts/install-harnesses.sh" >&2; exit 1; }
source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker
image="${FORGE_NODE_IMAGE:-forge-node:bookworm}"
FORGE_NODE_IMAGE="$image" bash "$FORGE_SRC/scripts/make-node-image.sh" >/dev/null
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null

harness_test forge-mcp-pod "mcp-pod-$$" docker launch.err verify.err proxy.err

# The corpus task, its main image made one a Node.js harness runs in.
cp -r "$FORGE_SRC/tests/data/harbor/mcp-server" "$work/task"
rm -rf "$work/task/expected"
printf 'FROM %s\nWORKDIR /work\n' "$image" >"$work/task/environment/Dockerfile"

cat >"$work/scenario.json" <<'JSON'
{"steps": [
  {"tool_call": {"name": "mcp__codes__secret_code", "arguments": {}}},
  {"tool_call": {"name": "Write", "arguments": {"file_path": "/work/answer.txt", "content": "mcp-code-7391"}}},
  {"text": "The code is mcp-code-7391."}
]}
JSON
start_scripted_model "$work" --max-tokens-cap 4096

echo "== forge-launch: Claude Code in the pod's main container, the MCP server a sidecar"
"$FORGE_BIN/forge-launch" --backend docker --store "$work/forge.db" --run-id "$run" --harness claude-code \
  --harness-install-dir "$install_dir" --proxy "$proxy" --model policy --hold \
  "$work/task" >"$work/rollouts.jsonl" 2>"$work/launch.err" || fail "forge-launch exit $?"
[[ "$(jq -r .outcome "$work/rollouts.jsonl")" == ok ]] ||
  fail "outcome: $(jq -c '{outcome, error, exit_code, logs}' "$work/rollouts.jsonl" | head -c 2000)"
rollout=$(jq -r .rollout_id "$work/rollouts.jsonl")
main=$(jq -r .sandbox.id "$work/rollouts.jsonl")
[[ "$(docker inspect -f '{{.HostConfig.NetworkMode}}' "$main")" == none ]] ||
  fail "allow_internet = false with --proxy should leave main proxy-only (NetworkMode none)"
sidecar="forge-$rollout-mcp-server"
[[ "$(docker inspect -f '{{.HostConfig.NetworkMode}}' "$sidecar")" == "container:$main" ]] ||
  fail "the MCP server is not in main's network namespace"
calls=$(docker exec "$sidecar" cat /tmp/mcp-calls.log) || fail "no MCP log in the sidecar"
grep -qx initialize <<<"$calls" && grep -qx "secret_code called" <<<"$calls" ||
  fail "the sidecar never saw initialize and the tool call: $(tr '\n' ' ' <<<"$calls")"

echo "== the tool's result is in the recorded next call"
"$FORGE_BIN/forge-proxy" --store "$work/forge.db" --dump-rollout "$rollout" >"$work/calls.jsonl"
python3 - "$work/calls.jsonl" <<'PY' || fail "recorded calls"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
J = lambda v: json.loads(v) if isinstance(v, str) else v
up = lambda c: J(c["upstream_request"]) if c.get("upstream_request") else J(c["request"])
after = [c for c in calls if not c["side_call"]
         and any(m.get("role") == "tool" and "mcp-code-7391" in json.dumps(m) for m in up(c).get("messages", []))]
assert after, [(c["seq"], c["side_call"]) for c in calls]
assert after[0]["prompt_ids"], "no token ids recorded"
print("the MCP tool's result is in call", after[0]["seq"], "of", len(calls))
PY

echo "== forge-verify rewards it; releasing the pod removes the sidecar"
"$FORGE_BIN/forge-verify" --store "$work/forge.db" "$work/rollouts.jsonl" >"$work/verdicts.jsonl" \
  2>"$work/verify.err" || fail "forge-verify exit $?: $(jq -c .verdict "$work/verdicts.jsonl" | head -c 1500)"
[[ "$(jq -r .verdict.reward "$work/verdicts.jsonl")" == 1 ]] || fail "verdict: $(cat "$work/verdicts.jsonl")"
[[ -z "$(docker ps -aq --filter "label=forge.run=$run")" ]] || fail "pod containers left after release"
echo "harness_mcp_pod: ok"
