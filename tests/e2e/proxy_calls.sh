#!/usr/bin/env bash
# forge-proxy end to end over loopback against the scripted fake upstream:
# non-streaming and streaming calls, tool-call fragments, token ids and
# logprobs captured AND stripped, completions, attribution (secret, path,
# 401), malformed JSON, upstream 500, timeout, disconnect mid-stream,
# SDK-retry dedupe, pause/resume, policy version, metrics and SIGTERM drain.
source "$FORGE_SRC/tests/support/proxy_env.sh"

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT/v1" --keepalive 0.2
MAIN_PID=$PROXY_PID
register_rollout "$STORE" r1 secret-one
register_rollout "$STORE" r2 secret-two

post() {  # path secret body → body on stdout, status in $WORK/status
  curl -s -o "$WORK/out" -w '%{http_code}' -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
    -d "$3" "$PROXY$1" > "$WORK/status" || true
  cat "$WORK/out"
}
status() { cat "$WORK/status"; }

# 1. Non-streaming chat: answered, ids and logprobs recorded, stripped from the answer.
out=$(post /v1/chat/completions secret-one '{"model":"m","messages":[{"role":"user","content":"hi"}]}')
[ "$(status)" = 200 ] || fail "non-stream status $(status): $out"
echo "$out" | py 'd["choices"][0]["message"]["content"]=="hello from fake!"' || fail "content: $out"
echo "$out" | py '"prompt_token_ids" not in d and "token_ids" not in d["choices"][0] and d["choices"][0]["logprobs"] is None' \
  || fail "vLLM fields leaked to the client: $out"
tail -1 "$FAKE_LOG" | py 'd["body"]["return_token_ids"] is True and d["body"]["logprobs"] is True and d["body"]["top_logprobs"]==0' \
  || fail "proxy did not ask the upstream for ids and logprobs"
if tail -1 "$FAKE_LOG" | grep -q secret-one; then fail "the rollout secret reached the upstream"; fi
calls "$STORE" r1 | tail -1 | py 'd["completion_ids"]==[1000,1001,1002,1003] and len(d["prompt_ids"])>0 and d["logprobs"]==[-0.125,-0.25,-0.375,-0.5] and d["finish_reason"]=="stop" and d["http_status"]==200 and d["client_format"]=="openai-chat" and d["response"]["choices"][0]["message"]["content"]=="hello from fake!" and d["usage"]["completion_tokens"]==4 and d["model"]=="m" and d["upstream_request"]["return_token_ids"] is True and d["upstream_request"]["messages"]==d["request"]["messages"]' \
  || fail "non-stream record: $(calls "$STORE" r1 | tail -1)"
pass "non-streaming chat recorded with ids and logprobs, stripped for the client"

# 1b. A client that sends "Expect: 100-continue" holds its body back until
# told to go on (curl does for large bodies): the proxy says so at once.
python3 -c 'import json; print(json.dumps({"model":"m","messages":[{"role":"user","content":"x"*300000}]}))' > "$WORK/big.json"
start=$(date +%s.%N)
code=$(timeout 15 curl -s -o "$WORK/out" -w '%{http_code}' --expect100-timeout 30 -H 'Expect: 100-continue' \
  -H 'Authorization: Bearer secret-one' -H 'Content-Type: application/json' --data-binary @"$WORK/big.json" \
  "$PROXY/v1/chat/completions" || true)
took=$(python3 -c "import time; print(time.time() - $start)")
[ "$code" = 200 ] || fail "Expect: 100-continue call: status $code: $(head -c 300 "$WORK/out")"
python3 -c "import sys; sys.exit(0 if $took < 10 else 1)" || fail "the client waited for 100 Continue (${took} s)"
calls "$STORE" r1 | tail -1 | py 'len(d["request"]["messages"][0]["content"])==300000' || fail "the 300 KB request was not recorded whole"
pass "Expect: 100-continue answered; a 300 KB body read and recorded whole"

# 2. The client asked for logprobs itself: it keeps them, still no ids.
out=$(post /v1/chat/completions secret-one '{"model":"m","logprobs":true,"messages":[{"role":"user","content":"again"}]}')
echo "$out" | py 'len(d["choices"][0]["logprobs"]["content"])==4 and "token_ids" not in d["choices"][0]' || fail "asked-for logprobs: $out"
pass "logprobs kept when the client asked"

# 3. Streaming chat.
curl -sN -H 'Authorization: Bearer secret-one' -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:words:6"}]}' \
  "$PROXY/v1/chat/completions" > "$WORK/sse"
