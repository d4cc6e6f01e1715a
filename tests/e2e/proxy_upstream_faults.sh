#!/usr/bin/env bash
# An upstream's failure reaches the client as the upstream sent it: a 429 or
# 503 answered before the first byte keeps its status and its retry headers
# (Retry-After, retry-after-ms, x-ratelimit-*; nothing else of the
# upstream's) in the client's own format's error shape (chat, Messages,
# Responses, Gemini); the upstream's address never reaches a client (only
# the store). With --upstream-retries N the proxy retries a 502/503, a 429
# with a short Retry-After and a refused connection itself, and records
# every attempt; without it (the default) it retries nothing.
source "$FORGE_SRC/tests/support/proxy_env.sh"

STORE=$WORK/forge.db
start_fake up
UP="http://127.0.0.1:$FAKE_PORT/v1"
start_proxy "$STORE" --upstream "$UP" --open
metric() { curl -s "$PROXY/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# call PATH BODY → status on stdout, body in $WORK/out, header in $WORK/head
call() { curl -s -o "$WORK/out" -D "$WORK/head" -w '%{http_code}' -H 'content-type: application/json' -d "$2" "$PROXY$1"; }
header() { grep -i "^$1:" "$WORK/head" | cut -d' ' -f2- | tr -d '\r'; }

# fault PATH BODY STATUS CHECK: the upstream's STATUS, its retry headers, the client's shape.
fault() {
  local code
  code=$(call "$1" "$2")
  [ "$code" = "$3" ] || fail "$1: $code, want $3: $(cat "$WORK/out")"
  py "$4" <"$WORK/out" || fail "$1: not the client's error shape: $(cat "$WORK/out")"
  grep -q "$FAKE_PORT" "$WORK/out" "$WORK/head" && fail "$1: the upstream's address reached the client"
  if [ "$3" = 429 ]; then
    [ "$(header retry-after)" = 1 ] && [ "$(header retry-after-ms)" = 1000 ] &&
      [ "$(header x-ratelimit-remaining-requests)" = 0 ] && [ "$(header x-ratelimit-reset-requests)" = 1s ] ||
      fail "$1: 429 without the upstream's retry headers: $(cat "$WORK/head")"
    [ -z "$(header x-fake-private)" ] || fail "$1: a header that is not about retrying was passed on"
  else
    [ "$(header retry-after)" = 2 ] || fail "$1: 503 without Retry-After: $(cat "$WORK/head")"
  fi
}
for s in 429 503; do
  fault /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"script:'$s'"}]}' $s \
    'd["error"]["message"].startswith("upstream answered")'
  fault /v1/chat/completions '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:'$s'"}]}' $s \
    '"error" in d'
  fault /v1/messages '{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"script:'$s'"}]}' $s \
    'd["type"]=="error" and d["error"]["type"]==("rate_limit_error" if '$s'==429 else "overloaded_error")'
  fault /v1/responses '{"model":"m","input":"script:'$s'"}' $s \
    'd["error"]["type"]==("rate_limit_error" if '$s'==429 else "server_error")'
  fault "/v1beta/models/m:streamGenerateContent?alt=sse" '{"contents":[{"role":"user","parts":[{"text":"script:'$s'"}]}]}' $s \
    'd["error"]["status"]==("RESOURCE_EXHAUSTED" if '$s'==429 else "UNAVAILABLE")'
done
calls "$STORE" anonymous | jq -s -e 'map(select(.http_status == 429)) | length == 5' >/dev/null || fail "429s not recorded"
pass "429 and 503 keep their status and retry headers, in each format's error shape (chat, Messages, Responses, Gemini)"

# An upstream event that is not JSON reaches the client as it came, in the
# event its format would carry it in, and the stream goes on to its normal
# end (what a server of the client's own API with that bug sends: opencode
# skips such an event, Gemini CLI fails on it, as each does directly). The
# record is a failed call (502) whose tokens end before the broken event.
broken='"delta": {"content": "trunc'
malformed() {  # PATH BODY END: the broken bytes relayed, the stream ends with END
  local code
  code=$(call "$1" "$2")
  [ "$code" = 200 ] || fail "$1, a malformed event: $code $(cat "$WORK/out")"
  grep -qF "$broken" "$WORK/out" || fail "$1: the event that is not JSON was not relayed: $(cat "$WORK/out")"
  grep -qF "$3" "$WORK/out" || fail "$1: the stream did not go on to its end ($3): $(cat "$WORK/out")"
  grep -qE '"error": ?\{|event: (error|response\.failed)' "$WORK/out" && fail "$1: an error event instead of the upstream's bytes: $(cat "$WORK/out")"
  grep -q "$FAKE_PORT" "$WORK/out" && fail "$1: the upstream's address reached the client"
  return 0
}
user='"messages":[{"role":"user","content":"script:malformed"}]'
malformed /v1/chat/completions '{"model":"m","stream":true,'"$user"'}' 'data: [DONE]'
grep -B1 -F "$broken" "$WORK/out" | head -1 | grep -q '^$' || fail "chat: the broken event is not its own data line"
malformed /v1/messages '{"model":"m","max_tokens":9,"stream":true,'"$user"'}' 'event: message_stop'
grep -B1 -F "$broken" "$WORK/out" | grep -q '^event: content_block_delta' || fail "Messages: the broken event not framed as content_block_delta"
malformed /v1/responses '{"model":"m","stream":true,"input":"script:malformed"}' 'event: response.completed'
malformed "/v1beta/models/m:streamGenerateContent?alt=sse" '{"contents":[{"role":"user","parts":[{"text":"script:malformed"}]}]}' '"finishReason"'
calls "$STORE" anonymous | tail -4 | jq -s -e 'length == 4 and all(.[]; .http_status == 502
    and (.error | test("not JSON \\(relayed")) and (.completion_ids | length) == 2)' >/dev/null ||
  fail "malformed streams not recorded as failed with the tokens before the event: $(calls "$STORE" anonymous | tail -4 | jq -c '[.http_status, .error, .completion_ids]')"
