#!/usr/bin/env bash
# Builds forge's libFuzzer targets with clang and runs each for a bounded time.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60; FUZZ_TARGETS="fuzz_sse …" picks some)
# Inputs that crashed once are kept in fuzz/regressions/<target>/ and are
# replayed first on every run; seeds live in fuzz/corpus/<target>/.
# FUZZ_SEED=N makes a run reproducible: libFuzzer's random seed N and a work
# corpus emptied first, so the same inputs are tried in the same order (as
# far as the time allows). Unset: a random seed, and the work corpus kept
# from earlier runs in $BUILD/corpus/ (exploration goes on where it stopped).
# Needs clang with libFuzzer: apt-get install clang-14 libclang-rt-14-dev.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD:-$SRC/build-fuzz}
SECONDS_EACH=${1:-${FUZZ_SECONDS:-60}}
CXX_FUZZ=${CXX_FUZZ:-clang++-14}
read -r -a targets <<< "${FUZZ_TARGETS:-fuzz_sse fuzz_anthropic fuzz_responses fuzz_gemini}"

if ! command -v "$CXX_FUZZ" >/dev/null; then
  echo "fuzz.sh: $CXX_FUZZ not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 69
fi
cmake -S "$SRC" -B "$BUILD" -DFORGE_FUZZ=ON -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
make -C "$BUILD" -j2 "${targets[@]}" >/dev/null

status=0
for t in "${targets[@]}"; do
  regressions=$SRC/fuzz/regressions/$t
  seed_flags=()
  if [ -n "${FUZZ_SEED:-}" ]; then
    seed_flags=(-seed="$FUZZ_SEED")
    rm -rf "$BUILD/corpus/$t"
  fi
  mkdir -p "$regressions" "$BUILD/corpus/$t"
  if compgen -G "$regressions/*" >/dev/null; then
    echo "fuzz.sh: $t: replaying $(ls "$regressions" | wc -l) kept regression input(s)" >&2
    "$BUILD/$t" -runs=0 "$regressions"/* >/dev/null 2>&1 || { echo "fuzz.sh: $t: a kept regression crashes again" >&2; status=1; }
  fi
  seeds=()
  [ -d "$SRC/fuzz/corpus/$t" ] && seeds=("$SRC/fuzz/corpus/$t")
  echo "fuzz.sh: $t: fuzzing for ${SECONDS_EACH}s${FUZZ_SEED:+ (seed $FUZZ_SEED)}" >&2
  if ! "$BUILD/$t" "${seed_flags[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
      -artifact_prefix="$regressions/" -print_final_stats=1 "$BUILD/corpus/$t" "${seeds[@]}" \
      2>"$BUILD/$t.log"; then
    echo "fuzz.sh: $t: crash; input kept in $regressions (log: $BUILD/$t.log)" >&2
    status=1
  fi
  grep -E '^stat::number_of_executed_units' "$BUILD/$t.log" | sed "s/^/fuzz.sh: $t: /" >&2 || true
done
exit $status
