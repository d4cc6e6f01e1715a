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

# The in-sandbox helpers: a man page, --help, 64 on an unknown command; every
# forge-box command the usage lists has its entry in the man page, whose
# EXAMPLES run.
for tool in forge-box forge-relay; do
  [ -f "$FORGE_SRC/man/$tool.1" ] || fail "$tool has no man page"
  expect_exit 0 "$tool --help" "$FORGE_BIN/$tool" --help
done
expect_exit 64 "forge-box with an unknown command" "$FORGE_BIN/forge-box" no-such-command
"$FORGE_BIN/forge-box" --help | sed -n 's/^ *\(usage:\)\? *forge-box \([a-z]*\).*/\2/p' >"$WORK/box-commands"
[ "$(wc -l <"$WORK/box-commands")" -ge 4 ] || fail "forge-box --help lists $(wc -l <"$WORK/box-commands") commands"
while read -r command; do
  grep -q "^\.B $command\b" "$FORGE_SRC/man/forge-box.1" || fail "man/forge-box.1 does not document '$command'"
done <"$WORK/box-commands"
awk '/^\.SH EXAMPLES/ {on=1; next} /^\.SH/ {on=0} on && /^\.nf/ {blk=1; next} on && /^\.fi/ {blk=0}
     on && blk && !/^\./ {print}' "$FORGE_SRC/man/forge-box.1" | sed 's/\\-/-/g' >"$WORK/box-examples"
[ -s "$WORK/box-examples" ] || fail "no EXAMPLES in man/forge-box.1"
PATH="$FORGE_BIN:$PATH" bash -e "$WORK/box-examples" >/dev/null || fail "man/forge-box.1's EXAMPLES failed"
# forge-box sleep: a SIGTERM ends it (the watchdog cuts its timer short so).
"$FORGE_BIN/forge-box" sleep 100 &
pid=$!
sleep 0.2
kill -TERM $pid
for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
kill -0 $pid 2>/dev/null && { kill -9 $pid; fail "forge-box sleep ignored SIGTERM"; }
wait $pid
[ $? -eq 143 ] && pass || fail "forge-box sleep on SIGTERM did not end by it"
expect_exit 0 "forge-box sleep 0" "$FORGE_BIN/forge-box" sleep 0
expect_exit 64 "forge-box sleep with no seconds" "$FORGE_BIN/forge-box" sleep

# A closed stdout ends a tool quietly with exit 0: 5,000 distinct records are
# more than a pipe holds, so forge-dedup's writes hit EPIPE after head exits.
python3 -c '
for i in range(5000):
    print("{\"id\": %d, \"text\": \"record number %d of a long enough text %d\"}" % (i, i, i * 7919))
' >"$WORK/many.jsonl"
"$FORGE_BIN/forge-dedup" --field text --quiet "$WORK/many.jsonl" 2>"$ERR" | head -1 >"$OUT"
codes=("${PIPESTATUS[@]}")
[ "${codes[0]}" -eq 0 ] && pass || fail "forge-dedup into a closed pipe exited ${codes[0]}, want 0"
[ -s "$ERR" ] && fail "forge-dedup into a closed pipe wrote to stderr: $(head -c 300 "$ERR")" || pass
[ "$(wc -l <"$OUT")" -eq 1 ] && pass || fail "head did not get the first record"

# SIGINT and SIGTERM stop a tool that is waiting on its input: 130 and 143.
for sig in INT TERM; do
  want=$([ $sig = INT ] && echo 130 || echo 143)
  mkfifo "$WORK/fifo-$sig"
  exec 7<>"$WORK/fifo-$sig"   # held open and never written: the tool blocks in read
  "$FORGE_BIN/forge-dedup" --field text "$WORK/fifo-$sig" >/dev/null 2>"$ERR" &
  pid=$!
  # Signalled once it catches the signal (SigCgt in /proc): a background job
  # starts with SIGINT ignored, so one sent before the tool's handler is in
  # place would be lost, at any load.
  bit=$([ $sig = INT ] && echo 2 || echo 15)
  for _ in $(seq 200); do
    mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$mask" ] && (( (16#$mask >> (bit - 1)) & 1 )) && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  kill -0 $pid 2>/dev/null && pass || fail "forge-dedup did not wait on its input: $(cat "$ERR")"
  kill -$sig $pid 2>/dev/null
  for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then
    kill -9 $pid
    fail "forge-dedup ignored SIG$sig"
  fi
  wait $pid
  got=$?
  exec 7>&-
  [ "$got" -eq "$want" ] && pass || fail "forge-dedup on SIG$sig exited $got, want $want"
done

# A missing input file is 66; a malformed line is reported with file:line and
# the rest flows on, then 65.
expect_exit 66 "forge-dedup on a missing file" "$FORGE_BIN/forge-dedup" --field text /nonexistent.jsonl
printf '{"id":1,"text":"first record text"}\n{broken\n{"id":2,"text":"second, different one"}\n' >"$WORK/bad.jsonl"
expect_exit 65 "forge-dedup with a malformed line" "$FORGE_BIN/forge-dedup" --field text --quiet "$WORK/bad.jsonl"
grep -q "bad.jsonl:2: " "$ERR" || fail "the malformed line was not reported as file:line: $(cat "$ERR")"
[ "$(wc -l <"$OUT")" -eq 2 ] && pass || fail "the good records did not flow on: $(cat "$OUT")"

# forge-proxy's call path (lib/proxy/call_handler_asio.h): the record has one
# owner, CallRecording, the only file that hands a call to the recorder; the
# exchange, which picks and tries the upstreams, neither reads nor writes it
# (the upstream comes from the decoded request, never from the record).
submitters=$(grep -l "recorder\.Submit(\|recorder_->Submit(" "$FORGE_SRC"/lib/proxy/*.cpp | xargs -n1 basename | tr '\n' ' ')
[ "$submitters" = "call_record.cpp " ] && pass || fail "calls are handed to the recorder from: $submitters (want call_record.cpp alone)"
if grep -n "CallRecord\|store/\|rec()" "$FORGE_SRC"/lib/proxy/upstream_exchange_asio.h "$FORGE_SRC"/lib/proxy/upstream_exchange.cpp; then
  fail "the exchange (upstream_exchange.*) names the call's record"
else
  pass
fi

# Boost.Asio and Beast stay in the proxy's Asio implementation: no header
# under lib/ includes boost/ or an Asio implementation header (proxy/asio.h,
# proxy/*_asio.h) but those headers themselves, so what a stage that only
# computes, a tool or a test includes parses no Boost, and an edit to one
# recompiles no Asio. The one other Boost header allowed: Boost.Container's
# small_vector in base/json_scan.h (header-only, on the JSON hot path).
boosted=$(cd "$FORGE_SRC" && find lib -name '*.h' -print0 |
  xargs -0 grep -lE '^\s*#\s*include\s*[<"](boost/|proxy/asio\.h|proxy/[a-z_]*_asio\.h)' |
  grep -vE '^lib/proxy/(asio|[a-z_]*_asio)\.h$|^lib/base/json_scan\.h$' | tr '\n' ' ')
[ -z "$boosted" ] && pass || fail "headers outside the Asio implementation include Boost or proxy/*asio.h: $boosted"
# ... and the Asio implementation's headers sit in lib/proxy alone.
stray=$(cd "$FORGE_SRC" && find lib tools -name '*_asio.h' -not -path 'lib/proxy/*' | tr '\n' ' ')
[ -z "$stray" ] && pass || fail "Asio implementation headers outside lib/proxy: $stray"

finish
