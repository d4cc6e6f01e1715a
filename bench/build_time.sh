#!/usr/bin/env bash
# Build times, this tree's HEAD against a baseline commit, interleaved
# (baseline, HEAD, baseline, HEAD, ...) on the same machine in one run: wall
# seconds and CPU seconds (user + sys of every compiler and linker), ccache off
# for what is timed.
#
#   bench/build_time.sh BASELINE_REV [ROUNDS]           a clean build of every target
#   bench/build_time.sh --proxy BASELINE_REV [ROUNDS]   the proxy layer: one-file edits,
#       each a touch of one .cpp and a rebuild of forge-proxy ($PROXY_EDITS, files under
#       lib/proxy/; default upstream_exchange.cpp, on every call's path, which exists on
#       either side), ROUNDS times; then its clean build (ninja forge_proxy with its
#       objects removed, the layers below built), ROUNDS times. forge-proxy is built
#       once a tree first, through ccache, and not counted.
#
# ROUNDS: 2, or 3 with --proxy. `ninja -j$(nproc)` in a fresh build directory. Each
# commit is checked out into a worktree under $BENCH_DIR (default
# /tmp/forge-build-time), removed at the end; each build's .ninja_log stays there as
# baseline.WHAT.ROUND.ninja_log and head.WHAT.ROUND.ninja_log. Prints one line a measure and the
# ratios HEAD / baseline per round. A clean build of every target takes ROUNDS x (both
# builds): about an hour for 2 rounds on 2 cores; --proxy about 20 minutes for 3 on an idle machine.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
proxy=0
if [ "${1:-}" = --proxy ]; then
  proxy=1
  shift
fi
base_rev=${1:?usage: bench/build_time.sh [--proxy] BASELINE_REV [ROUNDS]}
rounds=${2:-$((2 + proxy))}
edits=${PROXY_EDITS:-upstream_exchange.cpp}
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

# timed TREE TARGET...: ninja in TREE's build directory; prints "wall cpu" in seconds.
timed() {
  local tree=$1 out=$1/build-time start end
  shift
  start=$(date +%s.%N)
  CCACHE_DISABLE=1 /usr/bin/time -f "%U %S" -o "$out/cpu" ninja -C "$out" -j"$(nproc)" "$@" >>"$out/log" 2>&1 ||
    { echo "build of $tree failed: $out/log" >&2; return 1; }
  end=$(date +%s.%N)
  read -r user sys <"$out/cpu"
  echo "$(echo "$end - $start" | bc) $(echo "$user + $sys" | bc)"
}

# configure TREE: a fresh build directory. (The compiler goes through ccache
# only for the untimed builds: timed ones set CCACHE_DISABLE.)
configure() {
  local out=$1/build-time
  rm -rf "$out"
  cmake -S "$1" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
}

# measure TREE WHAT: one line "name wall cpu" a measure.
measure() {
  local tree=$1
  case $2 in
    all)
      configure "$tree"
      echo "all $(timed "$tree")"
      ;;
    layer)
      # The layer's objects removed: a clean build of it, the layers below built.
      find "$tree/build-time/CMakeFiles/forge_proxy.dir" -name "*.o" -delete
      echo "layer $(timed "$tree" forge_proxy)"
      ninja -C "$tree/build-time" -j"$(nproc)" forge-proxy >/dev/null
      ;;
    edits)
      for file in $edits; do
        touch "$tree/lib/proxy/$file"
        echo "edit:$file $(timed "$tree" forge-proxy)"
      done
      ;;
  esac
  # ninja's step times, kept for "where the time goes" after the worktree is removed.
  cp "$tree/build-time/.ninja_log" "$dir/$(basename "$tree").$2.$round.ninja_log"
}

printf '%-6s %-9s %-32s %10s %10s\n' round tree measure wall_s cpu_s
# rounds ROUNDS WHAT: baseline and HEAD interleaved, ROUNDS times.
rounds() {
  for round in $(seq "$1"); do
    mapfile -t b < <(measure "$dir/baseline" "$2")
    mapfile -t h < <(measure "$dir/head" "$2")
    for i in "${!b[@]}"; do
      read -r name bw bc_ <<<"${b[$i]}"
      read -r _ hw hc <<<"${h[$i]}"
      printf '%-6s %-9s %-32s %10.1f %10.1f\n' "$round" baseline "$name" "$bw" "$bc_"
      printf '%-6s %-9s %-32s %10.1f %10.1f\n' "$round" HEAD "$name" "$hw" "$hc"
      printf '%-6s %-9s %-32s %10.2f %10.2f\n' "$round" ratio "$name" "$(echo "$hw / $bw" | bc -l)" \
        "$(echo "$hc / $bc_" | bc -l)"
    done
  done
}

if [ "$proxy" = 0 ]; then
  rounds "$rounds" all
else
  # forge-proxy built once a tree, through ccache (not counted); then the
  # edits, then the layer's clean builds, each ROUNDS times.
  for tree in "$dir/baseline" "$dir/head"; do
    configure "$tree"
    ninja -C "$tree/build-time" -j"$(nproc)" forge-proxy >/dev/null
  done
  rounds "$rounds" edits
  rounds "$rounds" layer
fi
