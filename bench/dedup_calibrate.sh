#!/usr/bin/env bash
# Calibrates forge-dedup's model-free defaults on real text from this machine
# (bench/dedup_calibration_set.py: documentation, man pages, code, agent
# trajectories; short, medium and long; word edits at 0, 2, 5, 10 %, a grey
# zone at 20 and 30 %, and 50 % rewrites), then scores each embedding and n-gram length with
# bench/dedup_calibrate_eval.py: the thresholds at which every edit rate up to
# 10 % is found with recall >= 0.95 at precision >= 0.99, and the full table
# at the defaults the tool ships with.
#
#   bench/dedup_calibrate.sh [BUILD_DIR=build]   (PER_CELL=40 SEED=1 SET=file to reuse a set)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
bin="$build/forge-dedup"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
set_file=${SET:-$work/set.jsonl}
if [ ! -s "$set_file" ]; then
  python3 "$here/dedup_calibration_set.py" --per-cell "${PER_CELL:-40}" --seed "${SEED:-1}" >"$set_file"
fi
echo "set: $(wc -l <"$set_file") texts ($set_file)"

runs=()
pairs() {  # pairs NAME forge-dedup-options...
  local name=$1; shift
  "$bin" "$set_file" -f text --no-exact-stage --report-thresholds 0.3 -t 0.99 -q \
    --pairs "$work/$name.pairs" "$@" >/dev/null
  runs+=("$name=$work/$name.pairs")
}
for n in 3 4 5 6; do pairs "ngram-$n" --embedding ngram --ngram "$n"; done
for n in 3 4 5; do pairs "minhash-$n" --embedding minhash --ngram "$n"; done

# The defaults, as the tool reports them in its JSON report.
"$bin" "$set_file" -f text -q --report "$work/ngram.json" >/dev/null
"$bin" "$set_file" -f text -q --embedding minhash --report "$work/minhash.json" >/dev/null
read -r ngram_n ngram_t < <(python3 -c "import json; r=json.load(open('$work/ngram.json')); \
print(r['embedding']['ngram'], [x['threshold'] for x in r['thresholds'] if x.get('chosen')][0])")
read -r minhash_n minhash_t < <(python3 -c "import json; r=json.load(open('$work/minhash.json')); \
print(r['embedding']['ngram'], [x['threshold'] for x in r['thresholds'] if x.get('chosen')][0])")
python3 "$here/dedup_calibrate_eval.py" "$set_file" "${runs[@]}" \
  --at "ngram-$ngram_n=$ngram_t" --at "minhash-$minhash_n=$minhash_t"
