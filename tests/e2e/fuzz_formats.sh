#!/usr/bin/env bash
# The wire-format fuzz targets (fuzz/*.cpp: SSE parsing, and the Anthropic,
# Responses and Gemini translations both ways) run for a bounded time on
# every test run: their seeds include deep nesting, nesting at the limit,
# long keys and huge arrays (fuzz/corpus/). Inputs that once crashed
# (fuzz/regressions/) are replayed first. A crash fails the test and keeps
# the input. FORGE_FUZZ_SECONDS sets the time per target (default 15).
# The run is reproducible: a fixed seed (FORGE_FUZZ_SEED, default 1) and a
# work corpus emptied first, so a test run tries the same inputs in the same
# order as every other, and a crash it finds is found again on any machine.
# Exploring beyond that is scripts/fuzz.sh's job (random seed, longer).
# Needs clang-14 with libFuzzer (scripts/bootstrap.sh installs it); without
# it the test is a skip, never a pass.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"

command -v clang++-14 >/dev/null || { echo "SKIP: clang++-14 (libFuzzer) not installed"; exit 77; }
seconds=${FORGE_FUZZ_SECONDS:-15}
FUZZ_SEED=${FORGE_FUZZ_SEED:-1} FUZZ_BUILD="$FORGE_BIN/fuzz" bash "$FORGE_SRC/scripts/fuzz.sh" "$seconds" 2>"$ERR"
rc=$?
cat "$ERR" >&2
[ "$rc" -eq 0 ] || fail "a fuzz target crashed (scripts/fuzz.sh exit $rc; the input is kept in fuzz/regressions/)"
# Each target really ran: libFuzzer's final stats name the inputs it executed.
for t in fuzz_sse fuzz_anthropic fuzz_responses fuzz_gemini; do
  runs=$(sed -n "s/^fuzz.sh: $t: stat::number_of_executed_units: *//p" "$ERR")
  [ "${runs:-0}" -gt 100 ] && pass || fail "$t ran ${runs:-no} inputs in ${seconds}s"
done
finish
