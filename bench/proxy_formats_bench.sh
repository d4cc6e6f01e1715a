#!/usr/bin/env bash
# The cost of translation: forge-proxy's CPU time per streamed token for the
# chat pass-through (the baseline) and for streaming Anthropic Messages and
# OpenAI Responses clients, which the proxy translates to and from chat, on
# the same fast C++ fake upstream in one run, recording on, 127.0.0.1 only.
# The proxy's CPU time (user + system, /proc/PID/stat) is read around each
# load; the formats take turns for ROUNDS rounds so that drift in the
# machine's load hits all three alike. Target: translation <= 1.5x the chat
# pass-through's CPU per token.
# Usage: bench/proxy_formats_bench.sh [BUILD_DIR]
#   env STREAMS (per format per round, default 300), CONCURRENCY (20), ROUNDS (3)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${FORGE_BIN:-$SRC/build}}
STREAMS=${STREAMS:-300}
CONCURRENCY=${CONCURRENCY:-20}
ROUNDS=${ROUNDS:-3}
TOKENS_PER_STREAM=200  # the fake upstream streams 200 one-token chunks

W=$(mktemp -d /tmp/forge-formats-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_http() { for _ in $(seq 1 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; echo "no answer at $1" >&2; exit 1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, clock ticks
HZ=$(getconf CLK_TCK)

UP=$(port); PX=$(port)
"$BIN/bench-proxy_bench" upstream "$UP" & PIDS+=($!)
wait_http "http://127.0.0.1:$UP/health"
"$BIN/forge-proxy" --store "$W/bench.db" --upstream "http://127.0.0.1:$UP" --port "$PX" --threads 2 \
  --health-interval 0 --keepalive 0 2>"$W/proxy.err" & PROXY_PID=$!; PIDS+=($PROXY_PID)
wait_http "http://127.0.0.1:$PX/healthz"
SECRET=bench-secret
sqlite3 -cmd ".timeout 10000" "$W/bench.db" "INSERT INTO rollouts (id, run_id, task_id, attempt, harness, secret_hash, status, created_at, updated_at)
  VALUES ('bench', 'run', 'task', 0, 'bench', '$(printf %s "$SECRET" | sha256sum | cut -d' ' -f1)', 'running', 0, 0);"

echo "forge-proxy translation CPU per token  ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
echo "$ROUNDS rounds x $STREAMS streams x $TOKENS_PER_STREAM tokens per format, $CONCURRENCY at a time, recording on"
# Warm-up: connections, caches, the store's first pages.
for f in chat anthropic responses; do BENCH_KEY=$SECRET "$BIN/bench-proxy_bench" formats "http://127.0.0.1:$PX" $f 20 5 >/dev/null; done
declare -A ticks streams failures
for f in chat anthropic responses; do ticks[$f]=0; streams[$f]=0; failures[$f]=0; done
for round in $(seq 1 "$ROUNDS"); do
  for f in chat anthropic responses; do
    before=$(cpu_ticks $PROXY_PID)
    read -r done failed wall < <(BENCH_KEY=$SECRET "$BIN/bench-proxy_bench" formats "http://127.0.0.1:$PX" $f "$STREAMS" "$CONCURRENCY" || true)
    after=$(cpu_ticks $PROXY_PID)
    ticks[$f]=$((ticks[$f] + after - before))
    streams[$f]=$((streams[$f] + done))
    failures[$f]=$((failures[$f] + failed))
  done
done
printf "%-12s %-9s %-10s %-10s %-14s %-14s\n" format streams failures "CPU s" "CPU us/token" "vs chat"
python3 - "$HZ" "$TOKENS_PER_STREAM" \
  chat "${streams[chat]}" "${failures[chat]}" "${ticks[chat]}" \
  anthropic "${streams[anthropic]}" "${failures[anthropic]}" "${ticks[anthropic]}" \
  responses "${streams[responses]}" "${failures[responses]}" "${ticks[responses]}" <<'PY'
import sys
hz, per = int(sys.argv[1]), int(sys.argv[2])
rows = sys.argv[3:]
base = None
for i in range(0, len(rows), 4):
    name, n, fails, ticks = rows[i], int(rows[i + 1]), int(rows[i + 2]), int(rows[i + 3])
    cpu = ticks / hz
    us = cpu / (n * per) * 1e6 if n else float("nan")
    if base is None:
        base = us
    print(f"{name:<12} {n:<9} {fails:<10} {cpu:<10.2f} {us:<14.2f} {us / base:.2f}x" + ("" if name == "chat" else "   (target <= 1.5x)"))
PY
# Counted once the database holds every logged call: the writer thread
# yields to the calls (SCHED_IDLE), so under load it trails by a few seconds.
curl -s -o /dev/null -X POST "http://127.0.0.1:$PX/admin/drain"
echo "calls recorded: $(curl -s "http://127.0.0.1:$PX/metrics" | awk '/^forge_proxy_records_written_total/ {print $2}') (in the database after POST /admin/drain)"
