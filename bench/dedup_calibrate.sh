#!/usr/bin/env bash
# Calibrates forge-dedup's model-free defaults on real text from this machine
# and checks them on text kept aside (bench/dedup_calibration_set.py: package
# documentation, licences, man pages, code and comments in nine languages,
# agent trajectories recorded by forge-proxy and rendered from its store;
# 15 to 3,000 words; word edits at 0, 2, 5, 10 %, a grey zone at 20 and 30 %,
# 50 % rewrites; every package's texts in either the chosen or the held set),
# one set per seed. Scores each embedding, n-gram length and dimension with
# bench/dedup_calibrate_eval.py: the thresholds at which every edit rate up to
# 10 % is found with recall >= 0.97 at precision >= 0.99 on each seed's
# chosen sets, the middle of those that do in every seed, and the figures
# there on both; then the table by seed, source and length, chosen and held
# side by side, at the defaults the tool ships.
#
#   nice -n 10 bench/dedup_calibrate.sh [BUILD_DIR=build]    (about an hour on 2 busy cores)
#     SEEDS="1 2 3": the sets; PER_CELL=40: bases per source, length and set;
#     SETS=DIR: keep the sets in DIR/set<seed> (made if missing) to reuse them;
#     WORK=DIR: keep the stores and pairs there; CONFIGS="ngram-5 ngram-5-d4096
#     minhash-5-h256 ...": the configurations to score (default: all below)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
work=${WORK:-}
[ -n "$work" ] && mkdir -p "$work" || work=$(mktemp -d)
proxy_pid=
cleanup() {
  [ -z "$proxy_pid" ] || { kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null || true; }
  [ -n "${WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
say() { echo "dedup_calibrate: $*" >&2; }

# record DIR STORE: forge-proxy serves the set's recorded exchanges and
# records the calls in STORE, as it records a harness's.
record() {
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  rm -f "$2"*
  "$build/forge-proxy" --store "$2" --replay "$1/exchanges.jsonl" --open --port "$port" \
    --health-interval 0 2>"$work/proxy.err" &
  proxy_pid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
  python3 "$here/dedup_send_calls.py" "$1/exchanges.jsonl" "http://127.0.0.1:$port"
  kill -TERM "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true; proxy_pid=
}

seeds=${SEEDS:-1 2 3}
sets=${SETS:-$work}
set_files=()
for seed in $seeds; do
  dir=$sets/set$seed
  if [ ! -s "$dir/texts.jsonl" ]; then
    say "building the sets of seed $seed in $dir (a few minutes)"
    python3 "$here/dedup_calibration_set.py" --per-cell "${PER_CELL:-40}" --seed "$seed" --out "$dir"
  fi
  echo "seed $seed: $(wc -l <"$dir/texts.jsonl") texts and $(wc -l <"$dir/trajectories.jsonl") trajectories ($dir)"
  record "$dir" "$work/trajectories$seed.db"
  set_files+=(--set "$dir/texts.jsonl" --set "$dir/trajectories.jsonl")
done

runs=()
lowest=0.5  # pairs are searched from here up (ngram-3 finds 10^7 pairs above 0.3)
pairs() {  # pairs NAME forge-dedup-options...: each seed's pairs, texts and trajectories
  local name=$1 files=() seed; shift
  say "pairs of $name"
  local common=(--no-exact-stage --report-thresholds "$lowest" -t 0.99 -q "$@")
  for seed in $seeds; do
    "$build/forge-dedup" "$sets/set$seed/texts.jsonl" -f text "${common[@]}" \
      --pairs "$work/$name.$seed.texts" >/dev/null
    "$build/forge-dedup" "$sets/set$seed/trajectories.jsonl" --trajectories \
      --store "$work/trajectories$seed.db" "${common[@]}" --pairs "$work/$name.$seed.trajs" >/dev/null
    files+=("$work/$name.$seed.texts" "$work/$name.$seed.trajs")
  done
  runs+=("$name=$(IFS=,; echo "${files[*]}")")
}
configs=${CONFIGS:-"ngram-3 ngram-4 ngram-5 ngram-6 ngram-5-d2048 ngram-5-d4096
  minhash-3 minhash-4 minhash-5 minhash-5-h256"}
for c in $configs; do
  IFS=- read -r kind n extra <<<"$c"
  opts=(--embedding "$kind" --ngram "$n")
  case $extra in
    d*) opts+=(--dim "${extra#d}") ;;
    h*) opts+=(--minhash-hashes "${extra#h}") ;;
  esac
  pairs "$c" "${opts[@]}"
done

# The defaults, as the tool reports them in its JSON report.
first=$sets/set${seeds%% *}/texts.jsonl
default() {  # default OPTIONS... -> "kind-n[-dDIM] threshold"
  "$build/forge-dedup" "$first" -f text -q --report "$work/d.json" "$@" >/dev/null
  python3 -c "import json; r=json.load(open('$work/d.json')); e=r['embedding']; \
t=[x['threshold'] for x in r['thresholds'] if x.get('chosen')][0]; \
d='' if e['kind'] == 'minhash' or e['dim'] == 1024 else '-d%d' % e['dim']; \
print('%s-%d%s' % (e['kind'], e['ngram'], d), t)"
}
read -r ngram_name ngram_t < <(default)
read -r minhash_name minhash_t < <(default --embedding minhash)
for name in "$ngram_name" "$minhash_name"; do
  case " $(echo $configs) " in *" $name "*) ;; *) pairs "$name" --embedding "${name%%-*}" ;; esac
done
python3 "$here/dedup_calibrate_eval.py" "${set_files[@]}" --lowest "$lowest" "${runs[@]}" \
  --at "$ngram_name=$ngram_t" --at "$minhash_name=$minhash_t"
