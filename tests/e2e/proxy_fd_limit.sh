#!/usr/bin/env bash
# forge-proxy out of file descriptors: accept(2) fails with EMFILE and the
# connection stays in the listen queue, so an acceptor that tried again at
# once would spin on a core. The proxy says so once, retries every 100 ms,
# counts the failures in /metrics, and serves the waiting connections once
# calls end and free descriptors.
source "$FORGE_SRC/tests/support/proxy_env.sh"

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT/v1" --open
curl -sf "$PROXY/metrics" >/dev/null || fail "no metrics before the limit"

# Room for a few more descriptors than the proxy holds now, then connections
# that take them all and more (idle: they send nothing).
# (The soft limit only: lowering the hard one could not be undone without
# CAP_SYS_RESOURCE.)
open_fds=$(ls "/proc/$PROXY_PID/fd" | wc -l)
hard=$(prlimit --pid "$PROXY_PID" --nofile --output HARD --noheadings | tr -d ' ')
prlimit --pid "$PROXY_PID" --nofile=$((open_fds + 4)):"$hard"
python3 - "$PROXY_PORT" "$WORK/holding" "$WORK/release" <<'PY' &
import os, socket, sys, time
port, holding, release = int(sys.argv[1]), sys.argv[2], sys.argv[3]
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]
open(holding, "w").close()
while not os.path.exists(release):
    time.sleep(0.05)
for s in held:
    s.close()
PY
HOLDER=$!
PIDS+=($HOLDER)
for _ in $(seq 1 100); do [ -f "$WORK/holding" ] && break; sleep 0.05; done
[ -f "$WORK/holding" ] || fail "the idle connections were not made"

# While the queue waits: the failure is said, and the acceptor does not spin.
sleep 0.3
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PROXY_PID/stat"; }
before=$(cpu_ticks)
sleep 1.5
spent=$(( $(cpu_ticks) - before ))
ticks_per_s=$(getconf CLK_TCK)
grep -q "cannot accept connections: Too many open files" "$WORK/proxy.err" \
  || fail "no warning for the failed accepts: $(cat "$WORK/proxy.err")"
[ "$(grep -c "cannot accept connections" "$WORK/proxy.err")" = 1 ] || fail "the warning is repeated: $(cat "$WORK/proxy.err")"
(( spent * 4 < ticks_per_s * 3 / 2 )) || fail "the acceptor spun: $spent CPU ticks in 1.5 s (at $ticks_per_s a second)"
pass "out of descriptors: said once, no spinning ($spent CPU ticks in 1.5 s)"

# Descriptors freed: the waiting connections and new calls are served.
touch "$WORK/release"
wait "$HOLDER"
prlimit --pid "$PROXY_PID" --nofile="$hard":"$hard"
out=$(curl -s --max-time 10 -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' "$PROXY/v1/chat/completions")
echo "$out" | py 'd["choices"][0]["message"]["content"]=="hello from fake!"' || fail "call after the limit: $out"
curl -s "$PROXY/metrics" | awk '/^forge_proxy_accept_errors_total/ {exit !($2 > 0)}' \
  || fail "accept errors not counted: $(curl -s "$PROXY/metrics" | grep accept)"
grep -q "accepting connections again" "$WORK/proxy.err" || fail "recovery not said: $(cat "$WORK/proxy.err")"
pass "descriptors freed: served again, the failures counted in /metrics"
