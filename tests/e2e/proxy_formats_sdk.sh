#!/usr/bin/env bash
# The official SDKs of the three translated wire formats as clients of
# forge-proxy in front of the scripted fake upstream: @anthropic-ai/sdk
# (/v1/messages), openai (/v1/responses) and @google/genai (Gemini). Each
# makes text and tool calls, streamed and not, and a multi-turn tool round
# trip; every call must be recorded under the rollout with its token ids.
# The SDKs are installed under the build tree (not committed).
source "$FORGE_SRC/tests/support/proxy_env.sh"

SDK_DIR=$FORGE_BIN/npm-sdks
if [ ! -d "$SDK_DIR/node_modules/@anthropic-ai/sdk" ] || [ ! -d "$SDK_DIR/node_modules/openai" ] ||
   [ ! -d "$SDK_DIR/node_modules/@google/genai" ]; then
  mkdir -p "$SDK_DIR"
  (cd "$SDK_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund openai @anthropic-ai/sdk @google/genai >/dev/null 2>&1) ||
    fail "npm install of the SDKs failed (needs the npm registry)"
fi
for client in anthropic_client responses_client genai_client; do
  cp "$FORGE_SRC/tests/e2e/sdk/$client.mjs" "$SDK_DIR/"
done

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT"

check_rollout() {  # rollout expected_format min_calls
  calls "$STORE" "$1" > "$WORK/$1.jsonl"
  python3 - "$WORK/$1.jsonl" "$2" "$3" <<'PY' || fail "$1: recorded calls do not match"
import json, sys
path, fmt, least = sys.argv[1], sys.argv[2], int(sys.argv[3])
calls = [json.loads(l) for l in open(path)]
ok = [c for c in calls if c["http_status"] == 200]
assert len(ok) >= least, f"{len(ok)} successful calls, want >= {least}"
for c in ok:
    assert c["client_format"].startswith(fmt), c["client_format"]
    if not c.get("side_call"):
        assert c["completion_ids"], f"call {c.get('seq')} has no completion ids"
        assert c["prompt_ids"], f"call {c.get('seq')} has no prompt ids"
side = [c for c in ok if c.get("side_call")]
assert any("count" in c["client_format"] for c in side), "count-tokens call not tagged as a side call"
print(f"{len(ok)} calls recorded, {len(side)} side call(s)")
PY
}

register_rollout "$STORE" anthropic anthropic-secret
PROXY_URL=$PROXY ROLLOUT_SECRET=anthropic-secret node "$SDK_DIR/anthropic_client.mjs" ||
  fail "the Anthropic SDK client failed (proxy log: $(tail -5 "$WORK/proxy.err"))"
check_rollout anthropic anthropic 6
# The round trip reached the upstream as chat: assistant tool_calls, then the tool result.
python3 - "$FAKE_LOG" <<'PY' || fail "the Anthropic tool round trip was not translated to chat tool messages"
import json, sys
bodies = [json.loads(l)["body"] for l in open(sys.argv[1])]
trip = [b for b in bodies if any(m.get("role") == "tool" for m in b["messages"])][0]
roles = [m["role"] for m in trip["messages"]]
assert roles == ["user", "assistant", "tool", "user"], roles
assert trip["messages"][1]["tool_calls"][0]["id"] == trip["messages"][2]["tool_call_id"]
assert trip["messages"][2]["content"] == "sunny"
PY
pass "Anthropic SDK: messages streamed and not, tool round trip, count_tokens (side call), errors"

register_rollout "$STORE" responses responses-secret
: > "$FAKE_LOG"
PROXY_URL=$PROXY ROLLOUT_SECRET=responses-secret node "$SDK_DIR/responses_client.mjs" ||
  fail "the Responses SDK client failed (proxy log: $(tail -5 "$WORK/proxy.err"))"
python3 - "$FAKE_LOG" <<'PY' || fail "previous_response_id did not rebuild the conversation"
import json, sys
bodies = [json.loads(l)["body"] for l in open(sys.argv[1])]
trips = [b for b in bodies if any(m.get("role") == "tool" for m in b["messages"])]
assert len(trips) == 2, len(trips)  # by previous_response_id, and by replayed items
for trip in trips:
    roles = [m["role"] for m in trip["messages"]]
    assert roles == ["user", "assistant", "tool", "user"], roles
    assert trip["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"
PY
calls "$STORE" responses | python3 -c '
import json, sys
ok = [json.loads(l) for l in sys.stdin]
ok = [c for c in ok if c["http_status"] == 200]
assert len(ok) >= 6 and all(c["client_format"] == "responses" and c["completion_ids"] for c in ok), len(ok)
' || fail "responses: recorded calls do not match"
pass "OpenAI SDK Responses: streamed and not, function calls, previous_response_id and store:false round trips"

register_rollout "$STORE" gemini gemini-secret
PROXY_URL=$PROXY ROLLOUT_SECRET=gemini-secret node "$SDK_DIR/genai_client.mjs" ||
  fail "the Gen AI SDK client failed (proxy log: $(tail -5 "$WORK/proxy.err"))"
check_rollout gemini gemini 6
pass "Google Gen AI SDK: generateContent, streamGenerateContent, countTokens (side call), function round trip"
