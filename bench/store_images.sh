#!/usr/bin/env bash
# Store bytes of a screenshot rollout (#56): 30 turns through forge-proxy,
# each resending the whole conversation as a harness does, a new 1280x800
# screenshot every 3rd turn (bench/store_images.py), in each client format
# (chat image_url data URIs; Anthropic image blocks in tool_results, as Claude
# Code sends them; Responses input_image; Gemini inlineData). Baseline in the
# same run: a text-only rollout of the same shape (every 0). Figures:
#   images' share: (store bytes of the image rollout - the text-only one's)
#                  / the distinct images' bytes   (1.0: each image once)
#   resent:        the image bytes summed over every request / distinct
#                  (what storing each request whole would keep)
# ROUNDS interleaved rounds (default 3); store bytes are the content blobs +
# token data (bench-proxy_bench storesize), not the SQLite file's pages.
# Usage: bench/store_images.sh [BUILD_DIR]   127.0.0.1 only.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${FORGE_BIN:-$SRC/build}}
ROUNDS=${ROUNDS:-3}
TURNS=${TURNS:-30}
EVERY=${EVERY:-3}
FORMATS=${FORMATS:-chat anthropic responses gemini}

W=$(mktemp -d /tmp/forge-store-images.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_http() { for _ in $(seq 1 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; echo "no answer at $1" >&2; exit 1; }

UP=$(port)
"$BIN/bench-proxy_bench" upstream "$UP" & PIDS+=($!)
wait_http "http://127.0.0.1:$UP/health"

# format every -> "blob_bytes+token_bytes image_bytes distinct calls resent_bytes"
run_one() {
  local port db pid out
  port=$(port); db="$W/$1.$2.$RANDOM.db"
  "$BIN/forge-proxy" --store "$db" --upstream "http://127.0.0.1:$UP" --port "$port" --open \
    --health-interval 0 >/dev/null 2>>"$W/proxy.err" & pid=$!
  wait_http "http://127.0.0.1:$port/healthz"
  out=$(python3 "$SRC/bench/store_images.py" "$port" "$1" img-rollout "$TURNS" "$2")
  kill -TERM $pid; wait $pid 2>/dev/null || true
  local sizes
  sizes=$("$BIN/bench-proxy_bench" storesize "$db" img-rollout)
  read -r calls _ _ blob token <<<"$sizes"
  [ "$calls" = "$TURNS" ] || { echo "$1: $calls calls recorded of $TURNS" >&2; cat "$W/proxy.err" >&2; exit 1; }
  rm -f "$db"*
  echo "$((blob + token)) $out"
}

echo "store bytes of a $TURNS-turn rollout, a new screenshot every $EVERY turns, vs the text-only rollout of the same shape"
declare -A SHARE RESENT
for round in $(seq 1 "$ROUNDS"); do
  for format in $FORMATS; do
    read -r text_bytes _ <<<"$(run_one "$format" 0)"
    read -r img_bytes image_bytes distinct calls resent <<<"$(run_one "$format" "$EVERY")"
    line=$(python3 -c "
t, i, ib, r = $text_bytes, $img_bytes, $image_bytes, $resent
print(f'{(i - t) / ib:.3f} {r / ib:.2f} {i / t:.1f} {t} {i} {ib} $distinct')")
    read -r share resent_ratio vs_text t i ib d <<<"$line"
    SHARE[$format]+="$share "; RESENT[$format]=$resent_ratio
    printf '  round %d %-9s text-only %7d B; with images %8d B (%sx text-only); %d distinct images %d B: images'"'"' share %sx their bytes (resent %sx)\n' \
      "$round" "$format" "$t" "$i" "$vs_text" "$d" "$ib" "$share" "$resent_ratio"
  done
done
echo "summary (range over $ROUNDS rounds): images' share of the store, as a multiple of the distinct images' bytes"
for format in $FORMATS; do
  python3 -c "
v = [float(x) for x in '${SHARE[$format]}'.split()]
print(f'  {\"$format\":<9} {min(v):.3f}-{max(v):.3f}x  (each request stored whole: ${RESENT[$format]}x)')"
done
