#!/usr/bin/env bash
# forge-proxy forwards a large chat or completions body while the client is
# still sending it (cut_through.cpp), and reads it whole before its end goes:
# the upstream has the request's header before the client's last byte; the
# upstream's body is the client's plus the capture fields, once each; a body
# that is not JSON, or a client that breaks off, never reaches the upstream
# whole; a body the proxy must rebuild (the client set a capture field), a
# stream, completions, leading space, and an early 401 on a kept-alive
# connection all come out as they do for a small body.
source "$FORGE_SRC/tests/support/proxy_env.sh"

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT/v1" --keepalive 0
register_rollout "$STORE" r1 secret-one
PORT=$PROXY_PORT

# send.py BODY_FILE [--pause-for-upstream] [--break-off] [--then-small] [--path P] [--key K]: one
# request over a raw socket, the body in two halves. --pause-for-upstream waits
# (up to 5 s) after the first half until the fake upstream has the request's
# header, and prints "early" if it came then; --break-off closes after the first half;
# --then-small sends a small call on the same connection after the answer.
cat > "$WORK/send.py" <<'PY'
import json, os, socket, sys, time
args = sys.argv[1:]
body = open(args[0], "rb").read()
path = args[args.index("--path") + 1] if "--path" in args else "/v1/chat/completions"
key = args[args.index("--key") + 1] if "--key" in args else "secret-one"
heads = os.environ["FAKE_LOG"] + ".heads"
seen = lambda: len(open(heads).read().splitlines()) if os.path.exists(heads) else 0
before = seen()
s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])))
s.sendall((f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode())
half = len(body) // 2
s.sendall(body[:half])
if "--break-off" in args:
    time.sleep(0.3)
    s.close()
    sys.exit(0)
if "--pause-for-upstream" in args:
    deadline = time.time() + 5
    while seen() == before and time.time() < deadline:
        time.sleep(0.02)
    print("early" if seen() > before else "late")
s.sendall(body[half:])
s.settimeout(30)
pending = b""
def answer():  # one whole response (Content-Length framed) → status line, body
    global pending
    while b"\r\n\r\n" not in pending:
        pending += s.recv(65536)
    head, pending = pending.split(b"\r\n\r\n", 1)
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0]
    while len(pending) < length:
        pending += s.recv(65536)
    rest, pending = pending[:length], pending[length:]
    return head.split(b"\r\n")[0].decode(), rest
status, rest = answer()
print(status)
open(os.environ["WORK"] + "/answer", "wb").write(rest)
if "--then-small" in args:  # a second request on the same connection
    small = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret-one\r\n"
               f"Content-Length: {len(small)}\r\n\r\n").encode() + small)
    print(answer()[0])
PY
export FAKE_LOG WORK PORT
big() {  # python expression of the request object → file
  python3 -c "import json; print(json.dumps($1))" > "$WORK/body.json"
}
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
requests() { lines "$FAKE_LOG"; }
cuts() { lines "$FAKE_LOG.cut"; }
wait_cut() {  # count: the fake upstream saw a cut-short body
  for _ in $(seq 1 100); do [ "$(cuts)" -ge "$1" ] && return 0; sleep 0.05; done
  fail "the upstream never saw the cut-short request (cuts: $(cuts))"
}

# 1. The upstream has the header (and the first half) before the client sends its second half.
big '{"model":"m","messages":[{"role":"system","content":"s"*200000},{"role":"user","content":"x"*200000}]}'
out=$(python3 "$WORK/send.py" "$WORK/body.json" --pause-for-upstream)
echo "$out" | head -1 | grep -qx early || fail "the upstream saw nothing before the client's last byte: $out"
echo "$out" | tail -1 | grep -q " 200" || fail "status: $out"
py 'd["choices"][0]["message"]["content"]=="hello from fake!" and "prompt_token_ids" not in d' < "$WORK/answer" \
  || fail "answer: $(head -c 300 "$WORK/answer")"
tail -1 "$FAKE_LOG" | py 'd["body"]["return_token_ids"] is True and d["body"]["logprobs"] is True and d["body"]["top_logprobs"]==0 and d["duplicate_keys"]==[] and len(d["body"]["messages"][1]["content"])==200000' \
  || fail "the upstream's request: $(tail -1 "$FAKE_LOG" | head -c 400)"
calls "$STORE" r1 | tail -1 | py 'len(d["request"]["messages"][0]["content"])==200000 and d["upstream_request"]["return_token_ids"] is True and len(d["prompt_ids"])>0 and d["http_status"]==200' \
  || fail "record: $(calls "$STORE" r1 | tail -1 | head -c 400)"
pass "a 400 KB body reached the upstream before its last byte left the client; capture fields once; recorded whole"

# 2. Not JSON at its end: 400 naming the byte, and the upstream never has a whole request.
n=$(requests); c=$(cuts)
python3 -c 'print("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "x"*300000 + "\"}],\"stream\":tru}")' > "$WORK/bad.json"
out=$(python3 "$WORK/send.py" "$WORK/bad.json")
echo "$out" | grep -q " 400" || fail "malformed body status: $out"
py 'd["error"]["type"]=="invalid_request_error" and "not valid JSON" in d["error"]["message"] and "at byte" in d["error"]["message"]' < "$WORK/answer" \
  || fail "malformed body error: $(cat "$WORK/answer")"
wait_cut $((c + 1))
[ "$(requests)" = "$n" ] || fail "the upstream answered a malformed request"
pass "a body that is not JSON at its end: 400 in OpenAI's shape, the upstream's copy cut short"

