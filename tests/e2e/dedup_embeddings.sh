#!/usr/bin/env bash
# forge-dedup against a scripted OpenAI-compatible embeddings endpoint on
# 127.0.0.1: paraphrases caught, batching, the store cache, a 500 retried,
# malformed JSON reported with exit 76, a dead endpoint with exit 69.
set -u
BIN="${FORGE_BIN:?}/forge-dedup"
FAKE="${FORGE_SRC:?}/tests/fake_embeddings.py"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
fail=0
check() {
  local what=$1; shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fail=1; fi
}
start_fake() {  # start_fake MODE NAME -> sets PORT
  python3 "$FAKE" --mode "$1" --port-file "$work/$2.port" --log "$work/$2.log" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$work/$2.port" ] && break; sleep 0.05; done
  PORT=$(cat "$work/$2.port")
}

cat > "$work/in.jsonl" <<'EOF2'
{"id":"p1","instruction":"Reverse a linked list in place.","reward":0.4}
{"id":"p2","instruction":"Flip the order of a singly linked list without allocating new nodes.","reward":0.8}
{"id":"p3","instruction":"Two-sum: return indices of two elements summing to a target.","reward":1}
{"id":"p4","instruction":"Find which two numbers in the array add up to the target value.","reward":0.1}
{"id":"p5","instruction":"Implement an LRU cache with O(1) get and put.","reward":0.5}
{"id":"p6","instruction":"Serialize and deserialize a binary tree.","reward":0.5}
{"id":"p7","instruction":"Serialize and deserialize a binary tree.","reward":0.2}
EOF2

start_fake ok ok
"$BIN" "$work/in.jsonl" -f instruction --rank 'reward desc' --embed-url "http://127.0.0.1:$PORT" \
  --embed-model fake-64 --embed-batch 2 --embed-concurrency 3 --store "$work/store.db" \
  --dropped "$work/dropped.jsonl" --report "$work/report.json" > "$work/out.jsonl" 2> "$work/err"
rc=$?
check "endpoint run exits 0" test "$rc" = 0
check "paraphrases dropped for the better-ranked one (p1->p2, p4->p3), exact copy p7->p6" \
  bash -c "grep -q '\"id\":\"p1\",\"matched_id\":\"p2\",\"score\":0.9' '$work/dropped.jsonl' &&
           grep -q '\"id\":\"p4\",\"matched_id\":\"p3\"' '$work/dropped.jsonl' &&
           grep -q '\"id\":\"p7\",\"matched_id\":\"p6\",\"score\":1.0,\"stage\":\"exact\"' '$work/dropped.jsonl' &&
           test \$(wc -l < '$work/out.jsonl') = 4"
check "six distinct texts sent in batches of at most 2" \
  python3 -c "import json; l=[json.loads(x) for x in open('$work/ok.log')]; \
import sys; sys.exit(0 if sum(r['inputs'] for r in l)==6 and max(r['inputs'] for r in l)<=2 else 1)"
check "report names the endpoint, model and dimension" \
  python3 -c "import json,sys; e=json.load(open('$work/report.json'))['embedding']; \
sys.exit(0 if e['model']=='fake-64' and e['dim']==64 and e['kind']=='endpoint' else 1)"
check "n-gram embedding alone misses the paraphrases" \
  test "$("$BIN" "$work/in.jsonl" -f instruction -q 2>/dev/null | wc -l)" = 6

before=$(wc -l < "$work/ok.log")
"$BIN" "$work/in.jsonl" -f instruction --rank 'reward desc' --embed-url "http://127.0.0.1:$PORT/v1" \
  --embed-model fake-64 --store "$work/store.db" -q > "$work/out2.jsonl" 2>/dev/null
check "second run served from the store cache: no requests, same output" \
  bash -c "test $before = \$(wc -l < '$work/ok.log') && cmp -s '$work/out.jsonl' '$work/out2.jsonl'"
check "store embeddings table holds the six texts' vectors, renormalised to unit length" \
  python3 -c "import sqlite3,struct,sys; rows=sqlite3.connect('$work/store.db').execute( \
\"select dim, vector from embeddings where model='fake-64'\").fetchall(); \
norms=[sum(x*x for x in struct.unpack('<%df'%d, v)) for d,v in rows]; \
sys.exit(0 if len(rows)==6 and all(abs(n-1)<1e-4 for n in norms) else 1)"

start_fake fail-once flaky
"$BIN" "$work/in.jsonl" -f instruction --rank 'reward desc' --embed-url "http://127.0.0.1:$PORT" \
  --embed-model fake-64 --embed-concurrency 1 --report "$work/flaky.json" > "$work/out3.jsonl" 2>/dev/null
rc=$?
check "a 500 is retried and the run succeeds with the same output" \
  bash -c "test $rc = 0 && cmp -s '$work/out.jsonl' '$work/out3.jsonl' &&
           grep -q '\"retried\": 1' '$work/flaky.json'"

start_fake malformed bad
"$BIN" "$work/in.jsonl" -f instruction --embed-url "http://127.0.0.1:$PORT" --embed-model m \
  > "$work/out4.jsonl" 2> "$work/err4"
rc=$?
check "malformed JSON from the endpoint: exit 76, message names the endpoint and the fault" \
  bash -c "test $rc = 76 && grep -q '127.0.0.1:$PORT/v1/embeddings: malformed embeddings response: not JSON' '$work/err4' && test ! -s '$work/out4.jsonl'"

# A port nothing listens on: connection refused, retried, then 69.
python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])" > "$work/dead"
"$BIN" "$work/in.jsonl" -f instruction --embed-url "http://127.0.0.1:$(cat "$work/dead")" \
  --embed-model m --embed-retries 2 > /dev/null 2> "$work/err5"
rc=$?
check "unreachable endpoint: exit 69 after retries" \
  bash -c "test $rc = 69 && grep -q 'gave up after 3 attempts' '$work/err5'"
exit $fail
