#!/usr/bin/env bash
# The real opencode (npm opencode-ai 1.18.33, a bun-compiled binary) creates
# a file through forge-proxy in front of the scripted fake upstream: its
# write tool call, then a final answer. Checks the file, the verdict, that
# every call is recorded for the rollout with token ids, and that opencode's
# title-generation call is tagged as a side call. npm's registry and the
# model catalog point at a closed loopback port (see harnesses/opencode.json).
source "$FORGE_SRC/tests/support/harness_e2e.sh"
require_installed opencode/node_modules/opencode-linux-x64/bin/opencode

harness_e2e opencode write '{"filePath": "@FILE@", "content": "forge\n"}'

python3 - "$CALLS" <<'PY' || fail "opencode's calls as recorded: $(jq -c '{seq, side_call, system: .request.messages[0].content[:60]}' "$CALLS")"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
side = [c for c in calls if c["side_call"]]
assert len(side) == 1, "expected one side call (the title), got %d" % len(side)
title = side[0]
assert title["request"]["messages"][0]["content"].startswith("You are a title generator")
assert title["http_status"] == 200 and title["completion_ids"], "the title call is recorded whole"
agent = [c for c in calls if not c["side_call"]]
assert all(c["request"]["tool_choice"] == "auto" for c in agent)
PY
pass "opencode's title call recorded and tagged as a side call"
echo PASS
