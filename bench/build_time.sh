#!/usr/bin/env bash
# A clean build of every target, this tree's HEAD against a baseline commit,
# interleaved (baseline, HEAD, baseline, HEAD, ...) on the same machine in
# one run: wall seconds and CPU seconds (user + sys of every compiler and
# linker) of `ninja -j$(nproc)` in a fresh build directory, ccache off.
# Usage: bench/build_time.sh BASELINE_REV [ROUNDS]   (ROUNDS: 2)
# Each commit is checked out into a worktree under $BENCH_DIR (default
# /tmp/forge-build-time), removed at the end; each build's .ninja_log stays
# there as baseline.ROUND.ninja_log and head.ROUND.ninja_log. Prints one line a build and
# the ratios HEAD / baseline per round. Takes ROUNDS x (both builds): about
# an hour for 2 rounds on 2 cores.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
base_rev=${1:?usage: bench/build_time.sh BASELINE_REV [ROUNDS]}
rounds=${2:-2}
dir=${BENCH_DIR:-/tmp/forge-build-time}
mkdir -p "$dir"
cleanup() {
  git -C "$SRC" worktree remove --force "$dir/baseline" 2>/dev/null || true
  git -C "$SRC" worktree remove --force "$dir/head" 2>/dev/null || true
}
trap cleanup EXIT
cleanup
git -C "$SRC" worktree add --detach "$dir/baseline" "$base_rev" >/dev/null 2>&1
git -C "$SRC" worktree add --detach "$dir/head" HEAD >/dev/null 2>&1

# build TREE: prints "wall cpu" in seconds.
build() {
  local tree=$1 out=$1/build-time start end
  rm -rf "$out"
  CCACHE_DISABLE=1 cmake -S "$tree" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  start=$(date +%s.%N)
  CCACHE_DISABLE=1 /usr/bin/time -f "%U %S" -o "$out/cpu" ninja -C "$out" -j"$(nproc)" >"$out/log" 2>&1 ||
    { echo "build of $tree failed: $out/log" >&2; return 1; }
  end=$(date +%s.%N)
  # ninja's step times, kept for "where the time goes" after the worktree is removed.
  cp "$out/.ninja_log" "$dir/$(basename "$tree").$round.ninja_log"
  read -r user sys <"$out/cpu"
  echo "$(echo "$end - $start" | bc) $(echo "$user + $sys" | bc)"
}

printf '%-6s %-9s %10s %10s\n' round tree wall_s cpu_s
for round in $(seq "$rounds"); do
  b=$(build "$dir/baseline")
  read -r bw bc_ <<<"$b"
  printf '%-6s %-9s %10.0f %10.0f\n' "$round" baseline "$bw" "$bc_"
  h=$(build "$dir/head")
  read -r hw hc <<<"$h"
  printf '%-6s %-9s %10.0f %10.0f\n' "$round" HEAD "$hw" "$hc"
  printf '%-6s %-9s %10.2f %10.2f\n' "$round" ratio "$(echo "$hw / $bw" | bc -l)" "$(echo "$hc / $bc_" | bc -l)"
done
