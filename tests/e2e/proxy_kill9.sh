#!/usr/bin/env bash
# kill -9 under load: every call a client saw complete (whole body, or a
# stream through [DONE]) must be in the store afterwards, because the proxy
# commits a call before sending its final bytes.
source "$FORGE_SRC/tests/support/proxy_env.sh"

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT"
register_rollout "$STORE" load load-secret

# Each client loops over distinct requests and notes each tag it saw complete.
client() {
  local id=$1 i=0
  while [ $i -lt 200 ]; do
    local tag="c$id-$i" stream=false
    [ $((i % 2)) = 1 ] && stream=true
    out=$(curl -sN --max-time 10 -H 'Authorization: Bearer load-secret' \
      -d "{\"model\":\"m\",\"stream\":$stream,\"messages\":[{\"role\":\"user\",\"content\":\"$tag script:words:8\"}]}" \
      "$PROXY/v1/chat/completions" 2>/dev/null) || return 0
    if [ $stream = true ]; then
      echo "$out" | grep -q '^data: \[DONE\]' || return 0
    else
      echo "$out" | grep -q '"finish_reason": *"stop"' || return 0
    fi
    echo "$tag" >> "$WORK/seen.$id"
    i=$((i + 1))
  done
}
clients=()
for id in $(seq 1 8); do client "$id" & clients+=($!); done
sleep 4
kill -9 "$PROXY_PID"
for pid in "${clients[@]}"; do wait "$pid" 2>/dev/null || true; done
cat "$WORK"/seen.* | sort > "$WORK/seen"
# The database as the kill left it; the next forge tool to open the store
# moves what the proxy's call log still held into it.
[ "$(ls "$STORE"-calls-* 2>/dev/null | wc -l)" = 1 ] || fail "kill -9 left no call log beside the store"
in_db_at_kill=$(sqlite3 "$STORE" "SELECT count(*) FROM calls")
# Every record the kill left is whole and checks out (a wrong checksum in the
# middle would stop recovery there and lose the calls after it).
mkdir "$WORK/copy" && cp "$STORE"* "$WORK/copy/"
"$FORGE_BIN/forge-proxy" --store "$STORE" --check-call-log > "$WORK/check" || fail "call log check: $(cat "$WORK/check")"
py 'd["calls"] > 0 and d["bad_records"] == []' < "$WORK/check" || fail "call log check: $(cat "$WORK/check")"
# A damaged record is named (exit 65), and nothing is moved by the check.
log_copy=$(ls "$WORK/copy/"*-calls-*)
python3 - "$log_copy" <<'PY'
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
offset = 8 + 16 + (struct.unpack_from("<Q", data, 8)[0] & ~(1 << 63))  # the second record
data[offset + 16 + 10] ^= 0xFF
open(path, "wb").write(data)
PY
status=0
"$FORGE_BIN/forge-proxy" --store "$WORK/copy/forge.db" --check-call-log > "$WORK/check" 2> "$WORK/check.err" || status=$?
[ "$status" = 65 ] || fail "a damaged call log record gave exit $status"
grep -q "at byte" "$WORK/check.err" || fail "the damaged record is not named: $(cat "$WORK/check.err")"
[ -e "$log_copy" ] || fail "--check-call-log moved the log"
[ -s "$WORK/seen" ] || fail "no call completed before the kill"
calls "$STORE" load | python3 -c '
import json, sys
for line in sys.stdin:
    c = json.loads(line)
    if c["http_status"] == 200:
        print(c["request"]["messages"][-1]["content"].split()[0])' | sort -u > "$WORK/stored"
missing=$(comm -23 "$WORK/seen" "$WORK/stored" | wc -l)
echo "clients saw $(wc -l < "$WORK/seen") calls complete; store holds $(wc -l < "$WORK/stored") ($in_db_at_kill were in the database at the kill, the rest came from the call log); missing $missing"
[ "$(ls "$STORE"-calls-* 2>/dev/null | wc -l)" = 0 ] || fail "the call log was not removed after recovery"
[ "$missing" = 0 ] || fail "calls seen complete but not in the store: $(comm -23 "$WORK/seen" "$WORK/stored" | head)"
pass "kill -9 under load lost no call a client saw complete"