grep -q '^data: \[DONE\]' "$WORK/sse" || fail "no [DONE]: $(cat "$WORK/sse")"
if grep -q 'token_ids' "$WORK/sse"; then fail "token ids leaked in the stream"; fi
if grep -q '"usage"' "$WORK/sse"; then fail "usage chunk sent though the client did not ask"; fi
text=$(grep '^data: {' "$WORK/sse" | sed 's/^data: //' | python3 -c 'import sys,json; print("".join((json.loads(l)["choices"][0]["delta"].get("content") or "") for l in sys.stdin if json.loads(l)["choices"]))')
[ "$text" = "w0 w1 w2 w3 w4 w5 " ] || fail "streamed text: '$text'"
calls "$STORE" r1 | tail -1 | py 'd["completion_ids"]==list(range(1000,1006)) and len(d["prompt_ids"])>0 and len(d["logprobs"])==6 and d["response"]["choices"][0]["message"]["content"]=="w0 w1 w2 w3 w4 w5 " and d["usage"]["completion_tokens"]==6 and d["first_token_at"]>0' \
  || fail "stream record: $(calls "$STORE" r1 | tail -1)"
pass "streaming chat relayed and recorded (ids as deltas, prompt ids from the first chunk)"
curl -sN -H 'Authorization: Bearer secret-one' -d '{"model":"m","stream":true,"logprobs":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"script:words:6"}]}' \
  "$PROXY/v1/chat/completions" > "$WORK/sse"
[ "$(grep -c '"logprob"' "$WORK/sse")" -ge 6 ] || fail "asked-for logprobs not streamed: $(cat "$WORK/sse")"
calls "$STORE" r1 | tail -1 | py '[e["logprob"] for e in d["response"]["choices"][0]["logprobs"]["content"]]==d["logprobs"] and len(d["logprobs"])==6 and d["response"]["choices"][0]["finish_reason"]==d["finish_reason"]=="stop" and d["response"]["usage"]["completion_tokens"]==6 and d["upstream_response"]["usage"]==d["usage"]' \
  || fail "stream record with logprobs: $(calls "$STORE" r1 | tail -1)"
pass "a streamed answer's asked-for logprobs recorded in its response, one entry a token"

# 3b. Events go out as the upstream sends them, not when the stream ends: the
# fake spends ~1 s on 20 tokens (50 ms apart); the first must reach the client
# long before [DONE]. (A proxy that waited to fill its read buffer showed both
# at the same moment.)
python3 "$FORGE_SRC/tests/support/stream_timing.py" "$PROXY/v1/chat/completions" \
  '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:slow:20"}]}' '"w0 "' 'data: [DONE]' 0.5 \
  'Authorization:Bearer secret-one' || fail "stream events were held back instead of relayed as they came"
# The same through a translated format (an Anthropic client, the chat upstream).
python3 "$FORGE_SRC/tests/support/stream_timing.py" "$PROXY/v1/messages" \
  '{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"script:slow:20"}]}' \
  'content_block_delta' 'event: message_stop' 0.5 'x-api-key:secret-one' \
  || fail "translated stream events were held back instead of relayed as they came"
pass "stream events relayed as they arrive, chat and translated (first token well before the end)"

# 4. Tool call streamed in fragments.
curl -sN -H 'Authorization: Bearer secret-one' -d '{"model":"m","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"script:tool"}]}' \
  "$PROXY/v1/chat/completions" > "$WORK/sse"
[ "$(grep -c '"arguments"' "$WORK/sse")" = 3 ] || fail "tool-call fragments not relayed one by one: $(cat "$WORK/sse")"
grep -q '"usage"' "$WORK/sse" || fail "usage chunk missing though the client asked"
calls "$STORE" r1 | tail -1 | py 'json.loads(d["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])=={"city":"Paris"} and d["finish_reason"]=="tool_calls"' \
  || fail "tool call record: $(calls "$STORE" r1 | tail -1)"
pass "tool-call fragments relayed and assembled in the record"

# 5. Completions, whole and streamed (prompt ids on the choice).
out=$(post /v1/completions secret-two '{"model":"m","prompt":"say hi"}')
echo "$out" | py 'd["choices"][0]["text"]=="hello from fake!" and d["choices"][0]["logprobs"] is None and "token_ids" not in d["choices"][0] and "prompt_token_ids" not in d["choices"][0]' || fail "completions: $out"
curl -sN -H 'Authorization: Bearer secret-two' -d '{"model":"m","prompt":"script:words:3","stream":true}' "$PROXY/v1/completions" > "$WORK/sse"
grep -q '^data: \[DONE\]' "$WORK/sse" || fail "completions stream: $(cat "$WORK/sse")"
[ "$(calls "$STORE" r2 | python3 -c 'import sys,json; print(sum(1 for l in sys.stdin if json.loads(l)["prompt_ids"] and json.loads(l)["completion_ids"] and json.loads(l)["logprobs"]))')" = 2 ] \
  || fail "completions records: $(calls "$STORE" r2)"
