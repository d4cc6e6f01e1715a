#!/usr/bin/env bash
# A rollout's conversation grows call by call, and each answer carries every
# prompt token's id: the call log holds a prompt's ids and a request's text
# once and, for the calls after, only what they add. After kill -9, recovery gives every
# call its whole prompt back, id for id.
source "$FORGE_SRC/tests/support/proxy_env.sh"

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT"
register_rollout "$STORE" talk talk-secret
# The store as it is before any call: beside it, the log alone must give
# every call back (the proxy's writer may have moved them all before the kill).
sqlite3 "$STORE" ".backup '$WORK/before.db'"

# Six calls, each resending the conversation so far plus a 1,000-character
# tool result; the client notes each call's messages as the upstream saw them.
python3 - "$PROXY" "$WORK" <<'PY'
import json, sys, urllib.request
proxy, work = sys.argv[1], sys.argv[2]
messages = [{"role": "system", "content": "ids:every-char " + "s" * 12000}]  # a harness's system prompt
sent, requests = [], []
for turn in range(6):
    messages.append({"role": "user", "content": f"turn {turn} " + chr(97 + turn) * 1000})
    body = json.dumps({"model": "m", "messages": messages}).encode()
    req = urllib.request.Request(proxy + "/v1/chat/completions", body,
                                 {"Authorization": "Bearer talk-secret", "Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(req, timeout=30))
    assert "prompt_token_ids" not in answer, "ids reached the client"
    sent.append([100 + (ord(c) % 50) for c in json.dumps(messages)])
    requests.append(list(messages))
    messages.append(answer["choices"][0]["message"])
json.dump(sent, open(work + "/sent.json", "w"))
json.dump(requests, open(work + "/requests.json", "w"))
PY
[ $? = 0 ] || fail "the conversation did not complete"
kill -9 "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null || true

log=$(ls "$STORE"-calls-* 2>/dev/null) || fail "kill -9 left no call log"
"$FORGE_BIN/forge-proxy" --store "$STORE" --check-call-log > "$WORK/check" || fail "call log check: $(cat "$WORK/check")"
py 'd["calls"] == 6 and d["bad_records"] == []' < "$WORK/check" || fail "call log check: $(cat "$WORK/check")"
# Written whole, the six prompts' ids would be 4 bytes each, beside six
# request texts; the log holds the first of each whole and, for the calls
# after, what they add (round 14 wrote 481 KB here; with prompts referred to
# but request texts whole, 219 KB).
# (Its file is allocated 16 MiB at a time; the check says where its records end.)
python3 - "$WORK/check" "$WORK/sent.json" <<'PY' || fail "the call log holds every prompt or request whole"
import json, sys
size = json.load(open(sys.argv[1]))["end"]
sent = json.load(open(sys.argv[2]))
whole = 4 * sum(len(p) for p in sent)
requests = sum(len(p) for p in sent)  # a request's text is about as long as its prompt's ids are many
print(f"call log {size} bytes; the prompts' ids whole would be {whole} bytes, the requests ~{requests}")
sys.exit(0 if size < whole // 2 else 1)
PY
cp "$log" "$WORK/before.db-calls-${log##*-calls-}"
check_prompts() {  # store: its six calls' prompt ids are those the upstream answered, their requests as sent
  calls "$1" talk > "$WORK/stored" || fail "dump of $1 failed"
  python3 - "$WORK/stored" "$WORK/sent.json" "$WORK/requests.json" <<'PY' || fail "$1: a prompt or request differs from what was sent"
import json, sys
stored = [json.loads(l) for l in open(sys.argv[1])]
sent = json.load(open(sys.argv[2]))
requests = json.load(open(sys.argv[3]))
assert len(stored) == 6, f"{len(stored)} calls stored"
for i, (call, ids, messages) in enumerate(zip(stored, sent, requests)):
    assert call["prompt_ids"] == ids, f"call {i}: {len(call['prompt_ids'])} ids stored, {len(ids)} answered"
    assert call["request"]["messages"] == messages, f"call {i}: its request's messages differ"
print("6 calls, prompts of", [len(p) for p in sent], "ids, all back id for id, requests as sent")
PY
}
check_prompts "$STORE"
check_prompts "$WORK/before.db"  # every call from the log
for s in "$STORE" "$WORK/before.db"; do
  [ "$(ls "$s"-calls-* 2>/dev/null | wc -l)" = 0 ] || fail "the call log beside $s was not removed after recovery"
done
pass "a growing conversation's prompt ids and request texts are logged once, and recovered whole after kill -9"
