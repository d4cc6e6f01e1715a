#!/usr/bin/env bash
# 200 rollouts of a trivial harness (`true`) in the busybox image at -j 16:
#   forge-launch (store, secret, labels, limits, instruction copy, exec, logs)
#   vs (a) xargs -P16 docker run --rm <image> true
#   vs (b) the engine's own minimum: create/start/wait/remove with curl, -P16.
# Then (HELD=1, the default) forge-launch --hold, the sandboxes kept for
# forge-verify (the harness still the container's own process, then the
# keep-alive) and removed afterwards by `forge-launch gc`.
# Usage: bench/launch_docker.sh [N] [J]   (env FORGE_BIN = build dir)
set -euo pipefail
N="${1:-200}"; J="${2:-16}"
here="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${FORGE_BIN:-$here/build}"
IMAGE=forge-busybox:latest
SOCK=/var/run/docker.sock
bash "$here/scripts/make-busybox-image.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"; for r in "$run" "$run-held"; do "$BIN/forge-launch" --backend docker gc --run-id "$r" >/dev/null 2>&1 || true; done' EXIT
run="bench-$$"
now() { date +%s.%N; }

for i in $(seq "$N"); do echo "{\"id\":\"t$i\",\"instruction\":\"run true\"}"; done >"$work/tasks.jsonl"

echo "load before: $(uptime)"
t0=$(now)
"$BIN/forge-launch" --backend docker --store "$work/forge.db" --run-id "$run" --image "$IMAGE" \
  --cpus 1 --memory 256m -j "$J" --command true "$work/tasks.jsonl" >"$work/rollouts.jsonl"
t1=$(now)
ok=$(grep -c '"outcome":"ok"' "$work/rollouts.jsonl" || true)

seq "$N" | xargs -P "$J" -I{} docker run --rm --network none "$IMAGE" true
t2=$(now)

bare() {
  local id
  id=$(curl -sf --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
    -d "{\"Image\":\"$IMAGE\",\"Cmd\":[\"true\"],\"HostConfig\":{\"NetworkMode\":\"none\"}}" \
    http://d/v1.41/containers/create | sed 's/.*"Id":"\([^"]*\)".*/\1/')
  curl -sf --unix-socket "$SOCK" -X POST "http://d/v1.41/containers/$id/start" >/dev/null
  curl -sf --unix-socket "$SOCK" -X POST "http://d/v1.41/containers/$id/wait" >/dev/null
  curl -sf --unix-socket "$SOCK" -X DELETE "http://d/v1.41/containers/$id?force=1" >/dev/null
}
export -f bare; export SOCK IMAGE
seq "$N" | xargs -P "$J" -I{} bash -c bare
t3=$(now)

held_line=""
if [ "${HELD:-1}" = 1 ]; then
  "$BIN/forge-launch" --backend docker --store "$work/forge.db" --run-id "$run-held" --image "$IMAGE" \
    --cpus 1 --memory 256m -j "$J" --hold --command true "$work/tasks.jsonl" >"$work/held.jsonl"
  t4=$(now)
  "$BIN/forge-launch" --backend docker gc --run-id "$run-held" >/dev/null 2>&1
  t5=$(now)
  held_ok=$(grep -c '"outcome":"ok"' "$work/held.jsonl" || true)
  held_line=$(awk -v l="$(echo "$t4 - $t3" | bc)" -v r="$(echo "$t5 - $t4" | bc)" -v b="$(echo "$t3 - $t2" | bc)" \
    -v ok="$held_ok" 'BEGIN { printf "  forge-launch --hold, then gc     %7.1f s  (%d ok; %.1f s launch + %.1f s removal)  %.2fx of (b)", l + r, ok, l, r, (l + r) / b }')
fi

awk -v n="$N" -v j="$J" -v ok="$ok" -v f="$(echo "$t1 - $t0" | bc)" -v a="$(echo "$t2 - $t1" | bc)" \
    -v b="$(echo "$t3 - $t2" | bc)" 'BEGIN {
  printf "%d rollouts of `true` in busybox, -j %d, %d cores\n", n, j, '"$(nproc)"'
  printf "  forge-launch                       %7.1f s  (%d ok)  %.2fx of (b)\n", f, ok, f / b
  printf "  (a) xargs -P%d docker run --rm      %7.1f s\n", j, a
  printf "  (b) curl create/start/wait/remove  %7.1f s\n", b
}'
jq -s -r 'def mean(f): (map(f // 0) | add / length * 1000 | round / 1000);
  "  forge-launch mean phases: create \(mean(.timings.create)) s, setup \(mean(.timings.setup)) s, agent \(mean(.timings.agent)) s, release \(mean(.timings.release)) s"' \
  "$work/rollouts.jsonl"
[ -n "$held_line" ] && echo "$held_line"
echo "  engine calls per rollout (one-shot forge-launch): 4 (create, wait, attach, start; +1 archive PUT with host files), (b) 4"
echo "load after: $(uptime)"
