#!/usr/bin/env bash
# forge-proxy upstream handling and limits: rollout affinity across two
# upstreams, failover when one is down (retried before the first byte), an
# upstream key only the proxy holds, body limit (413), per-rollout cap (429),
# and replay of recorded responses with no upstream.
source "$FORGE_SRC/tests/support/proxy_env.sh"

start_fake a; A_PORT=$FAKE_PORT; A_LOG=$FAKE_LOG
start_fake b; B_PORT=$FAKE_PORT; B_LOG=$FAKE_LOG
DEAD_PORT=$(free_port)
chat='{"model":"m","messages":[{"role":"user","content":"hi"}]}'

# 1. Affinity: each rollout's calls all land on one upstream; the key stays upstream-side.
export FORGE_TEST_UPSTREAM_KEY=sk-only-the-proxy-knows
STORE=$WORK/forge.db
start_proxy "$STORE" --upstream "http://127.0.0.1:$A_PORT" --upstream "http://127.0.0.1:$B_PORT" --open \
  --upstream-key-env FORGE_TEST_UPSTREAM_KEY --body-limit 100000 --max-per-rollout 1
for r in alpha beta gamma delta; do
  for _ in 1 2 3; do
    curl -sf -o /dev/null -H 'Authorization: Bearer client-key' -d "$chat" "$PROXY/r/$r/v1/chat/completions" || fail "call for $r"
  done
done
for r in alpha beta gamma delta; do
  ups=$(calls "$STORE" "$r" | python3 -c 'import sys,json; print(len({json.loads(l)["upstream"] for l in sys.stdin}))')
  [ "$ups" = 1 ] || fail "rollout $r was spread over $ups upstreams"
done
[ -s "$A_LOG" ] && [ -s "$B_LOG" ] || fail "four rollouts all hashed to one upstream (possible, but unlikely)"
python3 - "$A_LOG" "$B_LOG" <<'PY' || fail "upstream did not get the proxy's key, or got the client's"
import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        h = {k.lower(): v for k, v in json.loads(line)["headers"].items()}
        assert h.get("authorization") == "Bearer sk-only-the-proxy-knows", h
PY
if sqlite3 "$STORE" .dump | grep -q sk-only-the-proxy-knows; then fail "the upstream key was recorded"; fi
if calls "$STORE" alpha | grep -q sk-only-the-proxy-knows; then fail "the upstream key was recorded"; fi
pass "rollout affinity across two upstreams; upstream key sent, never recorded"

# 2. Body limit and per-rollout cap.
python3 -c 'import json; print(json.dumps({"model":"m","messages":[{"role":"user","content":"x"*200000}]}))' > "$WORK/big.json"
code=$(curl -s -o "$WORK/out" -w '%{http_code}' --data-binary @"$WORK/big.json" "$PROXY/v1/chat/completions")
[ "$code" = 413 ] || fail "oversized body gave $code"
py '"limit" in d["error"]["message"]' < "$WORK/out" || fail "413 body: $(cat "$WORK/out")"
curl -s -o /dev/null -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:slow:20"}]}' "$PROXY/r/capped/v1/chat/completions" &
slow=$!
sleep 0.3
code=$(curl -s -o "$WORK/out" -w '%{http_code}' -d "$chat" "$PROXY/r/capped/v1/chat/completions")
[ "$code" = 429 ] || fail "second concurrent call of a capped rollout gave $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -d "$chat" "$PROXY/r/other/v1/chat/completions")
[ "$code" = 200 ] || fail "the cap leaked to another rollout ($code)"
wait $slow
pass "413 over --body-limit; 429 over --max-per-rollout"
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true

# 3. Failover: one upstream refuses connections; every call still succeeds.
start_proxy "$WORK/failover.db" --upstream "http://127.0.0.1:$DEAD_PORT" --upstream "http://127.0.0.1:$A_PORT" --open
for r in r1 r2 r3 r4 r5 r6; do
  curl -sf -o /dev/null -d "$chat" "$PROXY/r/$r/v1/chat/completions" || fail "call for $r failed despite a live upstream"
  curl -sfN -o "$WORK/sse" -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}' "$PROXY/r/$r/v1/chat/completions" \
    || fail "stream for $r failed despite a live upstream"
  grep -q '^data: \[DONE\]' "$WORK/sse" || fail "stream for $r incomplete"
done
curl -s "$PROXY/metrics" | awk '/^forge_proxy_upstream_errors_total/ {exit !($2 >= 1)}' || fail "connect failures not counted"
pass "connection failures retried on the other upstream before the first byte"

# 4. Replay: the recorded calls are served again with no upstream at all.
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
start_proxy "$WORK/replayed.db" --replay "$WORK/failover.db" --open
out=$(curl -s -d "$chat" "$PROXY/v1/chat/completions")
echo "$out" | py 'd["choices"][0]["message"]["content"]=="hello from fake!"' || fail "replay: $out"
curl -sN -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}' "$PROXY/v1/chat/completions" > "$WORK/sse"
grep -q 'hello from fake!' "$WORK/sse" && grep -q '^data: \[DONE\]' "$WORK/sse" || fail "streamed replay: $(cat "$WORK/sse")"
code=$(curl -s -o /dev/null -w '%{http_code}' -d '{"model":"m","messages":[{"role":"user","content":"never seen"}]}' "$PROXY/v1/chat/completions")
[ "$code" = 404 ] || fail "unmatched replay request gave $code"
pass "replay serves recorded responses (whole and streamed), 404 when nothing matches"
echo "all proxy routing checks passed"
