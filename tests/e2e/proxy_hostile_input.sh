#!/usr/bin/env bash
# Hostile and broken input never takes down forge-proxy or its store: bodies
# nested far deeper than --max-json-depth in every client format, malformed
# HTTP (a 100 KB URL, a 200 KB header, 3,000 headers, bad Content-Length,
# Content-Length with Transfer-Encoding, unknown methods, too large a body)
# and connections that send part of a header or nothing. Each is answered
# as nginx would (a status and a body, in the client's error shape where the
# path tells the format) and the proxy keeps serving; the store's readers
# (--dump-rollout, --export, forge-pack --store) read what the proxy accepted.
# An upstream that sends no token ids is warned of, counted, and with
# --require-token-ids refused.
source "$FORGE_SRC/tests/support/proxy_env.sh"

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT/v1" --open --body-limit 1000000 \
  --header-timeout 1 --idle-timeout 1
metric() { curl -s "$PROXY/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# still_serving WHAT: a normal call succeeds afterwards, on a new connection.
still_serving() {
  kill -0 "$PROXY_PID" 2>/dev/null || fail "$1: forge-proxy died: $(tail -5 "$WORK/proxy.err")"
  local out
  out=$(curl -s -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' "$PROXY/v1/chat/completions")
  echo "$out" | py 'd["choices"][0]["message"]["content"]=="hello from fake!"' || fail "$1: the next call: $out"
}

# nested N OPEN CLOSE: a JSON value nested N deep.
nested() { python3 -c 'import sys; n=int(sys.argv[1]); print(sys.argv[2]*n + "1" + sys.argv[3]*n)' "$@"; }

# deep PATH BODY_TEMPLATE CHECK: BODY_TEMPLATE with @DEEP@ replaced by a value
# nested 30,000 deep is answered 400 with a body for which CHECK holds.
deep() {
  local path=$1 template=$2 check=$3 code
  nested 30000 '[' ']' >"$WORK/deep"
  python3 -c 'import sys; t=sys.argv[1]; d=open(sys.argv[2]).read().strip(); sys.stdout.write(t.replace("@DEEP@", d))' \
    "$template" "$WORK/deep" >"$WORK/body"
  code=$(curl -s -o "$WORK/out" -w '%{http_code}' --data-binary @"$WORK/body" "$PROXY$path")
  [ "$code" = 400 ] || fail "$path, nested 30,000 deep: $code $(head -c 300 "$WORK/out")"
  py "$check" <"$WORK/out" || fail "$path: not the client's error shape: $(cat "$WORK/out")"
  grep -q 'nested deeper than 512 levels' "$WORK/out" || fail "$path: the error does not say why: $(cat "$WORK/out")"
  still_serving "$path nested 30,000 deep"
}
gemini_check='d["error"]["code"]==400 and d["error"]["status"]=="INVALID_ARGUMENT"'
for method in generateContent streamGenerateContent countTokens; do
  deep "/v1beta/models/policy:$method" '{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"x":@DEEP@}}' \
    "$gemini_check"
done
deep /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":@DEEP@}' \
  'd["error"]["type"]=="invalid_request_error"'
deep /v1/messages '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":@DEEP@}' \
  'd["type"]=="error" and d["error"]["type"]=="invalid_request_error"'
deep /v1/responses '{"model":"m","input":"hi","metadata":@DEEP@}' 'd["error"]["type"]=="invalid_request_error"'
deep /v1/completions '{"model":"m","prompt":"hi","x":@DEEP@}' 'd["error"]["type"]=="invalid_request_error"'
pass "a body nested 30,000 deep is a 400 in each format's shape (Gemini x3, chat, Messages, Responses, completions)"

# A 300 KB body (cut through to the upstream as it arrives) nested too deep: refused before its end goes.
python3 -c 'import sys; pad="x"*300000; sys.stdout.write("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}],\"x\":%s}" % (pad, "["*20000 + "]"*20000))' >"$WORK/big"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' --data-binary @"$WORK/big" "$PROXY/v1/chat/completions")
[ "$code" = 400 ] && grep -q 'nested deeper' "$WORK/out" || fail "a large deep body: $code $(head -c 300 "$WORK/out")"
still_serving "a large deep body"
pass "a large body nested too deep is refused while it is forwarded as it arrives"

# Nesting within the limit is served and recorded; every reader of the store reads it.
python3 -c 'import sys; print("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"metadata\":%s}" % ("["*500 + "]"*500))' >"$WORK/ok"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' --data-binary @"$WORK/ok" "$PROXY/v1/chat/completions")
[ "$code" = 200 ] || fail "a body nested 500 deep (under 512): $code $(cat "$WORK/out")"
python3 -c 'import sys; print("{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],\"generationConfig\":{\"x\":%s}}" % ("["*500 + "]"*500))' >"$WORK/ok"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' --data-binary @"$WORK/ok" "$PROXY/v1beta/models/policy:generateContent")
[ "$code" = 200 ] || fail "a Gemini body nested 500 deep: $code $(cat "$WORK/out")"
pass "nesting under --max-json-depth is served"

# malformed_http WHAT WANT_STATUS PYTHON_REQUEST_BYTES: sends raw bytes, expects
# that status with a JSON body, and the connection closed after it.
malformed_http() {
  python3 - "$PROXY_PORT" "$2" "$3" <<'PY' || fail "$1"
import json, socket, sys
port, want, expr = int(sys.argv[1]), sys.argv[2], sys.argv[3]
request = eval(expr)
s = socket.create_connection(("127.0.0.1", port), timeout=10)
try:
    s.sendall(request)
except OSError:
    pass  # the proxy may answer and close before it has read everything
data = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except ConnectionResetError:
    pass
head, _, body = data.partition(b"\r\n\r\n")
status = head.split(b" ")[1].decode() if head else "(no response)"
assert status == want, f"status {status}, want {want}: {data[:300]!r}"
assert b"content-type: application/json" in head.lower(), head
doc = json.loads(body)
assert doc["error"]["message"], doc
print(status, doc)
PY
  still_serving "$1"
}
malformed_http "100 KB URL" 414 '(b"POST /v1/chat/completions?" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")'
malformed_http "200 KB header" 431 '(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n")'
malformed_http "3,000 headers" 431 '(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(3000)) + b"\r\n")'
malformed_http "bad Content-Length" 400 'b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"'
malformed_http "negative Content-Length" 400 'b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"'
malformed_http "Content-Length and Transfer-Encoding" 400 \
  'b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"'
malformed_http "body over --body-limit" 413 'b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n"'
malformed_http "partial header (--header-timeout 1)" 408 'b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Partial: 1"'
pass "malformed HTTP: 414, 431 (long header, 3,000 fields), 400 (bad, negative, conflicting length), 413, 408; proxy still serving"

# 413 on /v1/messages is Anthropic's shape (the path tells the format).
python3 -c 'import sys; sys.stdout.write("{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}" % ("x"*1200000))' >"$WORK/huge"
# (The client is still sending when the 413 comes: the proxy's lingering
# close reads on until it stops, so the answer is not lost to a reset.)
code=$(curl -s -o "$WORK/out" -w '%{http_code}' -H 'Expect:' --data-binary @"$WORK/huge" "$PROXY/v1/messages" || true)
[ "$code" = 413 ] && py 'd["type"]=="error" and d["error"]["type"]=="request_too_large"' <"$WORK/out" ||
  fail "413 on /v1/messages: $code $(cat "$WORK/out")"

# A client that sends its whole too-large body before it reads (as many HTTP
# libraries do) gets the 413: the proxy reads and drops the rest (lingering
# close) instead of resetting the connection under the client's writes.
python3 - "$PROXY_PORT" <<'PY' || fail "a too-large body sent whole: the 413 was lost to a reset"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
n = 3_000_000
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % n)
sent = 0
while sent < n:
    s.sendall(b"x" * 65536)  # raises BrokenPipeError/ConnectionResetError after a reset
    sent += 65536
    time.sleep(0.001)
s.settimeout(10)
head = s.recv(65536)
assert head.startswith(b"HTTP/1.1 413"), head[:200]
PY
still_serving "a too-large body sent whole"

# Methods: a path served for POST answers other methods 405 with Allow; an unknown method 405.
code=$(curl -s -o "$WORK/out" -D "$WORK/head" -w '%{http_code}' -X DELETE "$PROXY/v1/chat/completions")
[ "$code" = 405 ] && grep -qi '^allow: POST' "$WORK/head" || fail "DELETE /v1/chat/completions: $code $(cat "$WORK/head")"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' "$PROXY/v1/messages")
[ "$code" = 405 ] && py 'd["type"]=="error"' <"$WORK/out" || fail "GET /v1/messages: $code $(cat "$WORK/out")"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' -X FROB "$PROXY/anything")
[ "$code" = 405 ] || fail "an unknown method: $code $(cat "$WORK/out")"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' -X POST "$PROXY/healthz")
[ "$code" = 405 ] || fail "POST /healthz: $code"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' "$PROXY/nowhere")
[ "$code" = 404 ] || fail "GET /nowhere: $code"
still_serving "methods"
pass "405 (with Allow) for a method a path is not served for and for unknown methods; 404 for unknown paths"

# Idle connections: one that sends nothing, and a kept-alive one after its
# request, are closed after the timeouts (1 s here; 60 and 75 s by default).
python3 - "$PROXY_PORT" <<'PY' || fail "idle connections are held"
import socket, sys, time
port = int(sys.argv[1])
def closed_within(s, seconds):
    s.settimeout(seconds)
    t0 = time.time()
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return time.time() - t0, data
        data += chunk
silent = socket.create_connection(("127.0.0.1", port))
took, data = closed_within(silent, 5)
assert data == b"" and took < 4, (took, data)
kept = socket.create_connection(("127.0.0.1", port))
kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
took, data = closed_within(kept, 5)
assert data.startswith(b"HTTP/1.1 200") and took < 4, (took, data)
PY
still_serving "idle connections"
pass "a connection that sends nothing, and an idle kept-alive one, are closed after the timeouts"
[ "$(metric forge_proxy_malformed_requests_total)" -ge 9 ] || fail "malformed requests not counted: $(metric forge_proxy_malformed_requests_total)"

# An upstream that ignores return_token_ids: recorded, warned of once, counted.
curl -s -o /dev/null -d '{"model":"m","messages":[{"role":"user","content":"script:noids"}]}' "$PROXY/v1/chat/completions"
curl -s -o /dev/null -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:noids"}]}' "$PROXY/v1/chat/completions"
[ "$(metric forge_proxy_calls_without_token_ids_total)" = 2 ] || fail "calls without ids: $(metric forge_proxy_calls_without_token_ids_total)"
[ "$(grep -c 'without token ids' "$WORK/proxy.err")" = 1 ] || fail "no single warning: $(cat "$WORK/proxy.err")"
pass "an upstream without token ids: one warning, forge_proxy_calls_without_token_ids_total counts the calls"

# Every reader of the store reads what the proxy accepted.
"$FORGE_BIN/forge-proxy" --store "$STORE" --dump-rollout anonymous >"$WORK/dump" || fail "--dump-rollout exit $?"
"$FORGE_BIN/forge-proxy" --store "$STORE" --export >"$WORK/export" || fail "--export exit $?"
grep -q '"metadata":\[\[\[\[' "$WORK/dump" || fail "the 500-deep request is not in the dump"
echo '{"rollout_id":"anonymous","task_id":"t","instruction":"hi","verdict":{"outcome":"pass","reward":1,"passed":true}}' >"$WORK/rollouts.jsonl"
pack() {  # forge-pack --store in FORMAT: any exit but a crash
  local rc=0
  "$FORGE_BIN/forge-pack" --store "$STORE" --format "$1" "$WORK/rollouts.jsonl" >"$WORK/pack.out" 2>"$WORK/pack.err" || rc=$?
  [ "$rc" -lt 128 ] || fail "forge-pack --store --format $1 crashed ($rc): $(tail -3 "$WORK/pack.err")"
}
pack sft-messages
[ -s "$WORK/pack.out" ] || fail "forge-pack wrote no sample: $(cat "$WORK/pack.err")"
pack sft-tokens
pass "--dump-rollout, --export and forge-pack --store read the store"

# --require-token-ids refuses such calls with a clear error, and records them as failed.
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT/v1" --open --require-token-ids
code=$(curl -s -o "$WORK/out" -w '%{http_code}' -d '{"model":"m","messages":[{"role":"user","content":"script:noids"}]}' "$PROXY/v1/chat/completions")
[ "$code" = 502 ] && py '"return_token_ids" in d["error"]["message"]' <"$WORK/out" || fail "--require-token-ids: $code $(cat "$WORK/out")"
calls "$STORE" anonymous | tail -1 | py 'd["http_status"]==502 and "return_token_ids" in d["error"]' ||
  fail "refused call not recorded as failed: $(calls "$STORE" anonymous | tail -1)"
still_serving "--require-token-ids"
pass "--require-token-ids: a call without ids is a 502 saying why, recorded as failed"

# The deepest nesting the flag allows (4096) is served and read back without a crash.
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT/v1" --open --max-json-depth 4096
python3 -c 'import sys; print("{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],\"generationConfig\":{\"x\":%s}}" % ("["*4090 + "]"*4090))' >"$WORK/ok"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' --data-binary @"$WORK/ok" "$PROXY/v1beta/models/policy:generateContent")
[ "$code" = 200 ] || fail "Gemini nested 4,092 deep with --max-json-depth 4096: $code $(cat "$WORK/out")"
python3 -c 'import sys; print("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"metadata\":%s}" % ("{\"a\":"*4090 + "1" + "}"*4090))' >"$WORK/ok"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' --data-binary @"$WORK/ok" "$PROXY/v1/messages" -H 'content-type: application/json')
[ "$code" = 400 ] || [ "$code" = 200 ] || fail "Messages nested 4,091 deep: $code $(cat "$WORK/out")"
still_serving "--max-json-depth 4096"
"$FORGE_BIN/forge-proxy" --store "$STORE" --export >"$WORK/export" || fail "--export after 4096-deep calls: exit $?"
pack sft-messages
code=$("$FORGE_BIN/forge-proxy" --store "$STORE" --max-json-depth 5000 --open 2>/dev/null; echo $?)
[ "$code" = 64 ] || [ "$code" = 2 ] || fail "--max-json-depth 5000 accepted (exit $code)"
pass "--max-json-depth 4096 (its ceiling) serves and reads back a 4,092-deep body; above it is a usage error"
echo "all hostile-input checks passed"