pass "completions (whole and streamed) recorded with ids"

# 6. Attribution failures and bad input, in OpenAI's error shape.
out=$(post /v1/chat/completions not-a-secret '{"model":"m","messages":[]}')
[ "$(status)" = 401 ] || fail "unknown secret gave $(status)"
echo "$out" | py 'd["error"]["code"]=="invalid_api_key" and "unknown" in d["error"]["message"]' || fail "401 body: $out"
out=$(curl -s -w '\n%{http_code}' -H 'x-api-key: secret-one' -d '{"model": "m", "messages": [' "$PROXY/v1/chat/completions")
[ "$(echo "$out" | tail -1)" = 400 ] || fail "malformed JSON gave $(echo "$out" | tail -1)"
echo "$out" | sed -n 1p | py 'd["error"]["type"]=="invalid_request_error" and "not valid JSON" in d["error"]["message"]' || fail "400 body: $out"
out=$(post /v1/chat/completions secret-one '{"model":"m","messages":"nope"}')
[ "$(status)" = 400 ] && echo "$out" | py '"messages" in d["error"]["message"]' || fail "bad messages: $(status) $out"
pass "401 for an unknown secret, 400 for malformed JSON and bad fields"

# 7. Path attribution: /r/<rollout>/v1 with that rollout's secret.
before=$(calls "$STORE" r2 | wc -l)
out=$(post /r/r2/v1/chat/completions secret-two '{"model":"m","messages":[{"role":"user","content":"p"}]}')
[ "$(status)" = 200 ] || fail "path form: $(status) $out"
[ "$(calls "$STORE" r2 | wc -l)" = $((before + 1)) ] || fail "path-form call not recorded under r2"
post /r/r2/v1/chat/completions not-a-secret '{"model":"m","messages":[{"role":"user","content":"p"}]}' >/dev/null
[ "$(status)" = 401 ] || fail "a rollout id in the path without its secret must be refused ($(status))"
pass "path-prefix attribution"

# 7b. A rollout that has ended no longer owns its secret, in either form.
register_rollout "$STORE" r3 secret-three
store_write "$STORE" "UPDATE rollouts SET status = 'finished' WHERE id = 'r3'"
register_rollout "$STORE" r4 secret-four
store_write "$STORE" "UPDATE rollouts SET status = 'cancelled' WHERE id = 'r4'"
out=$(post /v1/chat/completions secret-three '{"model":"m","messages":[{"role":"user","content":"late"}]}')
[ "$(status)" = 401 ] && echo "$out" | py '"r3 has finished" in d["error"]["message"]' || fail "a finished rollout's secret: $(status) $out"
out=$(post /r/r4/v1/chat/completions secret-four '{"model":"m","messages":[{"role":"user","content":"late"}]}')
[ "$(status)" = 401 ] && echo "$out" | py '"r4 has been cancelled" in d["error"]["message"]' || fail "a cancelled rollout's secret: $(status) $out"
[ -z "$(calls "$STORE" r3)$(calls "$STORE" r4)" ] || fail "calls recorded for ended rollouts"
pass "an ended rollout's secret is refused, saying so"

# 8. Upstream 500: the client gets an error in its format; the call is recorded as failed.
out=$(post /v1/chat/completions secret-two '{"model":"m","messages":[{"role":"user","content":"script:500"}]}')
[ "$(status)" = 500 ] && echo "$out" | py '"exploded" in d["error"]["message"]' || fail "upstream 500: $(status) $out"
calls "$STORE" r2 | tail -1 | py 'd["http_status"]==500 and "exploded" in d["error"]' || fail "500 record"
pass "upstream 500 relayed and recorded as failed"

# 9. Disconnect mid-stream: the client's connection breaks after the tokens
# sent, as the upstream's did (curl: 18, a partial transfer); no [DONE], no
# clean error event; the call is recorded as failed with its partial tokens.
rc=0
curl -sN -H 'Authorization: Bearer secret-two' -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:disconnect"}]}' \
  "$PROXY/v1/chat/completions" > "$WORK/sse" || rc=$?
