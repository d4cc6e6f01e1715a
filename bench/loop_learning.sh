#!/usr/bin/env bash
# Does the miniature loop learn? (examples/loop/README.md)
# Runs examples/loop/run.sh once per seed and prints held-out pass@1 per stage:
# the untrained model, the SFT checkpoint (stopped early) and after each GRPO
# round, then the range over the seeds. The untrained model is the baseline
# measured in the same run.
#
#   bench/loop_learning.sh [--seeds "1 2"] [--out DIR] [run.sh options...]
#
# FORGE_BIN names the directory with the forge binaries (default: build).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
seeds="1 2" out=${TMPDIR:-/tmp}/forge-loop-bench
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
for seed in $seeds; do
  echo "== seed $seed" >&2
  start=$(date +%s)
  bash "$src/examples/loop/run.sh" --out "$out/seed-$seed" --seed "$seed" "${args[@]}" >&2
  echo "== seed $seed: $(( $(date +%s) - start )) s" >&2
done

/usr/bin/python3 - "$out" $seeds <<'PY'
import json, sys
out, seeds = sys.argv[1], sys.argv[2:]
runs = {s: [json.loads(l) for l in open("%s/seed-%s/rounds.jsonl" % (out, s))] for s in seeds}
stages = [r["stage"] for r in runs[seeds[0]]]
print("held-out pass@1 (sampling at temperature 1)")
print("%-10s" % "stage" + "".join("%10s" % ("seed " + s) for s in seeds) + "%16s" % "range")
for i, stage in enumerate(stages):
    values = [runs[s][i]["heldout_pass_at_1"] for s in seeds]
    print("%-10s" % stage + "".join("%10.3f" % v for v in values) + "%16s" % ("%.3f-%.3f" % (min(values), max(values))))
for s in seeds:
    r = {x["stage"]: x["heldout_pass_at_1"] for x in runs[s]}
    last = runs[s][-1]
    print("seed %s: SFT %+.3f over untrained, last round %+.3f over SFT" %
          (s, r["sft"] - r["untrained"], last["heldout_pass_at_1"] - r["sft"]))
PY
