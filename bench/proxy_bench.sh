#!/usr/bin/env bash
# forge-proxy against nginx (proxy_pass, buffering off) and against calling the
# fake upstream directly, all in one run on this machine, 127.0.0.1 only:
#  (a) added latency of sequential non-streaming calls, 1 KB and 200 KB requests, and
#      200 KB answered as vLLM answers the proxy (every prompt token id)
#  (b) 1,000 concurrent streaming clients x 200 SSE events: throughput,
#      p50/p99 per-stream time and time to the first event, proxy RSS per
#      open stream (recording on)
#  (c) store bytes of a 50-call rollout against its largest request
#  (d) translation CPU per token: streaming Anthropic and Responses clients
#      against the chat pass-through (bench/proxy_formats_bench.sh)
#  (e) a fast client (wrk, keep-alive) against an unpaced streaming upstream
#      (bench-proxy_bench stream-upstream: vLLM-shaped chunks, each answer in
#      one write), with and without token ids, at 1 and 200 connections, a
#      fresh proxy and nginx (1 worker) each round, then warm: requests/s,
#      added median and CPU per relayed event of each path
#  (f) the shapes a new user tried (issue 59): a static nginx upstream answering
#      every call with the same ~39 KB of 200 SSE events (no token ids) in one
#      write, forge-proxy with its default flags (keepalive comments on, health
#      checks on), wrk keep-alive: sequential 1 KB and 200 KB requests (added
#      median over direct), 200 and 1,000 connections (requests/s, peak RSS)
# Usage: bench/proxy_bench.sh [BUILD_DIR]   (needs nginx, and wrk for (e) and (f); scripts/bootstrap.sh installs them)
#   PARTS=abcdef: the parts to run (PARTS=e: only the fast-client part).
#   BASELINE_PROXY=/path/to/older/forge-proxy also measures that binary in the
#   same run (column "baseline"), for before/after figures under the same load.
#   SEQ_N / SEQ_N_LARGE: (a)'s 1 KB / 200 KB calls per path (20000 / 2000).
#   WARM_N / WARM_N_LARGE: calls each path serves, unmeasured, before (a)'s
#   rounds of that size (30000 / 500).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${FORGE_BIN:-$SRC/build}}
# (a)'s calls per path: 1 KB calls in rounds long enough (~0.5 s) that a
# proxy's store writer (it commits 50 ms after a batch's first call) works
# during that proxy's own round, as under steady load, not another path's.
SEQ_N=${SEQ_N:-20000}
SEQ_N_LARGE=${SEQ_N_LARGE:-2000}  # 200 KB calls: a p99 of 300 was their 3rd slowest
# A fresh proxy's first ~30,000 calls fault in its SQLite page cache, call
# logs and allocator arenas: its store writer takes ~28 us a 1 KB call in the
# first 10,000 and ~8 us from 30,000 on. (a) measures the steady state every
# path reaches after that many calls, and prints the warm-up's own figures.
WARM_N=${WARM_N:-30000}
WARM_N_LARGE=${WARM_N_LARGE:-500}
CLIENTS=${CLIENTS:-1000}
EVENTS=${EVENTS:-200}
LOAD_ROUNDS=${LOAD_ROUNDS:-3}
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

PARTS=${PARTS:-abcdef}
want() { [[ $PARTS == *["$1"]* ]]; }  # any of the parts named in $1

UP=$(port); PX=$(port); NG=$(port)
if want abc; then
"$BIN/bench-proxy_bench" upstream "$UP" & PIDS+=($!)
wait_http "http://127.0.0.1:$UP/health"
fi

SECRET=bench-secret
# (a)-(e) measure the call path alone; (f) runs the proxy as a user would, PROXY_FLAGS=.
PROXY_FLAGS=${PROXY_FLAGS---health-interval 0 --keepalive 0}
start_proxy() {  # binary port store [upstream port] -> pid
  # shellcheck disable=SC2086  # PROXY_FLAGS: words
  "$1" --store "$3" --upstream "http://127.0.0.1:${4:-$UP}" --port "$2" --threads 2 \
    $PROXY_FLAGS >/dev/null 2>>"$W/proxy.err" & local pid=$!
  wait_http "http://127.0.0.1:$2/healthz"
  sqlite3 -cmd ".timeout 10000" "$3" "INSERT INTO rollouts (id, run_id, task_id, attempt, harness, secret_hash, status, created_at, updated_at)
    VALUES ('bench', 'run', 'task', 0, 'bench', '$(printf %s "$SECRET" | sha256sum | cut -d' ' -f1)', 'running', 0, 0);"
  echo $pid
}
BASE=${BASELINE_PROXY:-}
if want abc; then
PROXY_PID=$(start_proxy "$BIN/forge-proxy" "$PX" "$W/bench.db"); PIDS+=($PROXY_PID)
fi
if want abc && [ -n "$BASE" ]; then
  BX=$(port)
  BASE_PID=$(start_proxy "$BASE" "$BX" "$W/base.db"); PIDS+=($BASE_PID)
