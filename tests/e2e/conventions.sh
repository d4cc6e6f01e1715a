#!/usr/bin/env bash
# The CLI conventions every forge binary follows, checked on the real binaries.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"

for tool in forge-proxy forge-launch forge-verify forge-dedup forge-pack; do
  bin="$FORGE_BIN/$tool"
  expect_exit 0 "$tool --help" "$bin" --help
  grep -q "Exit status" "$OUT" || fail "$tool --help does not document exit status"
  expect_exit 0 "$tool --version" "$bin" --version
  grep -qx "$tool [0-9]*\.[0-9]*\.[0-9]*" "$OUT" || fail "$tool --version printed '$(cat "$OUT")'"
  expect_exit 64 "$tool with an unknown flag" "$bin" --no-such-flag
  grep -q "^$tool: error: " "$ERR" || fail "$tool's usage error is not prefixed with its name: $(cat "$ERR")"
  [ -f "$FORGE_SRC/man/$tool.1" ] || fail "$tool has no man page"
done
finish