pass "an upstream event that is not JSON is relayed as it came and the stream goes on (chat, Messages, Responses, Gemini); recorded as a 502 with the tokens before it"

# A refused upstream: the client's 502 names no address; the store's record does.
dead=$(free_port)
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$STORE" --upstream "http://127.0.0.1:$dead/v1" --open
code=$(call /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}]}')
[ "$code" = 502 ] || fail "a refused upstream: $code"
grep -q "$dead" "$WORK/out" && fail "the upstream's address reached the client: $(cat "$WORK/out")"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' "$PROXY/v1/models")
[ "$code" = 502 ] && ! grep -q "$dead" "$WORK/out" || fail "/v1/models named the upstream: $code $(cat "$WORK/out")"
calls "$STORE" anonymous | tail -1 | grep -q "127.0.0.1:$dead" || fail "the store lost the upstream's address"
pass "upstream addresses stay out of client responses, and in the store"

# --upstream-retries: a refused connection is retried (each attempt recorded) and still fails.
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$STORE" --upstream "http://127.0.0.1:$dead/v1" --open --upstream-retries 2
n0=$(calls "$STORE" anonymous | wc -l)
code=$(call /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}]}')
[ "$code" = 502 ] || fail "retried refused upstream: $code"
[ "$(calls "$STORE" anonymous | wc -l)" = $((n0 + 3)) ] || fail "3 attempts not all recorded: $(calls "$STORE" anonymous | tail -3)"
calls "$STORE" anonymous | tail -3 | jq -s -e 'map(.error) | (.[0] | test("attempt 1 of 3")) and (.[1] | test("attempt 2 of 3"))' >/dev/null ||
  fail "attempt records: $(calls "$STORE" anonymous | tail -3 | jq -c .error)"

# ... a 503 twice, then an answer: the client sees one 200.
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$STORE" --upstream "$UP" --open --upstream-retries 2
n0=$(calls "$STORE" anonymous | wc -l)
code=$(call /v1/chat/completions '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:flaky:503:2"}]}')
[ "$code" = 200 ] && grep -q '\[DONE\]' "$WORK/out" || fail "503 twice then an answer: $code $(cat "$WORK/out")"
calls "$STORE" anonymous | tail -3 | jq -s -e 'map(.http_status) == [503, 503, 200]' >/dev/null ||
  fail "each attempt recorded: $(calls "$STORE" anonymous | tail -3 | jq -c '{http_status, error}')"
# ... a 429 with Retry-After: 1 (within --retry-after-max): waited for, then retried.
t0=$(date +%s.%N)
code=$(call /v1/messages '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"script:flaky:429:1"}]}')
t1=$(date +%s.%N)
[ "$code" = 200 ] || fail "429 then an answer: $code $(cat "$WORK/out")"
python3 -c 'import sys; assert float(sys.argv[2]) - float(sys.argv[1]) >= 0.9' "$t0" "$t1" || fail "the 429's Retry-After was not waited"
# ... more failures than retries: the last answer goes to the client, as the upstream sent it.
code=$(call /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"script:flaky:503:5"}]}')
[ "$code" = 503 ] || fail "503 beyond the retries: $code"
[ "$(metric forge_proxy_upstream_retries_total)" = 5 ] || fail "retries counted: $(metric forge_proxy_upstream_retries_total)"
# A 429 asking for longer than --retry-after-max is not retried.
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$STORE" --upstream "$UP" --open --upstream-retries 2 --retry-after-max 0.5
code=$(call /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"script:flaky:429:1:long"}]}')
[ "$code" = 429 ] && [ "$(header retry-after)" = 1 ] || fail "a long Retry-After was retried: $code"
pass "--upstream-retries: refused connections, 503s and short-Retry-After 429s retried, each attempt recorded"

# Off by default: one request upstream, its answer to the client.
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$STORE" --upstream "$UP" --open
code=$(call /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"script:flaky:503:1"}]}')
[ "$code" = 503 ] || fail "retried without --upstream-retries: $code"
pass "no proxy retries by default"
echo "all upstream-fault checks passed"
