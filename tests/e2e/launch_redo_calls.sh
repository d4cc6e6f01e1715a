#!/usr/bin/env bash
# An attempt run again keeps its rollout id (a run resumed after a crash, an
# infrastructure failure retried), so the calls forge-proxy recorded for the
# try that died must not be read as the new try's: forge-pack would train on
# them with the new try's reward. The reference ReACT harness on the local
# backend, through a real forge-proxy in front of a scripted model server.
# A crash is left as it leaves the store: the rollout still "running".
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
LAUNCH="$BIN/forge-launch"
work="$(mktemp -d)"
run="redo-$$-$RANDOM"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local gc --run-id "$run" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

python3 "$SRC/tests/support/react_model.py" "$work/port" --command 'echo hi > hi.txt' &
pids+=($!)
for _ in $(seq 50); do [[ -s "$work/port" ]] && break; sleep 0.1; done
proxy_port=$(free_port)
"$BIN/forge-proxy" --store "$work/forge.db" --port "$proxy_port" --health-interval 0 \
  --upstream "http://127.0.0.1:$(cat "$work/port")/v1" 2>"$work/proxy.err" &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$proxy_port/healthz" && break; sleep 0.05; done
echo '{"id":"hello","instruction":"Create hi.txt"}' >"$work/tasks.jsonl"
launch() {
  FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local --store "$work/forge.db" --run-id "$run" \
    --harness react --proxy "http://127.0.0.1:$proxy_port" "$work/tasks.jsonl"
}
calls() { "$BIN/forge-proxy" --store "$work/forge.db" --dump-rollout "$1" | wc -l; }
# As a launcher that died mid-attempt leaves it (waiting out a proxy's writer).
unfinish_rollout() {
  sqlite3 -cmd ".timeout 10000" "$work/forge.db" "UPDATE rollouts SET status = 'running', outcome = NULL WHERE id = '$rollout'"
}

launch >"$work/first.out" 2>"$work/first.err"
rollout=$(jq -r .rollout_id "$work/first.out")
[[ "$(jq -r .outcome "$work/first.out")" == ok ]] || fail "first try: $(cat "$work/first.out" "$work/first.err")"
[[ "$(calls "$rollout")" == 2 ]] || fail "first try: $(calls "$rollout") calls recorded, expected 2"
jq -e 'has("set_aside_calls") | not' "$work/first.out" >/dev/null || fail "a first try set calls aside"

# The launcher died before the attempt was finished: a rerun redoes it.
unfinish_rollout
launch >"$work/second.out" 2>"$work/second.err"
[[ "$(jq -r .outcome "$work/second.out")" == ok ]] || fail "second try: $(cat "$work/second.out" "$work/second.err")"
[[ "$(jq -r .resumed "$work/second.out")" != true ]] || fail "the unfinished attempt was not run again"
[[ "$(calls "$rollout")" == 2 ]] || fail "the rollout holds $(calls "$rollout") calls after the redo, expected the new try's 2"
[[ "$(calls "$rollout~1")" == 2 ]] || fail "the first try's calls are not kept as $rollout~1"
jq -e --arg id "$rollout~1" '.set_aside_calls == [{"rollout_id": $id, "calls": 2}]' "$work/second.out" >/dev/null \
  || fail "record: $(jq -c .set_aside_calls "$work/second.out")"
grep -q "2 calls of an earlier try set aside as rollout $rollout~1" "$work/second.err" || fail "stderr: $(cat "$work/second.err")"
# Every prompt reads back whole, also one stored against a call set aside
# (the proxy remembers the rollout's last prompts): both tries sent the same.
prompts() { "$BIN/forge-proxy" --store "$work/forge.db" --dump-rollout "$1" | jq -c -s 'map(.prompt_ids)'; }
[[ "$(prompts "$rollout")" == "$(prompts "$rollout~1")" ]] || fail "prompt ids after the redo: $(prompts "$rollout")"
prompts "$rollout" | jq -e 'length == 2 and (.[0] | length) > 0 and .[1][:(.[0] | length)] == .[0]' >/dev/null \
  || fail "prompt ids: $(prompts "$rollout")"
echo "ok - a redone attempt's rollout holds its own calls; the dead try's are set aside"

# And again: the next set aside takes the next number.
unfinish_rollout
launch >"$work/third.out" 2>/dev/null
[[ "$(calls "$rollout~2")" == 2 && "$(calls "$rollout")" == 2 ]] || fail "third try: ~2 $(calls "$rollout~2"), rollout $(calls "$rollout")"
echo "ok - a second redo sets the calls aside as ~2"

# A dead try's call still in flight when the next try sets its calls aside
# (a long generation whose client is gone) is recorded after: it joins them.
# It comes through a second proxy on the store, --open, which attributes a
# call to the rollout in its path; the new try's first answer is held back so
# the late call lands while the try runs.
slow_port=$(free_port)
open_port=$(free_port)
python3 "$SRC/tests/support/react_model.py" "$work/slow-port" --command 'echo hi > hi.txt' --first-turn-delay 4 &
pids+=($!)
for _ in $(seq 50); do [[ -s "$work/slow-port" ]] && break; sleep 0.1; done
"$BIN/forge-proxy" --store "$work/forge.db" --port "$open_port" --health-interval 0 --open \
  --upstream "http://127.0.0.1:$(cat "$work/slow-port")/v1" 2>>"$work/proxy.err" &
pids+=($!)
"$BIN/forge-proxy" --store "$work/forge.db" --port "$slow_port" --health-interval 0 \
  --upstream "http://127.0.0.1:$(cat "$work/slow-port")/v1" 2>>"$work/proxy.err" &
pids+=($!)
for p in "$open_port" "$slow_port"; do
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$p/healthz" && break; sleep 0.05; done
done
unfinish_rollout
curl -s -o "$work/late.json" -d '{"model":"m","messages":[{"role":"user","content":"sleep:2"}]}' \
  "http://127.0.0.1:$open_port/r/$rollout/v1/chat/completions" &
late=$!
sleep 0.5
FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local --store "$work/forge.db" --run-id "$run" \
  --harness react --proxy "http://127.0.0.1:$slow_port" "$work/tasks.jsonl" >"$work/fourth.out" 2>"$work/fourth.err"
wait $late
jq -e '.choices[0].message.content == "echo hi > hi.txt"' "$work/late.json" >/dev/null || fail "late call: $(cat "$work/late.json")"
[[ "$(jq -r .outcome "$work/fourth.out")" == ok ]] || fail "fourth try: $(cat "$work/fourth.out" "$work/fourth.err")"
[[ "$(calls "$rollout")" == 2 ]] || fail "the late call of the dead try stayed with the rollout: $(calls "$rollout") calls"
[[ "$(calls "$rollout~3")" == 3 ]] || fail "the dead try's calls under ~3: $(calls "$rollout~3"), expected its 2 and the late one"
jq -e --arg id "$rollout~3" '.set_aside_calls == [{"rollout_id": $id, "calls": 3}]' "$work/fourth.out" >/dev/null \
  || fail "record: $(jq -c .set_aside_calls "$work/fourth.out")"
echo "ok - a dead try's call recorded after the set-aside joins its try's calls"
echo PASS
