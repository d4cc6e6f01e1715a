#!/usr/bin/env bash
# forge-verify compare's per-task intervals, this build against a baseline
# build (BASELINE_VERIFY, e.g. the forge-verify of the commit before issue
# 58, whose per-task intervals resampled each run's trials):
#   - CPU seconds (user + sys) of `compare -k 1,4 --json --html` on two
#     generated runs of 2,000 tasks (tests/e2e/verify/scale_runs.py), rounds
#     interleaved, the range over them;
#   - the intervals' coverage of p_B - p_A by exact enumeration
#     (tests/e2e/verify/coverage.py) at n = 1, 2, 3, 5, 10: mean and least
#     over true rates 0.05 .. 0.95.
#
#   BASELINE_VERIFY=/path/to/old/forge-verify bench/verify_compare.sh [--rounds 3]
#
# FORGE_BIN names the directory with this build's binaries (default: build).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "verify_compare: unknown argument $1" >&2; exit 64 ;;
  esac
done
new=$(cd "${FORGE_BIN:-$src/build}" && pwd)/forge-verify
old=${BASELINE_VERIFY:?set BASELINE_VERIFY to the baseline forge-verify}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$src/tests/e2e/verify/scale_runs.py" "$work"

cpu() {  # BINARY: CPU seconds of one compare
  /usr/bin/time -f '%U %S' -o "$work/time" "$1" compare -k 1,4 --json --html "$work/page.html" \
    "$work/a.jsonl" "$work/b.jsonl" >/dev/null 2>"$work/err"
  awk '{ printf "%.2f", $1 + $2 }' "$work/time"
}
new_cpu=() old_cpu=()
for ((r = 1; r <= rounds; r++)); do
  old_cpu+=("$(cpu "$old")")
  new_cpu+=("$(cpu "$new")")
  echo "round $r: baseline ${old_cpu[-1]} s, this build ${new_cpu[-1]} s CPU" >&2
done
range() { printf '%s\n' "$@" | sort -n | sed -n '1p;$p' | paste -sd- ; }
ratios=()
for ((r = 0; r < rounds; r++)); do ratios+=("$(awk -v a="${new_cpu[r]}" -v b="${old_cpu[r]}" 'BEGIN { printf "%.2f", a / b }')"); done
echo "compare, 2,000 tasks x 8 trials, k 1,4: this build $(range "${new_cpu[@]}") s CPU, baseline $(range "${old_cpu[@]}") s; ratio $(range "${ratios[@]}")"
for n in 1 2 3 5 10; do
  for which in baseline this; do
    binary=$old; [ "$which" = this ] && binary=$new
    python3 "$src/tests/e2e/verify/coverage.py" "$binary" "$n" "$work" |
      python3 -c 'import json, sys; c = json.load(sys.stdin); print("n=%d %-8s coverage of a 95%% interval of B - A: mean %.3f, least %.3f" % (c["n"], sys.argv[1], c["mean"], c["min"]))' "$which"
  done
done
