#!/usr/bin/env bash
# forge-proxy --upstream-api anthropic: an Anthropic-format teacher upstream
# (tests/fake_upstream/fake_anthropic.py) behind the proxy. /v1/messages and
# count_tokens pass through untranslated: the client's body byte for byte,
# anthropic-version (defaulted when absent) and anthropic-beta forwarded, the
# proxy's key sent as x-api-key and never the client's. Streams are relayed
# event by event (thinking + signature, text, tool_use fragments) and the
# assembled message is recorded. Upstream errors keep Anthropic's shape; a
# cut stream breaks the client's connection and leaves a failed record; other wire
# formats get 400.
source "$FORGE_SRC/tests/support/proxy_env.sh"

LOG=$WORK/teacher.log
python3 "$FORGE_SRC/tests/fake_upstream/fake_anthropic.py" --port-file "$WORK/teacher.port" --log "$LOG" &
PIDS+=($!)
for _ in $(seq 1 100); do [ -f "$WORK/teacher.port" ] && break; sleep 0.05; done
export FORGE_TEST_TEACHER_KEY=sk-ant-only-the-proxy
STORE=$WORK/forge.db
start_proxy "$STORE" --upstream-api anthropic --upstream "http://127.0.0.1:$(cat "$WORK/teacher.port")" \
  --upstream-key-env FORGE_TEST_TEACHER_KEY --open
register_rollout "$STORE" teach sk-rollout-secret
msg='{"model":"claude-teacher","max_tokens":256,"system":"be brief","messages":[{"role":"user","content":"make a.txt"}],"tools":[{"name":"Write","input_schema":{"type":"object"}}]}'
post() {  # path body [headers...] → body in $WORK/out, code on stdout
  local path=$1 body=$2; shift 2
  curl -s -o "$WORK/out" -w '%{http_code}' -H 'content-type: application/json' -H 'x-api-key: sk-rollout-secret' \
    "$@" --data-binary "$body" "$PROXY$path"
}