[ "$rc" = 18 ] || fail "a cut stream must end the client's transfer unfinished (curl exit $rc, want 18): $(cat "$WORK/sse")"
if grep -q '^data: \[DONE\]' "$WORK/sse"; then fail "a cut stream must not end with [DONE]"; fi
if grep -q '^data: {"error"' "$WORK/sse"; then fail "a cut stream ended cleanly with an error event: $(cat "$WORK/sse")"; fi
[ "$(grep -c '"content"' "$WORK/sse")" -ge 3 ] || fail "the tokens before the cut did not reach the client: $(cat "$WORK/sse")"
calls "$STORE" r2 | tail -1 | py 'd["http_status"]==502 and "broke off" in d["error"] and len(d["completion_ids"])==3' || fail "cut-stream record: $(calls "$STORE" r2 | tail -1)"
pass "disconnect mid-stream breaks the client's stream after the tokens sent; a failed record with them"

# 10. SDK retry of the same request is recorded once; a fresh identical call twice.
n0=$(calls "$STORE" r1 | wc -l)
body='{"model":"m","messages":[{"role":"user","content":"retry me"}]}'
for count in 0 1 2; do
  curl -s -o /dev/null -H 'Authorization: Bearer secret-one' -H "x-stainless-retry-count: $count" -d "$body" "$PROXY/v1/chat/completions"
done
[ "$(calls "$STORE" r1 | wc -l)" = $((n0 + 1)) ] || fail "retries recorded more than once"
curl -s -o /dev/null -H 'Authorization: Bearer secret-one' -H "x-stainless-retry-count: 0" -d "$body" "$PROXY/v1/chat/completions"
[ "$(calls "$STORE" r1 | wc -l)" = $((n0 + 2)) ] || fail "a fresh identical call was dropped"
pass "x-stainless-retry-count retries not recorded twice"

# 11. Pause (wait mode), resume; pause (reject mode) → 429 + Retry-After; policy version.
curl -s -X POST "$PROXY/admin/policy-version?version=7" | py 'd["policy_version"]==7' || fail "policy version"
curl -s -X POST "$PROXY/admin/pause" | py 'd["paused"] is True' || fail "pause"
curl -s -H 'Authorization: Bearer secret-one' -d '{"model":"m","messages":[{"role":"user","content":"paused"}]}' \
  "$PROXY/v1/chat/completions" > "$WORK/paused" &
waiter=$!
# A client that gives up during the pause is not sent upstream on resume.
curl -s -o /dev/null --max-time 0.5 -H 'Authorization: Bearer secret-one' \
  -d '{"model":"m","messages":[{"role":"user","content":"left during the pause"}]}' "$PROXY/v1/chat/completions" || true
sleep 1
kill -0 $waiter 2>/dev/null || fail "a call completed while paused"
curl -s -X POST "$PROXY/admin/policy-version" -d '{"version": 8}' >/dev/null
curl -s -X POST "$PROXY/admin/resume" | py 'd["paused"] is False' || fail "resume"
wait $waiter
py 'd["choices"][0]["message"]["content"]=="hello from fake!"' < "$WORK/paused" || fail "paused call after resume: $(cat "$WORK/paused")"
if grep -q "left during the pause" "$FAKE_LOG"; then fail "a call whose client left during the pause went upstream"; fi
calls "$STORE" r1 | tail -1 | py 'd["policy_version_start"]==8' || fail "policy version not recorded"
curl -s -X POST "$PROXY/admin/pause?mode=reject" >/dev/null
code=$(curl -s -D "$WORK/hdr" -o "$WORK/out" -w '%{http_code}' -H 'Authorization: Bearer secret-one' -d "$body" "$PROXY/v1/chat/completions")
[ "$code" = 429 ] && grep -qi '^retry-after:' "$WORK/hdr" || fail "reject mode gave $code"
curl -s -X POST "$PROXY/admin/resume" >/dev/null
curl -s -X POST "$PROXY/admin/drain" | py 'd["in_flight"]==0' || fail "drain"
pass "pause (wait and reject; a client that left meanwhile not sent upstream), resume, drain, policy version"

# 12. Metrics.
curl -s "$PROXY/metrics" > "$WORK/metrics"
for m in forge_proxy_requests_total forge_proxy_in_flight forge_proxy_call_latency_seconds_bucket \
         forge_proxy_upstream_errors_total forge_proxy_records_written_total forge_proxy_store_lag_seconds; do
  grep -q "^$m" "$WORK/metrics" || fail "metric $m missing"