# 3. The client set a capture field itself: the object is rebuilt, the upstream sees each field once.
big '{"model":"m","messages":[{"role":"user","content":"x"*300000}],"logprobs":False,"return_token_ids":False}'
out=$(python3 "$WORK/send.py" "$WORK/body.json")
echo "$out" | grep -q " 200" || fail "rebuilt body status: $out"
tail -1 "$FAKE_LOG" | py 'd["body"]["return_token_ids"] is True and d["body"]["logprobs"] is True and d["duplicate_keys"]==[]' \
  || fail "rebuilt upstream request: $(tail -1 "$FAKE_LOG" | python3 -c 'import json,sys; d=json.load(sys.stdin); print({k: v for k, v in d["body"].items() if k != "messages"}, d["duplicate_keys"])')"
py '"token_ids" not in d["choices"][0] and d["choices"][0]["logprobs"] is None' < "$WORK/answer" || fail "rebuilt answer: $(cat "$WORK/answer")"
pass "a large body with the client's own capture fields is rebuilt: each field once upstream"

# 4. A stream, its flag after 300 KB of conversation.
big '{"model":"m","messages":[{"role":"user","content":"x"*300000},{"role":"user","content":"script:words:5"}],"stream":True}'
code=$(curl -s -o "$WORK/sse" -w '%{http_code}' -H 'Authorization: Bearer secret-one' -H 'Content-Type: application/json' \
  --data-binary @"$WORK/body.json" "$PROXY/v1/chat/completions")
[ "$code" = 200 ] && grep -q '^data: \[DONE\]' "$WORK/sse" || fail "large stream: $code $(head -c 300 "$WORK/sse")"
tail -1 "$FAKE_LOG" | py 'd["body"]["stream"] is True and d["body"]["stream_options"]=={"include_usage":True} and d["duplicate_keys"]==[]' \
  || fail "large stream upstream request"
calls "$STORE" r1 | tail -1 | py 'd["completion_ids"]==list(range(1000,1005)) and d["response"]["choices"][0]["message"]["content"]=="w0 w1 w2 w3 w4 "' \
  || fail "large stream record"
pass "a large streamed call relayed and recorded"

# 5. Completions, and a body that starts with space (sent whole, the usual way).
big '{"model":"m","prompt":"y"*300000,"max_tokens":4}'
out=$(python3 "$WORK/send.py" "$WORK/body.json" --path /v1/completions)
echo "$out" | grep -q " 200" || fail "large completions: $out"
tail -1 "$FAKE_LOG" | py 'd["path"].endswith("/v1/completions") and d["body"]["logprobs"]==0 and len(d["body"]["prompt"])==300000' \
  || fail "large completions upstream request"
{ printf '  \n'; cat "$WORK/body.json"; } > "$WORK/spaced.json"
out=$(python3 "$WORK/send.py" "$WORK/spaced.json" --path /v1/completions)
echo "$out" | grep -q " 200" || fail "large body after leading space: $out"
pass "large completions, and a large body with leading space"

# 6. A client that breaks off mid-body: no call, the upstream's copy cut short, the proxy serves on.
c=$(cuts); before=$(calls "$STORE" r1 | wc -l)
big '{"model":"m","messages":[{"role":"user","content":"x"*400000}]}'
python3 "$WORK/send.py" "$WORK/body.json" --break-off
wait_cut $((c + 1))
[ "$(calls "$STORE" r1 | wc -l)" = "$before" ] || fail "a call broken off mid-body was recorded"
out=$(python3 "$WORK/send.py" "$WORK/body.json")
echo "$out" | grep -q " 200" || fail "after a broken-off body: $out"
pass "a client breaking off mid-body: nothing recorded, the upstream's request cut short, next call served"

# 7. An unknown secret on a large body: 401 at once, and the kept-alive
#    connection still reads the next request from where it starts.
out=$(python3 "$WORK/send.py" "$WORK/body.json" --key wrong --then-small)
[ "$(echo "$out" | awk '{print $2}' | tr '\n' ' ')" = "401 200 " ] || fail "401 then a call on one connection: $out"
pass "a 401 on a large body keeps the connection in step for the next request"

# 8. The upstream dies after taking the first half: the call is answered by another.
start_fake second
SECOND_PORT=$FAKE_PORT; SECOND_LOG=$FAKE_LOG
FAKE_LOG=$WORK/up.log
cat > "$WORK/dying.py" <<'PY'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:  # take some of each request, then hang up
    c, _ = s.accept(); c.recv(65536); c.close()
    open(sys.argv[1] + ".taken", "a").write("1\n")
PY
python3 "$WORK/dying.py" "$WORK/dying.port" & PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$WORK/dying.port" ] && break; sleep 0.05; done
start_proxy "$WORK/two.db" --upstream "http://127.0.0.1:$(cat "$WORK/dying.port")/v1" \
  --upstream "http://127.0.0.1:$SECOND_PORT/v1" --keepalive 0
PORT=$PROXY_PORT
# Rollouts stick to an upstream by a hash of their id: of four, some start at the dying one.
for i in 1 2 3 4; do
  register_rollout "$WORK/two.db" "r$i" "secret-$i"
  out=$(python3 "$WORK/send.py" "$WORK/body.json" --key "secret-$i")
  echo "$out" | grep -q " 200" || fail "call $i with a dying upstream: $out"
done
[ "$(lines "$WORK/dying.port.taken")" -ge 1 ] || fail "no call went to the dying upstream"
[ "$(lines "$SECOND_LOG")" -ge 4 ] || fail "the healthy upstream did not answer every call"
pass "an upstream that hangs up mid-body: the call goes to the other upstream, whole"
