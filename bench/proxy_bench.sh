#!/usr/bin/env bash
# forge-proxy against nginx (proxy_pass, buffering off) and against calling the
# fake upstream directly, all in one run on this machine, 127.0.0.1 only:
#  (a) added latency of sequential non-streaming calls, 1 KB and 200 KB requests
#  (b) 1,000 concurrent streaming clients x 200 SSE events: throughput,
#      p50/p99 per-stream time, proxy RSS per open stream (recording on)
#  (c) store bytes of a 50-call rollout against its largest request
#  (d) translation CPU per token: streaming Anthropic and Responses clients
#      against the chat pass-through (bench/proxy_formats_bench.sh)
# Usage: bench/proxy_bench.sh [BUILD_DIR]   (needs nginx; scripts/bootstrap.sh installs it)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${FORGE_BIN:-$SRC/build}}
SEQ_N=${SEQ_N:-300}
CLIENTS=${CLIENTS:-1000}
EVENTS=${EVENTS:-200}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "nginx not found (scripts/bootstrap.sh installs it)" >&2; exit 69; }
ulimit -n 65536 2>/dev/null || ulimit -n 16384

W=$(mktemp -d /tmp/forge-proxy-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$W/nginx.pid" ] && kill "$(cat "$W/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_http() { for _ in $(seq 1 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; echo "no answer at $1" >&2; exit 1; }

UP=$(port); PX=$(port); NG=$(port)
"$BIN/bench-proxy_bench" upstream "$UP" & PIDS+=($!)
wait_http "http://127.0.0.1:$UP/health"

"$BIN/forge-proxy" --store "$W/bench.db" --upstream "http://127.0.0.1:$UP" --port "$PX" --threads 2 \
  --health-interval 0 --keepalive 0 2>"$W/proxy.err" & PROXY_PID=$!; PIDS+=($PROXY_PID)
wait_http "http://127.0.0.1:$PX/healthz"
SECRET=bench-secret
sqlite3 "$W/bench.db" "INSERT INTO rollouts (id, run_id, task_id, attempt, harness, secret_hash, status, created_at, updated_at)
  VALUES ('bench', 'run', 'task', 0, 'bench', '$(printf %s "$SECRET" | sha256sum | cut -d' ' -f1)', 'running', 0, 0);"

mkdir -p "$W/nginx"
cat > "$W/nginx.conf" <<NGINX
daemon off;
worker_processes 2;
pid $W/nginx.pid;
error_log $W/nginx.err warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $W/nginx/body;
  proxy_temp_path $W/nginx/proxy;
  upstream up { server 127.0.0.1:$UP; keepalive 512; }
  server {
    listen 127.0.0.1:$NG;
    client_max_body_size 64m;
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
NGINX
"$NGINX" -c "$W/nginx.conf" -p "$W/nginx" 2>"$W/nginx.start.err" & PIDS+=($!)
wait_http "http://127.0.0.1:$NG/health"

echo "forge-proxy benchmark  ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
echo
echo "(a) sequential non-streaming calls, $SEQ_N each, keep-alive; latency ms (median / p99)"
printf "%-10s %-18s %-18s %-18s %-22s %-22s\n" request direct nginx forge-proxy "nginx added" "proxy added"
for bytes in 1024 204800; do
  read -r d50 d99 < <("$BIN/bench-proxy_bench" seq "http://127.0.0.1:$UP/v1/chat/completions" "$SEQ_N" "$bytes")
  read -r n50 n99 < <("$BIN/bench-proxy_bench" seq "http://127.0.0.1:$NG/v1/chat/completions" "$SEQ_N" "$bytes")
  read -r p50 p99 < <(BENCH_KEY=$SECRET "$BIN/bench-proxy_bench" seq "http://127.0.0.1:$PX/v1/chat/completions" "$SEQ_N" "$bytes")
  printf "%-10s %-18s %-18s %-18s %-22s %-22s\n" "$((bytes / 1024)) KB" "$d50 / $d99" "$n50 / $n99" "$p50 / $p99" \
    "$(python3 -c "print(f'{$n50-$d50:.3f} / {$n99-$d99:.3f}')")" "$(python3 -c "print(f'{$p50-$d50:.3f} / {$p99-$d99:.3f}')")"
done

echo
echo "(b) $CLIENTS concurrent streaming clients x $EVENTS SSE events (recording on)"
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
printf "%-12s %-12s %-14s %-14s %-9s %-8s\n" path events/s "p50 ms" "p99 ms" failures wall_s
read -r de d50 d99 dfail dwall < <("$BIN/bench-proxy_bench" load "http://127.0.0.1:$UP/v1/chat/completions" "$CLIENTS" "$EVENTS" || true)
printf "%-12s %-12s %-14s %-14s %-9s %-8s\n" direct "$de" "$d50" "$d99" "$dfail" "$dwall"
read -r ne n50 n99 nfail nwall < <("$BIN/bench-proxy_bench" load "http://127.0.0.1:$NG/v1/chat/completions" "$CLIENTS" "$EVENTS" || true)
printf "%-12s %-12s %-14s %-14s %-9s %-8s\n" nginx "$ne" "$n50" "$n99" "$nfail" "$nwall"
rss_before=$(rss_kb $PROXY_PID)
peak=$rss_before
( while kill -0 $PROXY_PID 2>/dev/null; do rss_kb $PROXY_PID; sleep 0.05; done ) > "$W/rss" & SAMPLER=$!
read -r pe p50 p99 pfail pwall < <(BENCH_KEY=$SECRET "$BIN/bench-proxy_bench" load "http://127.0.0.1:$PX/v1/chat/completions" "$CLIENTS" "$EVENTS" || true)
kill $SAMPLER 2>/dev/null || true; wait $SAMPLER 2>/dev/null || true
peak=$(sort -n "$W/rss" | tail -1)
printf "%-12s %-12s %-14s %-14s %-9s %-8s\n" forge-proxy "$pe" "$p50" "$p99" "$pfail" "$pwall"
python3 - <<PY
ne, pe = float("$ne" or 0), float("$pe" or 0)
print(f"throughput forge-proxy / nginx: {pe/ne:.2f}x   (target >= 0.8x)" if ne else "nginx run failed")
print(f"added p50/p99 vs direct: nginx {float('$n50')-float('$d50'):.1f} / {float('$n99')-float('$d99'):.1f} ms, "
      f"forge-proxy {float('$p50')-float('$d50'):.1f} / {float('$p99')-float('$d99'):.1f} ms")
before, peak, clients = int("$rss_before"), int("$peak"), int("$CLIENTS")
print(f"forge-proxy RSS: {before/1024:.1f} MiB idle, {peak/1024:.1f} MiB peak under load -> "
      f"{(peak-before)/clients:.1f} KiB per open stream (target <= 64 KiB)")
PY
echo "calls recorded during the run: $(curl -s "http://127.0.0.1:$PX/metrics" | awk '/^forge_proxy_records_written_total/ {print $2}')"

echo
echo "(c) store bytes of a 50-call rollout (each call resends the conversation plus ~2 KB)"
PX2=$(port)
"$BIN/forge-proxy" --store "$W/size.db" --upstream "http://127.0.0.1:$UP" --port "$PX2" --open --health-interval 0 \
  2>>"$W/proxy.err" & P2=$!; PIDS+=($P2)
wait_http "http://127.0.0.1:$PX2/healthz"
python3 - "$PX2" <<'PY'
import json, sys, urllib.request, random
port = sys.argv[1]
random.seed(7)
messages = [{"role": "system", "content": "You are a coding agent. " * 40}]
for i in range(50):
    words = " ".join(random.choice(["alpha", "beta", "gamma", "delta", "file.py", "def", "return", "x = 1"]) for _ in range(300))
    messages.append({"role": "user", "content": f"tool output {i}: {words}"})
    body = json.dumps({"model": "m", "messages": messages}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/r/size-rollout/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    reply = json.load(urllib.request.urlopen(req))
    messages.append(reply["choices"][0]["message"])
PY
kill -TERM $P2; wait $P2 2>/dev/null || true
read -r ncalls largest file_bytes blob_bytes token_bytes < <("$BIN/bench-proxy_bench" storesize "$W/size.db" size-rollout)
python3 - <<PY
n, largest, fb, bb, tb = $ncalls, $largest, $file_bytes, $blob_bytes, $token_bytes
print(f"{n} calls; largest request {largest/1024:.1f} KiB; store file {fb/1024:.1f} KiB ({fb/largest:.2f}x); "
      f"content blobs + token data {(bb+tb)/1024:.1f} KiB ({(bb+tb)/largest:.2f}x)   (target <= 3x)")
PY

echo
echo "(d) translation CPU per token (bench/proxy_formats_bench.sh)"
bash "$SRC/bench/proxy_formats_bench.sh" "$BIN"