fi

mkdir -p "$W/nginx"
cat > "$W/nginx.conf" <<NGINX
daemon off;
worker_processes 2;
pid $W/nginx.pid;
error_log $W/nginx.err warn;
events { worker_connections 8192; }
http {
  access_log off;
  keepalive_requests 1000000;  # (a) keeps one connection for a round's calls
  client_body_temp_path $W/nginx/body;
  proxy_temp_path $W/nginx/proxy;
  upstream up { server 127.0.0.1:$UP; keepalive 512; keepalive_requests 1000000; }
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
if want abc; then
"$NGINX" -c "$W/nginx.conf" -p "$W/nginx" 2>"$W/nginx.start.err" & NGINX_PID=$!; PIDS+=($NGINX_PID)
wait_http "http://127.0.0.1:$NG/health"
fi

# CPU time (ns) of the processes serving a path, every thread (nginx's
# workers; a proxy's io threads and its recording), then the part of it a
# proxy's recording took (its store writer and checkpointer threads; 0 for
# nginx), read in one pass so both cover the same moments.
cpu_ns() {
  local total=0 recording=0 pid t ns rest comm
  for pid in "$@"; do
    for t in /proc/"$pid"/task/*; do
      read -r ns rest < "$t/schedstat" 2>/dev/null || continue
      read -r comm < "$t/comm" 2>/dev/null || comm=
      total=$((total + ns))
      case $comm in forge-writer|forge-checkpnt) recording=$((recording + ns)) ;; esac
    done
  done
  echo "$total $recording"
}
server_pids() {
  case $1 in nginx) pgrep -P "$NGINX_PID" ;; forge-proxy) echo "$PROXY_PID" ;; baseline) echo "$BASE_PID" ;; esac
}

echo "forge-proxy benchmark  ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
if want a; then
echo
echo "(a) sequential non-streaming calls, keep-alive; latency ms (median / p99; p99.9 for the tail beyond)"
echo "    paths take turns in 5 rounds (1 KB: $((SEQ_N / 5)) calls a round, 200 KB: $((SEQ_N_LARGE / 5))), so a burst"
echo "    of load elsewhere hits all alike and a proxy's recording runs in its own rounds;"
echo "    'added' is each path's median / p99 minus the direct path's; 'CPU/call' is the serving"
echo "    processes' CPU time per call (every thread: nginx's workers; the proxy's io threads and its recording),"
echo "    'recording' the part of it the proxy's store writer and checkpointer threads took"
# The third size is the second answered as vLLM answers the proxy, with every
# prompt token's id (~51,000 for 200 KB; the direct and nginx paths do not ask
# for them): what recording a call of that size costs.
for size in 1024 204800 204800:real-ids; do
  bytes=${size%%:*}
  real_ids=$([ "$size" != "$bytes" ] && echo 1 || true)
  calls=$(( bytes > 65536 ? SEQ_N_LARGE : SEQ_N ))
  paths=("direct http://127.0.0.1:$UP" "nginx http://127.0.0.1:$NG" "forge-proxy http://127.0.0.1:$PX")
  [ -n "$BASE" ] && paths+=("baseline http://127.0.0.1:$BX")
  for p in "${paths[@]}"; do : > "$W/seq.${p%% *}"; : > "$W/cpu.${p%% *}"; : > "$W/rec.${p%% *}"; done
  warm=$(( bytes > 65536 ? WARM_N_LARGE : WARM_N ))
  for p in "${paths[@]}"; do
    BENCH_KEY=$SECRET BENCH_RAW=1 BENCH_REAL_IDS=${real_ids:-0} "$BIN/bench-proxy_bench" seq "${p#* }/v1/chat/completions" "$warm" "$bytes" > "$W/warm.${p%% *}"
  done
  for round in 1 2 3 4 5; do
    for p in "${paths[@]}"; do
      pids=$(server_pids "${p%% *}")
      read -r before recording_before <<< "$(cpu_ns $pids)"
      BENCH_KEY=$SECRET BENCH_RAW=1 BENCH_REAL_IDS=${real_ids:-0} "$BIN/bench-proxy_bench" seq "${p#* }/v1/chat/completions" "$((calls / 5))" "$bytes" >> "$W/seq.${p%% *}"
      if [ -n "$pids" ]; then
        read -r after recording_after <<< "$(cpu_ns $pids)"
        echo $((after - before)) >> "$W/cpu.${p%% *}"
        echo $((recording_after - recording_before)) >> "$W/rec.${p%% *}"
      fi
    done
  done
  python3 - "$W" "$bytes" "${real_ids:-0}" "${paths[@]}" <<'PY'
import sys, statistics
w, size, real_ids, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", [p.split()[0] for p in sys.argv[4:]]
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))]
ms = {p: [float(x) for x in open(f"{w}/seq.{p}").read().split()] for p in paths}
d50, d99 = pct(ms["direct"], 0.5), pct(ms["direct"], 0.99)
print(f"  {size // 1024} KB requests ({len(ms['direct'])} calls per path)" +
      (f"; the proxy's answers carry {size // 4:,} prompt token ids, as vLLM's do" if real_ids else ""))
warm = {p: [float(x) for x in open(f"{w}/warm.{p}").read().split()] for p in paths}
w50, w99 = pct(warm["direct"], 0.5), pct(warm["direct"], 0.99)
print(f"    warm-up first, unmeasured below: {len(warm['direct'])} calls per path, one run each in turn; added median / p99: " +
      ", ".join(f"{p} {pct(warm[p], 0.5) - w50:.3f} / {pct(warm[p], 0.99) - w99:.3f}" for p in paths if p != "direct"))
print(f"    {'path':<12} {'median':>8} {'p99':>8} {'p99.9':>8} {'added median':>13} {'added p99':>10} {'CPU/call ms':>12} {'recording':>10}")
for p in paths:
    m, q = pct(ms[p], 0.5), pct(ms[p], 0.99)
    tail = f"{pct(ms[p], 0.999):>8.3f}"
    added = f"{'':>13} {'':>10}" if p == "direct" else f"{m - d50:>13.3f} {q - d99:>10.3f}"
    cpu = [int(x) for x in open(f"{w}/cpu.{p}").read().split()]
    per_call = f"{sum(cpu) / 1e6 / len(ms[p]):>12.3f}" if cpu else ""
    recording = [int(x) for x in open(f"{w}/rec.{p}").read().split()]
    if p not in ("direct", "nginx") and recording:
        per_call += f" {sum(recording) / 1e6 / len(ms[p]):>10.3f}"
    print(f"    {p:<12} {m:>8.3f} {q:>8.3f} {tail} {added}{per_call}")
n50, n99 = pct(ms["nginx"], 0.5) - d50, pct(ms["nginx"], 0.99) - d99
f50, f99 = pct(ms["forge-proxy"], 0.5) - d50, pct(ms["forge-proxy"], 0.99) - d99
# (nginx's p99 can fall below the direct path's by chance: no ratio then.)
p99_ratio = f"{f99 / n99:.2f}x nginx's" if n99 > 0 else f"{f99:.3f} ms against nginx's {n99:.3f}, no ratio"
print(f"    forge-proxy added median {'<=' if f50 <= n50 else '>'} nginx's ({f50:.3f} vs {n50:.3f} ms; target <=); "
      f"added p99 {p99_ratio} (target <= 1.5x)")
PY
done

fi  # (a)
if want b; then
echo
echo "(b) $CLIENTS concurrent streaming clients x $EVENTS SSE events (recording on), $LOAD_ROUNDS rounds"
echo "    paths take turns, one run each per round; each figure is the median over the rounds"
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
load_paths=("direct http://127.0.0.1:$UP/v1/chat/completions" "nginx http://127.0.0.1:$NG/v1/chat/completions"
            "forge-proxy http://127.0.0.1:$PX/v1/chat/completions")
[ -n "$BASE" ] && load_paths+=("baseline http://127.0.0.1:$BX/v1/chat/completions")
rss_before=$(rss_kb $PROXY_PID)
( while kill -0 $PROXY_PID 2>/dev/null; do rss_kb $PROXY_PID; sleep 0.05; done ) > "$W/rss" & SAMPLER=$!
for p in "${load_paths[@]}"; do : > "$W/load.${p%% *}"; done
for round in $(seq 1 "$LOAD_ROUNDS"); do
  for p in "${load_paths[@]}"; do
    # events/s p50 p99 failures wall first-event-p50 first-event-p99, one line per run
    BENCH_KEY=$SECRET "$BIN/bench-proxy_bench" load "${p#* }" "$CLIENTS" "$EVENTS" >> "$W/load.${p%% *}" || true
  done
done
kill $SAMPLER 2>/dev/null || true; wait $SAMPLER 2>/dev/null || true
peak=$(sort -n "$W/rss" | tail -1)
python3 - "$W" "$rss_before" "$peak" "$CLIENTS" "${load_paths[@]}" <<'PY'
import sys, statistics
w, before, peak, clients = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
paths = [p.split()[0] for p in sys.argv[5:]]
runs = {p: [list(map(float, l.split())) for l in open(f"{w}/load.{p}") if l.strip()] for p in paths}
med = {p: [statistics.median(r[k] for r in runs[p]) for k in range(7)] if runs[p] else [0] * 7 for p in paths}
print(f"{'path':<12} {'events/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'first p50':>9} {'first p99':>9} {'failures':>9} {'wall_s':>7}   events/s per round")
for p in paths:
    e, p50, p99, fail, wall, f50, f99 = med[p]
    per = " ".join(f"{r[0]:.0f}" for r in runs[p])
    print(f"{p:<12} {e:>9.0f} {p50:>9.1f} {p99:>9.1f} {f50:>9.1f} {f99:>9.1f} {sum(r[3] for r in runs[p]):>9.0f} {wall:>7.3f}   {per}")
print("('first': ms from sending the request to the first event; a proxy that holds events back shows it here)")
ne, pe = med["nginx"][0], med["forge-proxy"][0]
print(f"throughput forge-proxy / nginx: {pe / ne:.2f}x   (target >= 0.8x; per round: "
      + ", ".join(f"{f[0] / n[0]:.2f}" for f, n in zip(runs["forge-proxy"], runs["nginx"])) + ")" if ne else "nginx run failed")
if "baseline" in med:
    print(f"baseline throughput / nginx: {med['baseline'][0] / ne:.2f}x")
d50, d99 = med["direct"][1], med["direct"][2]
print(f"added p50/p99 vs direct: nginx {med['nginx'][1] - d50:.1f} / {med['nginx'][2] - d99:.1f} ms, "
      f"forge-proxy {med['forge-proxy'][1] - d50:.1f} / {med['forge-proxy'][2] - d99:.1f} ms")
print(f"forge-proxy RSS: {before / 1024:.1f} MiB idle, {peak / 1024:.1f} MiB peak under load -> "
      f"{(peak - before) / clients:.1f} KiB per open stream (target <= 64 KiB)")
PY
# Counted once the database holds every logged call: the writer thread
# yields to the calls (SCHED_IDLE), so under load it trails by a few seconds.
curl -s -o /dev/null -X POST "http://127.0.0.1:$PX/admin/drain"
echo "calls recorded during the run: $(curl -s "http://127.0.0.1:$PX/metrics" | awk '/^forge_proxy_records_written_total/ {print $2}') (in the database after POST /admin/drain)"

fi  # (b)
if want c; then
echo
echo "(c) store bytes of a 50-call rollout, harness-like: a 12 KB system prompt and 12 tools resent every"
echo "    call, a growing conversation of assistant tool calls and tool results (this repository's source files);"
echo "    as chat, and as Anthropic Messages (Claude Code's format, translated to chat by the proxy)"
size_run() {  # binary format -> "calls largest file_bytes blob_bytes token_bytes empty_bytes"
  local port db pid
  port=$(port); db="$W/size.$RANDOM.db"
  "$1" --store "$db" --upstream "http://127.0.0.1:$UP" --port "$port" --open --health-interval 0 >/dev/null 2>>"$W/proxy.err" & pid=$!
  wait_http "http://127.0.0.1:$port/healthz"
  local empty
  empty=$("$BIN/bench-proxy_bench" storesize "$db" none | cut -d' ' -f3)
  python3 - "$port" "$SRC" "$2" <<'PY'
import json, sys, urllib.request, random, glob
port, src, fmt = sys.argv[1], sys.argv[2], sys.argv[3]
random.seed(7)
files = sorted(glob.glob(f"{src}/lib/**/*.cpp", recursive=True) + glob.glob(f"{src}/lib/**/*.h", recursive=True))
texts = [open(f, encoding="utf-8", errors="replace").read() for f in files]
system = ("You are a coding agent working in a repository. Follow the rules below.\n" +
          "\n".join(f"Rule {i}: " + texts[i % len(texts)][:300] for i in range(40)))[:12000]
tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": texts[(i * 7) % len(texts)][:500],
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "command": {"type": "string"}}}}}
         for i in range(12)]
