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
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# Benchmarks are built on demand (cmake --build build --target bench-NAME), not for the tests.
cmake --build "$build" -j"$(nproc)" --target forge-tests forge-proxy forge-launch forge-verify forge-dedup forge-pack
cd "$build"
ctest --output-on-failure --timeout 1200 "$@"
