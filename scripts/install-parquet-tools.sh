#!/usr/bin/env bash
# Installs what scripts/sft-to-parquet.mjs needs, at pinned versions, from the npm registry
# into one directory (default ~/.cache/forge/parquet): apache-arrow (builds the Arrow table)
# and parquet-wasm (the Rust arrow-rs parquet writer compiled to WebAssembly) for the
# converter, and hyparquet (an independent pure-JavaScript parquet reader) with which the
# end-to-end test reads the file back. Debian 12 packages no Arrow or parquet library for
# Python or C++ (no python3-pyarrow, no libarrow/libparquet), and npm is the only other
# registry this project's machines reach. Idempotent: nothing is done when the pinned set is
# already installed.
#
#   scripts/install-parquet-tools.sh [--print-dir]
set -euo pipefail

dir=${FORGE_PARQUET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/parquet}
packages=(apache-arrow@21.2.0 parquet-wasm@0.8.0 hyparquet@1.33.0)

if [[ ${1:-} == --print-dir ]]; then echo "$dir"; exit 0; fi
command -v npm >/dev/null || { echo "install-parquet-tools: npm not found (Node.js >= 20 needed)" >&2; exit 69; }
stamp="$dir/.installed"
if [[ -f $stamp && $(cat "$stamp") == "${packages[*]}" ]]; then
  echo "install-parquet-tools: ${packages[*]} already installed" >&2
  echo "$dir"
  exit 0
fi
echo "install-parquet-tools: installing ${packages[*]} into $dir" >&2
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "${packages[@]}" >&2
echo "${packages[*]}" >"$stamp"
echo "$dir"