messages = [{"role": "system", "content": system}, {"role": "user", "content": "Fix the failing test in lib/store."}]
anthropic_tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"]} for t in tools]
anthropic_messages = [{"role": "user", "content": "Fix the failing test in lib/store."}]
for i in range(50):
    if fmt == "chat":
        body = json.dumps({"model": "m", "messages": messages, "tools": tools}).encode()
        path, headers = "/v1/chat/completions", {"Content-Type": "application/json"}
    else:
        body = json.dumps({"model": "m", "max_tokens": 4096, "system": system, "messages": anthropic_messages,
                           "tools": anthropic_tools}).encode()
        path, headers = "/v1/messages", {"Content-Type": "application/json", "anthropic-version": "2023-06-01"}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/r/size-rollout{path}", data=body, headers=headers)
    answer = json.load(urllib.request.urlopen(req))
    text = answer["choices"][0]["message"].get("content") if fmt == "chat" else answer["content"][0].get("text")
    arguments = {"path": files[i % len(files)][len(src) + 1:]}
    output = texts[(i * 13) % len(texts)][:random.choice([600, 1500, 3000, 6000])]
    messages.append({"role": "assistant", "content": text, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": "tool_1", "arguments": json.dumps(arguments)}}]})
    messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": output})
    anthropic_messages.append({"role": "assistant", "content": [{"type": "text", "text": text or ""},
        {"type": "tool_use", "id": f"toolu_{i}", "name": "tool_1", "input": arguments}]})
    anthropic_messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}",
                                                            "content": output}]})
