#!/usr/bin/env bash
# forge-proxy in front of an https upstream (a hosted API whose key only the
# proxy holds): a loopback TLS fake upstream with a self-signed certificate
# made here by openssl. With --upstream-ca the certificate is trusted and
# calls (whole and streamed) are served and recorded with their token ids;
# without it, or for a certificate naming another host, the handshake is
# refused and the call fails 502 naming the upstream — nothing is sent.
source "$FORGE_SRC/tests/support/proxy_env.sh"

cert() {  # name subjectAltName
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=$1" -addext "subjectAltName=$2" \
    -keyout "$WORK/$1.key" -out "$WORK/$1.pem" 2>/dev/null || fail "openssl could not make a certificate"
}
cert loopback IP:127.0.0.1
cert elsewhere DNS:elsewhere.example

start_tls_fake() {  # name cert-name → FAKE_PORT, FAKE_LOG
  FAKE_LOG=$WORK/$1.log
  python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --port-file "$WORK/$1.port" --log "$FAKE_LOG" \
    --tls-cert "$WORK/$2.pem" --tls-key "$WORK/$2.key" &
  PIDS+=($!)
  for _ in $(seq 1 100); do [ -f "$WORK/$1.port" ] && break; sleep 0.05; done
  FAKE_PORT=$(cat "$WORK/$1.port")
}
start_tls_fake good loopback; GOOD=$FAKE_PORT; GOOD_LOG=$FAKE_LOG
start_tls_fake wrong elsewhere; WRONG=$FAKE_PORT; WRONG_LOG=$FAKE_LOG
chat='{"model":"m","messages":[{"role":"user","content":"over tls"}]}'
stream='{"model":"m","stream":true,"messages":[{"role":"user","content":"streamed over tls"}]}'

# 1. Trusted through --upstream-ca: served, streamed, recorded; the key goes upstream only.
export FORGE_TEST_TEACHER_KEY=sk-teacher-secret
STORE=$WORK/forge.db
start_proxy "$STORE" --upstream "https://127.0.0.1:$GOOD/v1" --upstream-ca "$WORK/loopback.pem" \
  --upstream-key-env FORGE_TEST_TEACHER_KEY --open
curl -sf -o "$WORK/out" -d "$chat" "$PROXY/r/tls/v1/chat/completions" || fail "call over TLS: $(cat "$WORK/proxy.err")"
jq -e '.choices[0].message.content | length > 0' "$WORK/out" >/dev/null || fail "TLS answer: $(cat "$WORK/out")"
curl -sfN -o "$WORK/sse" -d "$stream" "$PROXY/r/tls/v1/chat/completions" || fail "stream over TLS"
grep -q '^data: \[DONE\]' "$WORK/sse" || fail "TLS stream incomplete: $(cat "$WORK/sse")"
[ "$(calls "$STORE" tls | jq -s 'map(select(.http_status == 200 and (.completion_ids | length) > 0)) | length')" = 2 ] \
  || fail "TLS calls not recorded with token ids"
[ "$(calls "$STORE" tls | jq -r .upstream | sort -u)" = "https://127.0.0.1:$GOOD/v1" ] || fail "upstream not recorded"
jq -e '.headers.Authorization == "Bearer sk-teacher-secret"' "$GOOD_LOG" >/dev/null || fail "the upstream did not get the key"
if sqlite3 "$STORE" .dump | grep -q sk-teacher-secret; then fail "the upstream key was recorded"; fi
pass "https upstream trusted by --upstream-ca: whole and streamed calls recorded; key sent upstream only"

# 1b. A client that hangs up while the TLS upstream works: the proxy closes that
# connection within a sweep (~1 s) and records 499 (as over plain HTTP).
curl -s -o /dev/null --max-time 1 -d '{"model":"m","messages":[{"role":"user","content":"script:hang"}]}' \
  "$PROXY/r/tls/v1/chat/completions" && fail "the hanging TLS call answered"
for _ in $(seq 1 50); do
  [ "$(ss -Htn state established "( dport = :$GOOD )" | wc -l)" = 0 ] && break
  sleep 0.1
done
[ "$(ss -Htn state established "( dport = :$GOOD )" | wc -l)" = 0 ] \
  || fail "the proxy still holds its TLS upstream connection 5 s after the client hung up"
for _ in $(seq 1 30); do [ "$(calls "$STORE" tls | wc -l)" = 3 ] && break; sleep 0.1; done
calls "$STORE" tls | tail -1 | jq -e '.http_status == 499 and (.error | test("hung up"))' >/dev/null \
  || fail "TLS hangup record: $(calls "$STORE" tls | tail -1)"
pass "a client's hangup closes the TLS upstream connection too (499)"
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true

# 2. Not trusted (system CAs only) and wrong host name: 502, and the request never reaches the upstream.
: > "$GOOD_LOG"
start_proxy "$WORK/untrusted.db" --upstream "https://127.0.0.1:$GOOD" --open
code=$(curl -s -o "$WORK/out" -w '%{http_code}' -d "$chat" "$PROXY/v1/chat/completions")
[ "$code" = 502 ] || fail "self-signed upstream without --upstream-ca gave $code"
# The client is told why, not where: the upstream's address stays in the store.
jq -e '.error.message | test("certificate|verify|handshake"; "i") and (test("127.0.0.1:'"$GOOD"'") | not)' \
  "$WORK/out" >/dev/null || fail "502 does not say why, or names the upstream: $(cat "$WORK/out")"
"$FORGE_BIN/forge-proxy" --store "$WORK/untrusted.db" --export >"$WORK/untrusted.jsonl"
jq -se 'length == 1 and .[0].http_status == 502 and (.[0].upstream + " " + .[0].error | test("127.0.0.1:'"$GOOD"'"))' \
  "$WORK/untrusted.jsonl" >/dev/null || fail "the store does not name the untrusted upstream: $(cat "$WORK/untrusted.jsonl")"
[ ! -s "$GOOD_LOG" ] || fail "the request reached an untrusted upstream"
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$WORK/wrong.db" --upstream "https://127.0.0.1:$WRONG" --upstream-ca "$WORK/elsewhere.pem" --open
code=$(curl -s -o "$WORK/out" -w '%{http_code}' -d "$chat" "$PROXY/v1/chat/completions")
[ "$code" = 502 ] || fail "certificate for another host gave $code"
[ ! -s "$WRONG_LOG" ] || fail "the request reached an upstream whose certificate names another host"
pass "untrusted certificate and wrong host name refused (502, nothing sent)"
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true

# 3. Bad flags: an unreadable CA file and an unknown scheme are configuration errors (78).
status=0
"$FORGE_BIN/forge-proxy" --store "$WORK/x.db" --upstream "https://127.0.0.1:$GOOD" --upstream-ca "$WORK/none.pem" \
  --port "$(free_port)" 2>"$WORK/err" || status=$?
[ "$status" = 78 ] && grep -q "none.pem" "$WORK/err" || fail "missing CA file: exit $status, $(cat "$WORK/err")"
status=0
"$FORGE_BIN/forge-proxy" --store "$WORK/x.db" --upstream "ftp://127.0.0.1:1" --port "$(free_port)" 2>"$WORK/err" || status=$?
[ "$status" = 78 ] && grep -q "https://" "$WORK/err" || fail "ftp upstream: exit $status, $(cat "$WORK/err")"
pass "missing --upstream-ca file and unknown scheme refused (78)"
echo "all proxy TLS checks passed"
