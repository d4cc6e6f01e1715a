#!/usr/bin/env bash
# Every command in forge-verify's man page EXAMPLES and in the shell blocks of
# docs/forge-verify.md is run against empty input files: each forge tool of
# each pipeline must get past its argument parsing (no exit 64). A wrong
# flag in a documented command fails here.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# man: the .nf/.fi blocks after .SH EXAMPLES, up to the next .SH.
awk '/^\.SH EXAMPLES/ {on=1; next} /^\.SH/ {on=0} on && /^\.nf/ {blk=1; next} on && /^\.fi/ {blk=0}
     on && blk && !/^\./ {print}' "$FORGE_SRC/man/forge-verify.1" | sed 's/\\-/-/g' >"$work/man.txt"
# docs: the lines of every ```sh block, comments dropped.
awk '/^```sh/ {blk=1; next} /^```/ {blk=0} blk {print}' "$FORGE_SRC/docs/forge-verify.md" |
  sed 's/[[:space:]]#.*$//' >"$work/docs.txt"
[[ -s "$work/man.txt" ]] || fail "no commands found in man/forge-verify.1 EXAMPLES"
[[ -s "$work/docs.txt" ]] || fail "no commands found in docs/forge-verify.md"

ran=0
while IFS= read -r cmd; do
  [[ -n "${cmd// /}" ]] || continue
  dir="$work/run-$ran"
  mkdir -p "$dir"
  # Every file the command names exists, empty: the tools parse their
  # arguments, then stop on the empty input.
  for word in $cmd; do
    case "$word" in
      *.jsonl|*.db) [[ "$word" == */* ]] || : >"$dir/$word" ;;
      forge-*) [[ -x "$FORGE_BIN/$word" ]] || fail "'$cmd': $FORGE_BIN/$word is not built" ;;
    esac
  done
  rm -f "$dir/forge.db"  # a store that is not SQLite is another error; let the tool make it
  ( cd "$dir" && PATH="$FORGE_BIN:$PATH" timeout 60 bash -c "$cmd"'; echo "${PIPESTATUS[*]}" >status' \
      </dev/null >/dev/null 2>stderr ) || true
  [[ -f "$dir/status" ]] || fail "'$cmd' did not finish: $(head -c 300 "$dir/stderr")"
  for status in $(cat "$dir/status"); do
    [[ "$status" != 64 ]] || fail "'$cmd' exits 64 (usage): $(head -c 300 "$dir/stderr")"
  done
  ran=$((ran + 1))
done < <(cat "$work/man.txt" "$work/docs.txt")

(( ran >= 7 )) || fail "only $ran documented commands found"
echo "verify_doc_examples: $ran documented commands parse"