PY
  kill -TERM $pid; wait $pid 2>/dev/null || true
  echo "$("$BIN/bench-proxy_bench" storesize "$db" size-rollout) $empty"
}
report_size() {
  python3 - "$1" $2 <<'PY'
import sys
name, (n, largest, fb, bb, tb, empty) = sys.argv[1], map(int, sys.argv[2:])
print(f"  {name:<12} {n} calls; largest request {largest/1024:.1f} KiB; store file {fb/1024:.1f} KiB ({fb/largest:.2f}x; "
      f"{(fb-empty)/largest:.2f}x over the empty store's {empty/1024:.0f} KiB); content blobs + token data "
      f"{(bb+tb)/1024:.1f} KiB ({(bb+tb)/largest:.2f}x)   (target <= 3x)")
PY
}
for format in chat anthropic; do
  echo "  $format:"
  report_size forge-proxy "$(size_run "$BIN/forge-proxy" $format)"
  [ -n "$BASE" ] && report_size baseline "$(size_run "$BASE" $format)"
done
true

fi  # (c)
if want d; then
echo
echo "(d) translation CPU per token (bench/proxy_formats_bench.sh)"
bash "$SRC/bench/proxy_formats_bench.sh" "$BIN"

fi  # (d)
if want ef; then
# (e) and (f): wrk (keep-alive) against each path in turn, rounds of a fresh
# proxy (fresh store) and a fresh nginx (1 worker) each.
WRK=$(command -v wrk || echo /usr/bin/wrk)
[ -x "$WRK" ] || { echo "wrk not found (scripts/bootstrap.sh installs it)" >&2; exit 69; }
CLK_TCK=$(getconf CLK_TCK)
wrk_lua() {  # name body: $W/wrk.NAME.lua posts body, prints one RESULT line
  {
    echo 'wrk.method = "POST"'
    printf 'wrk.body = [==[%s]==]\n' "$2"
    cat <<LUA
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $SECRET"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d\\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(50), latency:percentile(99)))
end
LUA
  } > "$W/wrk.$1.lua"
}
ticks() {  # utime + stime of the processes, in clock ticks
  local total=0 pid stat
  for pid in "$@"; do
    stat=$(cat "/proc/$pid/stat")
    read -r -a fields <<< "${stat##*) }"
    total=$((total + fields[11] + fields[12]))
  done
  echo $total
}
rss_total() {  # VmRSS of the processes, KiB
  local total=0 pid kb
  for pid in "$@"; do kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true); total=$((total + ${kb:-0})); done
  echo $total
}
wrk_run() {  # runs-file seconds phase variant conns path url [pid...]: one line of figures
  local runs=$1 seconds=$2 phase=$3 variant=$4 conns=$5 path=$6 url=$7 before after result sampler
  shift 7
  before=$(ticks "$@")
  ( while :; do rss_total "$@"; sleep 0.05; done ) > "$W/rss.run" 2>/dev/null & sampler=$!
  result=$("$WRK" -t$(( conns > 1 ? 2 : 1 )) -c"$conns" -d"${seconds}s" -s "$W/wrk.$variant.lua" "$url/v1/chat/completions" |
           awk '/^RESULT/ {print $2, $3, $4, $5, $6}')
  kill $sampler 2>/dev/null || true; wait $sampler 2>/dev/null || true
  case $path in forge-proxy|baseline) curl -s -o /dev/null -X POST "$url/admin/drain" ;; esac
  after=$(ticks "$@")
  echo "$phase $variant $conns $path ${result:-0 1 1 0 0} $((after - before)) $(sort -n "$W/rss.run" | tail -1)" >> "$runs"
}
# rounds seconds upstream-port runs-file combo...: each round a fresh proxy (and
# baseline) and a fresh nginx, then every combo (phase:variant:connections),
# the paths taking turns.
wrk_rounds() {
  local rounds=$1 seconds=$2 up=$3 runs=$4 round combo phase variant conns p pids px ng ppid bpid npid
  shift 4
  : > "$runs"
  for round in $(seq 1 "$rounds"); do
    px=$(port); ng=$(port)
    ppid=$(start_proxy "$BIN/forge-proxy" "$px" "$W/r$RANDOM.db" "$up"); PIDS+=($ppid)
    local paths=("direct http://127.0.0.1:$up" "nginx http://127.0.0.1:$ng" "forge-proxy http://127.0.0.1:$px")
    bpid=
    if [ -n "$BASE" ]; then
      local bx; bx=$(port)
      bpid=$(start_proxy "$BASE" "$bx" "$W/r$RANDOM.base.db" "$up"); PIDS+=($bpid)
      paths+=("baseline http://127.0.0.1:$bx")
    fi
    sed -e "s/^worker_processes 2;/worker_processes 1;/" -e "s|$W/nginx.pid|$W/nginx.e.pid|" \
        -e "s/127.0.0.1:$UP;/127.0.0.1:$up;/" -e "s/listen 127.0.0.1:$NG;/listen 127.0.0.1:$ng;/" \
        "$W/nginx.conf" > "$W/nginx.e.conf"
    "$NGINX" -c "$W/nginx.e.conf" -p "$W/nginx" 2>>"$W/nginx.start.err" & npid=$!; PIDS+=($npid)
    wait_http "http://127.0.0.1:$ng/health"
    for combo in "$@"; do
      IFS=: read -r phase variant conns <<< "$combo"
      for p in "${paths[@]}"; do
        case ${p%% *} in
          direct) pids= ;; nginx) pids=$(pgrep -P "$npid") ;; forge-proxy) pids=$ppid ;; baseline) pids=$bpid ;;
        esac
        wrk_run "$runs" "$seconds" "$phase" "$variant" "$conns" "${p%% *}" "${p#* }" $pids
      done
    done
    kill "$ppid" $bpid "$npid" 2>/dev/null || true
    wait "$ppid" $bpid "$npid" 2>/dev/null || true
  done
}
wrk_summary() {  # runs-file events targets: per combo, each path's figures and its ratios to nginx
python3 - "$1" "$2" "$CLK_TCK" "$3" <<'PY'
import sys, statistics, collections
path_runs, events, tck, targets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
runs = collections.defaultdict(list)  # (phase, variant, conns) -> path -> one dict a round
combos = []
for line in open(path_runs):
    phase, variant, conns, path, req, dur_us, errors, p50, p99, ticks, rss_peak = line.split()
    key = (phase, variant, int(conns))
    if key not in combos: combos.append(key)
    req, dur = int(req), int(dur_us) / 1e6
    runs[key + (path,)].append({"rps": req / dur if dur else 0, "p50": int(p50) / 1000, "p99": int(p99) / 1000,
                                "errors": int(errors), "rss": int(rss_peak),
                                "cpu": int(ticks) / tck * 1e6 / (req * events) if req and path != "direct" else None})
def span(v, fmt="{:.2f}"):
    v = [x for x in v if x is not None]
    if not v: return "-"
    return fmt.format(statistics.median(v)) + " (" + fmt.format(min(v)) + "–" + fmt.format(max(v)) + ")"
paths = [p for p in ("direct", "nginx", "forge-proxy", "baseline") if any(k[3] == p for k in runs)]
for key in combos:
    phase, variant, conns = key
    print(f"  {phase}, {variant}, {conns} connection{'s' if conns > 1 else ''}: median (min–max) over {len(runs[key + ('direct',)])} rounds")
    print(f"    {'path':<12} {'requests/s':>22} {'p50 ms':>20} {'CPU/event us':>20} {'errors':>7}" +
          (f" {'peak RSS MiB':>20}" if conns > 1 else ""))
    for p in paths:
        r = runs[key + (p,)]
        line = (f"    {p:<12} {span([x['rps'] for x in r], '{:.0f}'):>22} {span([x['p50'] for x in r], '{:.3f}'):>20} "
                f"{span([x['cpu'] for x in r]):>20} {sum(x['errors'] for x in r):>7}")
        if conns > 1 and p != "direct":
            line += f" {span([x['rss'] / 1024 for x in r], '{:.1f}'):>20}"
        print(line)
    n, d = runs[key + ("nginx",)], runs[key + ("direct",)]
    for p in paths[2:]:
        f = runs[key + (p,)]
        thr = [a["rps"] / b["rps"] for a, b in zip(f, n) if b["rps"]]
        cpu = [a["cpu"] / b["cpu"] for a, b in zip(f, n) if a["cpu"] and b["cpu"]]
        line = f"    {p} / nginx: throughput {span(thr)}x, CPU/event {span(cpu)}x"
        if conns == 1:
            added = [(a["p50"] - c["p50"]) / (b["p50"] - c["p50"]) for a, b, c in zip(f, n, d) if b["p50"] > c["p50"]]
            line += f", added median {span(added)}x (" + ", ".join(
                f"{a['p50'] - c['p50']:.3f} vs {b['p50'] - c['p50']:.3f} ms" for a, b, c in zip(f, n, d)) + ")"
        print(line)
# Memory an open stream holds: the rise of each path's peak RSS from the
# second-largest connection count to the largest, in the same rounds (a
# fresh process's first calls grow its caches and arenas: not per stream).
loads = sorted({k[2] for k in combos if k[2] > 1})
if len(loads) >= 2:
    lo, hi = loads[-2], loads[-1]
    rises = []
    for p in paths[1:]:
        low = [x["rss"] for k in combos if k[2] == lo for x in runs[k + (p,)]]
        high = [x["rss"] for k in combos if k[2] == hi for x in runs[k + (p,)]]
        per = [(h - l) / (hi - lo) for h, l in zip(high, low)]
        rises.append(f"{p} {span(per, '{:.1f}')}")
    print(f"  RSS an open stream holds (peak at {hi} connections minus peak at {lo}, over {hi - lo}; KiB, per round): "
          + ", ".join(rises))
print(f"  (targets, {targets})")
PY
}
fi  # (e) and (f)
if want e; then
# (e) A fast client against an unpaced streaming upstream: what relaying and
# recording a stream's events costs when neither end sets the pace.
E_SECONDS=${E_SECONDS:-3}
E_ROUNDS=${E_ROUNDS:-3}
echo
echo "(e) a fast client (wrk, keep-alive; 2 threads, 1 at one connection) against an unpaced upstream that"
echo "    streams $EVENTS vLLM-shaped events an answer in one write; recording on; $E_ROUNDS rounds, each with a"
echo "    fresh proxy (fresh store) and a fresh nginx (1 worker): 'fresh' is each one's first ${E_SECONDS} s"
echo "    (200 connections, plain), 'warm' the runs after it; the paths take turns, ${E_SECONDS} s a run."
echo "    'ids': the client asks for token ids and logprobs, so every path relays them; 'plain': it asks for"
echo "    neither, so the proxy cuts what it asked for itself. CPU/event: the serving process's"
echo "    utime+stime (/proc/PID/stat; the proxy's until its store holds the run's calls) over requests x $EVENTS"
SUP=$(port)
"$BIN/bench-proxy_bench" stream-upstream "$SUP" & PIDS+=($!)
wait_http "http://127.0.0.1:$SUP/health"
wrk_lua plain "{\"model\":\"Qwen/Qwen3-8B\",\"stream\":true,\"bench_events\":$EVENTS,\"messages\":[{\"role\":\"user\",\"content\":\"stream please\"}]}"
wrk_lua ids "{\"model\":\"Qwen/Qwen3-8B\",\"stream\":true,\"return_token_ids\":true,\"logprobs\":true,\"bench_events\":$EVENTS,\"messages\":[{\"role\":\"user\",\"content\":\"stream please\"}]}"
wrk_rounds "$E_ROUNDS" "$E_SECONDS" "$SUP" "$W/e.runs" fresh:plain:200 warm:plain:200 warm:plain:1 warm:ids:200 warm:ids:1
wrk_summary "$W/e.runs" "$EVENTS" "issue 41: at 200 connections >= 0.7x nginx's throughput; at 1 connection an added median <= 2x nginx's"
fi  # (e)
if want f; then
# (f) What a new user measured first (issue 59): a static upstream (nginx
# serving one file), no token ids, the proxy with its default flags.
F_SECONDS=${F_SECONDS:-4}
F_ROUNDS=${F_ROUNDS:-3}
echo
echo "(f) as a new user tries it: a static nginx upstream (1 worker) answering every call with the same"
echo "    $EVENTS SSE events (no token ids, one write); forge-proxy with its default flags (keepalive comments,"
echo "    health checks); wrk keep-alive, ${F_SECONDS} s a run, $F_ROUNDS rounds of a fresh proxy (fresh store) and nginx, paths in"
echo "    turn: 1 connection with a 1 KB and a 200 KB streamed request (added median over direct), 200 and"
echo "    1,000 connections with the 1 KB one (requests/s; peak RSS of the serving processes)"
SSE=$W/answer.sse
chmod a+x "$W"  # nginx's worker (www-data) reads the answer
python3 - "$SSE" "$EVENTS" <<'PY'
import json, sys
head = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1764892800, "model": "Qwen/Qwen3-8B"}
def event(choice, **extra):
    return "data: " + json.dumps({**head, "choices": [{"index": 0, **choice}], **extra}, separators=(",", ":")) + "\n\n"
