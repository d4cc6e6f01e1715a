# Helpers shared by the end-to-end tests. FORGE_BIN is the build directory
# with the binaries, FORGE_SRC the source tree; ctest sets both.
: "${FORGE_BIN:?set FORGE_BIN to the build directory}"
: "${FORGE_SRC:?set FORGE_SRC to the source directory}"

FAILURES=0
PASSES=0
WORK=$(mktemp -d /tmp/forge-e2e.XXXXXX)
OUT=$WORK/stdout
ERR=$WORK/stderr
trap 'rm -rf "$WORK"' EXIT

fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}

pass() {
  PASSES=$((PASSES + 1))
}

# expect_exit CODE DESCRIPTION COMMAND...: runs COMMAND with stdout in $OUT and
# stderr in $ERR and checks its exit status.
expect_exit() {
  local want=$1 what=$2
  shift 2
  "$@" >"$OUT" 2>"$ERR" </dev/null
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$what: exit $got, want $want; stderr: $(head -c 500 "$ERR")"
  else
    pass
  fi
}

finish() {
  echo "$(basename "$0"): $PASSES passed, $FAILURES failed"
  [ "$FAILURES" -eq 0 ]
}