# 1. Whole: relayed as is; headers and body forwarded exactly; the key stays proxy-side.
code=$(post '/v1/messages?beta=true' "$msg" -H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: interleaved-thinking-2025-05-14')
[ "$code" = 200 ] || fail "pass-through gave $code: $(cat "$WORK/out")"
jq -e '.id == "msg_fake01" and .content[0].signature == "sig-teacher" and .content[2].input.path == "a.txt"' "$WORK/out" >/dev/null \
  || fail "answer not relayed as is: $(cat "$WORK/out")"
tail -1 "$LOG" > "$WORK/req"
jq -e '.path == "/v1/messages?beta=true"' "$WORK/req" >/dev/null || fail "path/query not kept: $(cat "$WORK/req")"
jq -e '.headers["anthropic-version"] == "2023-06-01" and .headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"' \
  "$WORK/req" >/dev/null || fail "anthropic headers not forwarded: $(cat "$WORK/req")"
jq -e '.headers["x-api-key"] == "sk-ant-only-the-proxy" and (.headers | has("Authorization") | not)' "$WORK/req" >/dev/null \
  || fail "upstream key not sent as x-api-key (or the client's leaked): $(cat "$WORK/req")"
[ "$(jq -r .body "$WORK/req")" = "$msg" ] || fail "the body was not passed through byte for byte"
pass "whole Messages call passed through: body, anthropic-version/-beta, ?beta=true, x-api-key"

code=$(post /v1/messages "$msg")
[ "$code" = 200 ] || fail "call without anthropic-version gave $code"
jq -e '.headers["anthropic-version"] == "2023-06-01" and (.headers | has("anthropic-beta") | not)' <(tail -1 "$LOG") >/dev/null \
  || fail "default anthropic-version not sent: $(tail -1 "$LOG")"
pass "anthropic-version defaults to 2023-06-01; no anthropic-beta invented"

# 2. Streamed: every event relayed in order; the assembled message is recorded.
code=$(post /v1/messages "${msg%\}},\"stream\":true}" -H 'anthropic-version: 2023-06-01' -N)
[ "$code" = 200 ] || fail "stream gave $code"
grep '^event:' "$WORK/out" | cut -d' ' -f2 | tr '\n' ' ' > "$WORK/kinds"
want="message_start ping content_block_start content_block_delta content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop "
[ "$(cat "$WORK/kinds")" = "$want" ] || fail "events not relayed in order: $(cat "$WORK/kinds")"
grep -q '"signature_delta"' "$WORK/out" || fail "signature_delta not relayed"
calls "$STORE" teach > "$WORK/calls.jsonl"
python3 - "$WORK/calls.jsonl" <<'PY' || fail "recorded calls are wrong"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
assert len(calls) == 3, len(calls)
whole, streamed = calls[0], calls[2]
for c in calls:
    assert c["client_format"] == "anthropic" and c["http_status"] == 200 and c["upstream"].startswith("http://127.0.0.1:"), c
    assert c["finish_reason"] == "tool_use" and c["usage"]["output_tokens"] == 17, c
    assert c["completion_ids"] == [] and c["prompt_ids"] == [], "a hosted API has no token ids"
    assert c["request"]["model"] == "claude-teacher"
r = streamed["response"]
assert r["content"][0] == {"type": "thinking", "thinking": "The user wants a file.", "signature": "sig-teacher"}, r
assert r["content"][1] == {"type": "text", "text": "Writing it now."}, r
assert r["content"][2]["input"] == {"path": "a.txt", "text": "hi"}, r
assert r["content"] == whole["response"]["content"], (r, whole["response"])
assert r["stop_reason"] == "tool_use"
PY
if sqlite3 "$STORE" .dump | grep -q sk-ant-only-the-proxy; then fail "the upstream key was recorded"; fi
pass "streamed Messages relayed event by event; assembled message, stop reason and usage recorded; key never recorded"

# 2b. Relayed as the upstream sends it: 18 events 100 ms apart; message_start
# must reach the client well before message_stop.
python3 "$FORGE_SRC/tests/support/stream_timing.py" "$PROXY/v1/messages" \
  '{"model":"claude-teacher","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"script:slow"}]}' \
  'event: message_start' 'event: message_stop' 1.0 'anthropic-version:2023-06-01' \
  || fail "Anthropic stream events were held back instead of relayed as they came"
pass "Anthropic stream events relayed as they arrive"

# 3. count_tokens passes through and is a side call.
code=$(post /v1/messages/count_tokens '{"model":"claude-teacher","messages":[{"role":"user","content":"hi"}]}')
[ "$code" = 200 ] && jq -e '.input_tokens == 42' "$WORK/out" >/dev/null || fail "count_tokens: $code $(cat "$WORK/out")"
[ "$(calls "$STORE" teach | tail -1 | jq -r '.client_format + " " + (.side_call|tostring)')" = "anthropic-count-tokens true" ] \
  || fail "count_tokens not recorded as a side call"
pass "count_tokens passed through and recorded as a side call"

# 4. Errors: the upstream's 401 as is; a cut stream breaks the client's connection
# after what was sent, as the upstream's broke (Claude Code retries that); other formats 400.
code=$(post /v1/messages '{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"script:401"}]}')
[ "$code" = 401 ] && jq -e '.error.type == "authentication_error"' "$WORK/out" >/dev/null || fail "upstream 401: $code $(cat "$WORK/out")"
code=$(post /v1/messages '{"model":"c","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"script:cut"}]}' -N) &&
  fail "a cut stream ended the client's transfer cleanly"
grep -q '^event: message_start' "$WORK/out" || fail "cut stream: what came before the cut is lost: $(cat "$WORK/out")"
grep -q '^event: error' "$WORK/out" && fail "a cut stream ended cleanly with an error event: $(cat "$WORK/out")"
grep -q message_stop "$WORK/out" && fail "a cut stream claimed to have stopped"
calls "$STORE" teach | jq -s -e 'map(select(.http_status == 401)) | length == 1' >/dev/null || fail "401 not recorded"
calls "$STORE" teach | jq -s -e 'map(select(.http_status == 502 and (.error | test("broke off|without message_stop")))) | length == 1' >/dev/null \
  || fail "cut stream not recorded as failed: $(calls "$STORE" teach | tail -1)"
code=$(post /v1/messages '{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"script:529"}]}' -D "$WORK/head")
[ "$code" = 529 ] && jq -e '.error.type == "overloaded_error"' "$WORK/out" >/dev/null || fail "upstream 529: $code $(cat "$WORK/out")"
grep -qi '^retry-after: 3' "$WORK/head" && grep -qi '^anthropic-ratelimit-requests-remaining: 0' "$WORK/head" ||
  fail "529 lost the upstream's retry headers: $(cat "$WORK/head")"
code=$(post /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}]}')
[ "$code" = 400 ] && jq -e '.error.message | test("Anthropic")' "$WORK/out" >/dev/null || fail "chat call to an Anthropic upstream: $code"
pass "upstream 401 and 529 (with retry-after) relayed, cut stream breaks the client connection (recorded 502), other formats 400"
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true

status=0
"$FORGE_BIN/forge-proxy" --store "$WORK/x.db" --upstream-api grpc --upstream http://127.0.0.1:1 --port "$(free_port)" 2>"$WORK/err" || status=$?
[ "$status" = 64 ] || fail "--upstream-api grpc: exit $status"
pass "an unknown --upstream-api is a usage error (64)"
echo "all Anthropic pass-through checks passed"