n = int(sys.argv[2])
out = [event({"delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None})]
out += [event({"delta": {"content": f" tok{i}"}, "logprobs": None, "finish_reason": None}) for i in range(n - 2)]
out.append(event({"delta": {}, "logprobs": None, "finish_reason": "stop"},
                 usage={"prompt_tokens": 8, "completion_tokens": n - 2, "total_tokens": n + 6}))
open(sys.argv[1], "w").write("".join(out) + "data: [DONE]\n\n")
PY
echo "    (the answer: $(stat -c %s "$SSE") bytes)"
FUP=$(port)
cat > "$W/static.conf" <<NGINX
daemon off;
worker_processes 1;
pid $W/static.pid;
error_log $W/static.err warn;
events { worker_connections 8192; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $W/nginx/static-body;
  client_max_body_size 64m;
  server {
    listen 127.0.0.1:$FUP;
    location / {
      # Every path, every method (a POST to a file is a 405 otherwise): the file.
      root $W;
      default_type text/event-stream;
      try_files /answer.sse =404;
      error_page 405 =200 \$uri;
    }
  }
}
NGINX
"$NGINX" -c "$W/static.conf" -p "$W/nginx" 2>>"$W/nginx.start.err" & PIDS+=($!)
wait_http "http://127.0.0.1:$FUP/health"
curl -sf -o /dev/null -X POST -d '{}' "http://127.0.0.1:$FUP/v1/chat/completions" ||
  { echo "the static upstream does not answer a POST: $(tail -1 "$W/static.err")" >&2; exit 1; }
body() { python3 -c 'import json, sys; print(json.dumps({"model": "Qwen/Qwen3-8B", "stream": True, "messages": [{"role": "user", "content": "x" * int(sys.argv[1])}]}))' "$1"; }
wrk_lua 1KB "$(body 950)"
wrk_lua 200KB "$(body 204700)"
PROXY_FLAGS= wrk_rounds "$F_ROUNDS" "$F_SECONDS" "$FUP" "$W/f.runs" seq:1KB:1 seq:200KB:1 load:1KB:200 load:1KB:1000
wrk_summary "$W/f.runs" "$EVENTS" "issue 59: at 1 connection an added median <= 1.5x nginx's; at 200 and 1,000 connections >= 1.0x nginx's requests/s"
fi  # (f)
