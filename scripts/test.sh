#!/usr/bin/env bash
# Builds forge and runs every test: doctest unit tests and the end-to-end
# tests that drive the real binaries (Docker tests need a running dockerd;
# scripts/start-dockerd.sh starts one).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# The real harnesses and the parquet tools the tests drive come from npm at pinned
# versions; both scripts do nothing when they are already installed.
bash scripts/install-harnesses.sh >/dev/null
bash scripts/install-parquet-tools.sh >/dev/null
build=${FORGE_BUILD_DIR:-build}
# ccache, where installed, makes a rebuild in a second checkout cheap.
launcher=()
# The library's precompiled header needs ccache's pch_defines and time_macros
# sloppiness, or ccache caches nothing.
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
# Every target, benchmarks included: a benchmark that no longer compiles is a
# failure here, not a surprise on the day it is needed.
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure --timeout 1200 "$@"
