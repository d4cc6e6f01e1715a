#!/usr/bin/env bash
# Every command in every man page's EXAMPLES (man/*.1) and in the shell
# blocks of docs/forge-verify.md is run against empty input files: each
# forge tool of each pipeline must get past its argument parsing (no exit
# 64). A wrong flag in a documented command fails here. A command that
# serves (forge-proxy) is stopped after a few seconds: it parsed. A URL that
# names a host other than 127.0.0.1 is pointed at 127.0.0.1:9 (nothing
# listens) before the command runs: tests talk to no other address. No
# Docker engine answers them (DOCKER_HOST names no socket): an example such
# as `forge-launch gc` must not touch a real engine's sandboxes.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# man: the .nf/.fi blocks after .SH EXAMPLES, up to the next .SH; roff's
# escapes undone; a line ending in a backslash joined to the next.
man_examples() {
  awk '/^\.SH EXAMPLES/ {on=1; next} /^\.SH/ {on=0} on && /^\.nf/ {blk=1; next} on && /^\.fi/ {blk=0}
       on && blk && !/^\./ {print}' "$1" |
    sed -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\\\/\\/g' |
    awk '/\\$/ {sub(/\\$/, ""); line = line $0; next} {print line $0; line = ""}'
}
: >"$work/commands.txt"
for page in "$FORGE_SRC"/man/*.1; do
  before=$(wc -l <"$work/commands.txt")
  man_examples "$page" | grep -v '^[[:space:]]*\(#\|$\)' >>"$work/commands.txt" || true
  (( $(wc -l <"$work/commands.txt") > before )) || fail "no commands found in $(basename "$page")'s EXAMPLES"
done
# docs: the lines of every ```sh block, comments dropped.
awk '/^```sh/ {blk=1; next} /^```/ {blk=0} blk {print}' "$FORGE_SRC/docs/forge-verify.md" |
  sed 's/[[:space:]]#.*$//' >"$work/docs.txt"
[[ -s "$work/docs.txt" ]] || fail "no commands found in docs/forge-verify.md"

ran=0
while IFS= read -r cmd; do
  [[ -n "${cmd// /}" ]] || continue
  cmd=$(sed -E 's#(https?://)(localhost|[a-z][a-z0-9.-]*\.[a-z]+)(:[0-9]+)?#\1127.0.0.1:9#g' <<<"$cmd")
  dir="$work/run-$ran"
  mkdir -p "$dir"
  # Every file the command names exists, empty: the tools parse their
  # arguments, then stop on the empty input.
  for word in $cmd; do
    case "$word" in
      *.jsonl|*.db) [[ "$word" == */* ]] || : >"$dir/$word" ;;
      forge-proxy|forge-launch|forge-verify|forge-dedup|forge-pack|forge-box|forge-relay)
        [[ -x "$FORGE_BIN/$word" ]] || fail "'$cmd': $FORGE_BIN/$word is not built" ;;
    esac
  done
  rm -f "$dir"/*.db  # a store that is not SQLite is another error; let the tool make it
  ( cd "$dir" && DOCKER_HOST="unix://$work/no-engine.sock" PATH="$FORGE_BIN:$PATH" timeout -k 5 10 bash -c "$cmd"'; echo "${PIPESTATUS[*]}" >status' \
      </dev/null >/dev/null 2>stderr ) || true
  if [[ -f "$dir/status" ]]; then
    for status in $(cat "$dir/status"); do
      [[ "$status" != 64 ]] || fail "'$cmd' exits 64 (usage): $(head -c 300 "$dir/stderr")"
    done
  elif grep -q "error: " "$dir/stderr"; then
    fail "'$cmd' was stopped after an error: $(head -c 300 "$dir/stderr")"
  fi
  ran=$((ran + 1))
done < <(cat "$work/commands.txt" "$work/docs.txt")

(( ran >= 30 )) || fail "only $ran documented commands found"
echo "doc_examples: $ran documented commands parse"