done
[ "$(grep '^forge_proxy_records_written_total' "$WORK/metrics" | cut -d' ' -f2)" -ge 10 ] || fail "records_written too low"
curl -s "$PROXY/v1/models" | py 'd["data"][0]["id"]=="fake-policy"' || fail "/v1/models"
pass "metrics and /v1/models"

# 13. Upstream hang → 504 after the idle timeout; keepalive comments while waiting.
PROXY_MAIN=$PROXY
start_proxy "$WORK/open.db" --upstream "http://127.0.0.1:$FAKE_PORT" --open --upstream-idle-timeout 1 --keepalive 0.3
out=$(post /v1/chat/completions anything '{"model":"m","messages":[{"role":"user","content":"script:hang"}]}')
[ "$(status)" = 504 ] || fail "hang gave $(status): $out"
curl -sN -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:hang"}]}' "$PROXY/v1/chat/completions" > "$WORK/sse" || true
grep -q '^: keepalive' "$WORK/sse" || fail "no keepalive while waiting: $(cat "$WORK/sse")"
grep -q '^data: {"error"' "$WORK/sse" || fail "no error event after the stream stalled: $(cat "$WORK/sse")"
[ "$(calls "$WORK/open.db" anonymous | grep -c '"http_status":504')" -ge 1 ] || fail "timeout not recorded"
# A Gemini client gets no comment: the google-genai SDK's reader (Gemini CLI's)
# loses every event after one (issue 36). With nothing sent, the stall is a 504
# in Gemini's error shape, as for a whole answer.
code=$(curl -sN -o "$WORK/gemini-sse" -w '%{http_code}' -d '{"contents":[{"role":"user","parts":[{"text":"script:hang"}]}]}' \
  "$PROXY/v1beta/models/m:streamGenerateContent?alt=sse" || true)
grep -q '^:' "$WORK/gemini-sse" && fail "an SSE comment reached a Gemini client: $(cat "$WORK/gemini-sse")"
[ "$code" = 504 ] && py 'd["error"]["status"] == "DEADLINE_EXCEEDED"' <"$WORK/gemini-sse" ||
  fail "a stalled Gemini stream gave $code: $(cat "$WORK/gemini-sse")"
pass "upstream hang: 504 / keepalives (none for Gemini) then an error event (--open mode)"
register_rollout "$WORK/open.db" r5 secret-five
store_write "$WORK/open.db" "UPDATE rollouts SET status = 'finished' WHERE id = 'r5'"
out=$(post /v1/chat/completions secret-five '{"model":"m","messages":[{"role":"user","content":"late"}]}')
[ "$(status)" = 401 ] && echo "$out" | py '"r5 has finished" in d["error"]["message"]' \
  || fail "--open mode took a finished rollout's secret: $(status) $out"
pass "--open mode still refuses a finished rollout's secret"

# 14. SIGTERM drains: a slow stream in flight completes, then exit 143.
PROXY=$PROXY_MAIN
curl -sN -H 'Authorization: Bearer secret-one' -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:slow:20"}]}' \
  "$PROXY/v1/chat/completions" > "$WORK/slow" &
slow=$!
sleep 0.3
kill -TERM "$MAIN_PID"
wait $slow || true
grep -q '^data: \[DONE\]' "$WORK/slow" || fail "in-flight stream cut by SIGTERM: $(cat "$WORK/slow")"
set +e; wait "$MAIN_PID"; rc=$?; set -e
[ "$rc" = 143 ] || fail "exit status after SIGTERM: $rc"
calls "$STORE" r1 | tail -1 | py 'len(d["completion_ids"])==20' || fail "drained call not recorded"
pass "SIGTERM drains in-flight calls and exits 143"

# 15. A proxy started again on the same store: a fresh call whose body an
# earlier proxy recorded (a redone attempt keeps its rollout id and resends its
# first request) is a new call, not a retry to drop; its marked retry is one.
n0=$(calls "$STORE" r1 | wc -l)
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT/v1"
for count in 0 1; do
  curl -s -o /dev/null -H 'Authorization: Bearer secret-one' -H "x-stainless-retry-count: $count" -d "$body" "$PROXY/v1/chat/completions"
done
[ "$(calls "$STORE" r1 | wc -l)" = $((n0 + 1)) ] || fail "after a restart: $(( $(calls "$STORE" r1 | wc -l) - n0 )) calls recorded of 1 fresh call and its retry"
pass "after a restart a fresh identical call is recorded, its retry is not"
echo "all proxy e2e checks passed"
