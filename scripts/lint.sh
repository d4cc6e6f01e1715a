#!/usr/bin/env bash
# Runs clang-tidy (its default checks: the compiler's warnings and the static
# analyzer) over forge's sources.
#   scripts/lint.sh [FILE...]   (default: every .cpp under lib/ and tools/)
# The build's precompiled header is GCC's, which clang-tidy cannot read, and its
# unity batches hide each file's own command, so the compile commands come
# from a configure of their own without either, in build-lint/ (LINT_BUILD=DIR
# picks another); nothing is compiled.
# Exit status: 0 clean, 1 findings, 69 without clang-tidy.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LINT_BUILD:-$SRC/build-lint}
if ! command -v clang-tidy >/dev/null; then
  echo "lint.sh: clang-tidy not found (apt-get install clang-tidy)" >&2
  exit 69
fi
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DCMAKE_UNITY_BUILD=OFF \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(cd "$SRC" && find lib tools -name '*.cpp' | sort)
fi
status=0
for f in "${files[@]}"; do
  [ -t 2 ] && printf 'lint.sh: %s\n' "$f" >&2
  # Findings go to stdout with their file and line; SQLite's, Boost's and
  # the other headers' own are suppressed (not user code).
  # (Boost 1.74's Asio looks for clang's coroutines in libc++'s
  # <experimental/coroutine>; with libstdc++ they are in <coroutine>, and
  # without these it compiles none of the proxy's co_await code.)
  out=$(cd "$SRC" && clang-tidy --quiet -p "$BUILD" --extra-arg=-DBOOST_ASIO_HAS_CO_AWAIT \
          --extra-arg=-DBOOST_ASIO_HAS_STD_COROUTINE "$f" 2>/dev/null) || true
  # An error is the compiler's, wherever it points; a warning counts where it
  # is in this tree (the analyzer follows a path into Boost's coroutine
  # frames, awaitable.hpp, and flags their uninitialised-looking pointer).
  if grep -q "error:" <<< "$out" || grep -qE "^($SRC/)?(lib|tools|tests|bench)/[^:]*:[0-9]+:[0-9]+: warning:" <<< "$out"; then
    printf '%s\n' "$out"
    status=1
  fi
done
exit $status
