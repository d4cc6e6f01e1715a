#!/usr/bin/env bash
# forge-proxy --export and --replay FILE: calls recorded against the fake
# upstream are exported as a recorded-exchange file (JSONL), then served from
# that file with no upstream at all — whole, streamed and translated
# (Anthropic) — and recorded again with the original token ids. A request
# recorded twice is answered with each recording in turn. Bad lines are
# reported as file:line and skipped; the good lines are still served.
source "$FORGE_SRC/tests/support/proxy_env.sh"

start_fake up
REC=$WORK/recorded.db
start_proxy "$REC" --upstream "http://127.0.0.1:$FAKE_PORT" --open
chat='{"model":"m","messages":[{"role":"user","content":"hello replay"}]}'
stream='{"model":"m","stream":true,"messages":[{"role":"user","content":"stream replay"}]}'
anthropic='{"model":"claude","max_tokens":64,"messages":[{"role":"user","content":"anthropic replay"}]}'
curl -sf -o "$WORK/chat.orig" -d "$chat" "$PROXY/r/one/v1/chat/completions" || fail "recording a chat call"
curl -sfN -o /dev/null -d "$stream" "$PROXY/r/one/v1/chat/completions" || fail "recording a streamed call"
curl -sf -o /dev/null -d "$anthropic" "$PROXY/r/two/v1/messages" || fail "recording an Anthropic call"
curl -s -o /dev/null -d '{"model":"m","messages":[{"role":"user","content":"script:500"}]}' "$PROXY/r/two/v1/chat/completions"
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true

# 1. Export: one line per recorded call, failed calls included, rollouts in recorded order.
"$FORGE_BIN/forge-proxy" --store "$REC" --export > "$WORK/calls.jsonl" || fail "--export failed"
[ "$(wc -l < "$WORK/calls.jsonl")" = 4 ] || fail "export wrote $(wc -l < "$WORK/calls.jsonl") lines, want 4"
[ "$(jq -r .schema "$WORK/calls.jsonl" | sort -u)" = forge.call/1 ] || fail "export lines lack the schema tag"
[ "$(jq -r .rollout_id "$WORK/calls.jsonl" | tr '\n' ' ')" = "one one two two " ] || fail "export order"
jq -e 'select(.http_status == 500)' "$WORK/calls.jsonl" >/dev/null || fail "the failed call was not exported"
pass "--export writes every recorded call as forge.call/1 JSONL"

# 2. A second recording of the chat request (another sample), and bad lines.
FILE=$WORK/exchanges.jsonl
cp "$WORK/calls.jsonl" "$FILE"
jq -c 'select(.request.messages[0].content == "hello replay") | .upstream_response.choices[0].message.content = "second sample"
       | .completion_ids = [7, 8, 9]' "$WORK/calls.jsonl" >> "$FILE"
echo '{"client_format": "openai-chat", "request": {"model": "m"' >> "$FILE"                       # line 6: not JSON
echo '{"client_format": "openai-chat", "request": {"model": "x", "messages": []}}' >> "$FILE"     # line 7: no answer
echo '{"client_format": "telepathy", "request": {}, "upstream_response": {"choices": [{}]}}' >> "$FILE"  # line 8
echo '{"schema": "forge.call/9", "client_format": "openai-chat"}' >> "$FILE"                      # line 9
echo '{"client_format": "openai-chat", "request": {"x": 1}, "upstream_response": {"choices": [{}]}, "completion_ids": ["a"]}' >> "$FILE"  # line 10

REPLAYED=$WORK/replayed.db
start_proxy "$REPLAYED" --replay "$FILE" --open
for n in 6 7 8 9 10; do
  grep -q "exchanges.jsonl:$n:" "$WORK/proxy.err" || fail "bad line $n not reported as file:line: $(cat "$WORK/proxy.err")"
done
grep -q "exchanges.jsonl:7:.*upstream_response" "$WORK/proxy.err" || fail "line 7's message does not name the field"
grep -q "exchanges.jsonl:8:.*client_format" "$WORK/proxy.err" || fail "line 8's message does not name the field"
grep -q "exchanges.jsonl:10:.*completion_ids" "$WORK/proxy.err" || fail "line 10's message does not name the field"
grep -q "replaying 4 recorded responses .*5 bad lines skipped" "$WORK/proxy.err" || fail "load summary: $(cat "$WORK/proxy.err")"
pass "bad lines reported as file:line naming the field, and skipped"

# 3. Served from the file: whole, streamed, translated; the two samples in turn.
a=$(curl -s -d "$chat" "$PROXY/r/one/v1/chat/completions" | jq -r '.choices[0].message.content')
b=$(curl -s -d "$chat" "$PROXY/r/one/v1/chat/completions" | jq -r '.choices[0].message.content')
c=$(curl -s -d "$chat" "$PROXY/r/one/v1/chat/completions" | jq -r '.choices[0].message.content')
[ "$a" = "$(jq -r '.choices[0].message.content' "$WORK/chat.orig")" ] || fail "first replay answered '$a'"
[ "$b" = "second sample" ] && [ "$c" = "$a" ] || fail "recordings not served in turn: '$a' '$b' '$c'"
curl -sN -d "$stream" "$PROXY/r/one/v1/chat/completions" > "$WORK/sse"
grep -q '^data: \[DONE\]' "$WORK/sse" && grep -q '"delta"' "$WORK/sse" || fail "streamed replay: $(cat "$WORK/sse")"
curl -s -d "$anthropic" "$PROXY/r/two/v1/messages" > "$WORK/msg"
jq -e '.type == "message" and (.content[0].text | length > 0)' "$WORK/msg" >/dev/null || fail "Anthropic replay: $(cat "$WORK/msg")"
curl -sN -d "${anthropic%\}},\"stream\":true}" "$PROXY/r/two/v1/messages" > "$WORK/msg.sse"
grep -q '^event: message_stop' "$WORK/msg.sse" || fail "streamed Anthropic replay: $(cat "$WORK/msg.sse")"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' -d '{"model":"m","messages":[{"role":"user","content":"never seen"}]}' "$PROXY/v1/chat/completions")
[ "$code" = 404 ] || fail "unmatched request gave $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -d '{"model":"x","messages":[]}' "$PROXY/v1/chat/completions")
[ "$code" = 404 ] || fail "a bad line's request was served ($code)"
pass "replay from the file: whole, streamed, Anthropic; two samples in turn; 404 when nothing matches"

# 4. Replayed calls are recorded again, with the recorded token ids.
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
"$FORGE_BIN/forge-proxy" --store "$REPLAYED" --export > "$WORK/again.jsonl"
python3 - "$WORK/calls.jsonl" "$WORK/again.jsonl" <<'PY' || fail "replayed calls were not recorded with their token ids"
import json, sys
orig = [json.loads(l) for l in open(sys.argv[1])]
again = [json.loads(l) for l in open(sys.argv[2])]
assert len(again) == 6, len(again)
first = next(c for c in orig if c["request"]["messages"][0]["content"] == "hello replay")
replayed = [c for c in again if c["request"].get("messages", [{}])[0].get("content") == "hello replay"]
assert [c["completion_ids"] for c in replayed] == [first["completion_ids"], [7, 8, 9], first["completion_ids"]], replayed
assert replayed[0]["prompt_ids"] == first["prompt_ids"] and first["prompt_ids"]
assert replayed[0]["logprobs"] == first["logprobs"]
assert all(c["upstream"].startswith("replay:") and c["http_status"] == 200 for c in again)
assert {c["client_format"] for c in again} == {"openai-chat", "anthropic"}
PY
pass "replayed calls recorded again with the recorded token ids and logprobs"

# 5. A file with nothing servable is refused at start (exit 65), naming the file.
printf '{"client_format":"openai-chat"}\nnot json\n' > "$WORK/useless.jsonl"
status=0
"$FORGE_BIN/forge-proxy" --store "$WORK/x.db" --replay "$WORK/useless.jsonl" --port "$(free_port)" 2>"$WORK/err" || status=$?
[ "$status" = 65 ] && grep -q "useless.jsonl: no recorded call" "$WORK/err" || fail "useless file: exit $status, $(cat "$WORK/err")"
status=0
"$FORGE_BIN/forge-proxy" --store "$WORK/x.db" --replay "$WORK/missing.jsonl" --port "$(free_port)" 2>"$WORK/err" || status=$?
[ "$status" = 66 ] && grep -q "missing.jsonl" "$WORK/err" || fail "missing file: exit $status, $(cat "$WORK/err")"
pass "a file with nothing servable (65) or missing (66) is refused at start"
echo "all proxy replay-file checks passed"
