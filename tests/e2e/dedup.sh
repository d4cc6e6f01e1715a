#!/usr/bin/env bash
# forge-dedup end to end: exact copies, near copies with small edits, ranking
# deciding the survivor, pass-through of kept lines byte for byte, malformed
# lines reported with file:line while the rest flows, determinism, reports.
set -u
BIN="${FORGE_BIN:?}/forge-dedup"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # check "description" command...
  local what=$1; shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fail=1; fi
}

long="Implement a command-line tool that counts the words in every file of a directory tree and prints the ten most frequent ones with their counts."
edit="Implement a command-line tool that counts the words in every file of a directory tree and prints the five most frequent ones with their counts."
cat > "$work/in.jsonl" <<EOF2
{"id":"t1","task":{"instruction":"$long"},"success":false,"reward":0.2, "z":1.50}
{"id":"t2","task":{"instruction":"$edit"},"success":true,"reward":0.9}
{"id":"t3","task":{"instruction":"Write a SQL query returning the second highest salary per department."},"success":true,"reward":1}
{"id":"t4","task":{"instruction":"write a SQL  query returning the second highest salary per DEPARTMENT."},"success":true,"reward":1}
{"id":"t5","task":{"instruction":"Parse an ISO-8601 timestamp with a time zone and convert it to UTC."},"success":true,"reward":0.5}
{"id":"t6" "broken
{"id":"t7","task":{"instruction":"Design a rate limiter for an HTTP API using a token bucket per client."},"success":true,"reward":0.7}
EOF2

"$BIN" "$work/in.jsonl" --field task.instruction --rank 'success desc, reward desc, id asc' \
  --dropped "$work/dropped.jsonl" --report "$work/report.json" >"$work/out.jsonl" 2>"$work/err"
rc=$?
check "malformed line makes exit 65 after the rest flowed" test "$rc" = 65
check "malformed line reported with file:line" grep -q "in.jsonl:6:" "$work/err"
check "kept ids: t2 (better-ranked near copy), t3 (first exact copy), t5, t7" \
  test "$(grep -o '"id":"t[0-9]"' "$work/out.jsonl" | tr -d '\n')" = '"id":"t2""id":"t3""id":"t5""id":"t7"'
check "kept lines are the input lines byte for byte" \
  bash -c "grep -Fxf '$work/out.jsonl' '$work/in.jsonl' | cmp -s - '$work/out.jsonl'"
check "t1 dropped as a near copy of t2" \
  grep -q '"id":"t1","matched_id":"t2","score":0\.9[0-9]*,"stage":"similar"' "$work/dropped.jsonl"
check "t4 dropped as an exact copy of t3" \
  grep -q '"id":"t4","matched_id":"t3","score":1.0,"stage":"exact","where":".*in.jsonl:4"' "$work/dropped.jsonl"
check "report has counts at several thresholds" \
  python3 -c "import json,sys; r=json.load(open('$work/report.json')); t=r['thresholds']; \
sys.exit(0 if len(t)>=6 and any(x.get('chosen') for x in t) and r['exact_duplicates']==1 \
and r['highest_similarity']['items']==5 else 1)"

# Ranking decides: reversed preference keeps t1 instead of t2.
"$BIN" "$work/in.jsonl" -f task.instruction --rank 'reward asc' -q >"$work/out2.jsonl" 2>/dev/null
check "ranking by reward asc keeps t1 and drops t2" \
  bash -c "grep -q '\"id\":\"t1\"' '$work/out2.jsonl' && ! grep -q '\"id\":\"t2\"' '$work/out2.jsonl'"

# Determinism: same input, same output, from stdin too.
for i in 1 2; do
  "$BIN" -f task.instruction --rank 'success desc,reward desc' --dropped "$work/d$i.jsonl" -q \
    < "$work/in.jsonl" > "$work/o$i.jsonl" 2>/dev/null
done
check "same input twice gives identical kept and dropped output" \
  bash -c "cmp -s '$work/o1.jsonl' '$work/o2.jsonl' && cmp -s '$work/d1.jsonl' '$work/d2.jsonl' && test -s '$work/o1.jsonl'"

# A threshold above every similarity keeps everything but the exact copy.
n=$("$BIN" "$work/in.jsonl" -f task.instruction -t 0.999 -q 2>/dev/null | wc -l)
check "threshold 0.999 drops only the exact copy" test "$n" = 5

# Records without the field pass through, named, and the exit says so.
printf '%s\n' '{"id":"x1","other":1}' '{"id":"x2","task":{"instruction":"hello there"}}' > "$work/missing.jsonl"
"$BIN" "$work/missing.jsonl" -f task.instruction -q > "$work/m.out" 2> "$work/m.err"
rc=$?
check "record lacking the field passes through with a warning naming file:line (exit 65)" \
  bash -c "test $rc = 65 && grep -q 'missing.jsonl:1' '$work/m.err' && test \$(wc -l < '$work/m.out') = 2"

# Components chain A~B~C; SemDeDup keeps C when only B (dropped) was close.
a="aaaa bbbb cccc dddd eeee ffff gggg hhhh"
b="aaaa bbbb cccc dddd eeee ffff XXXX YYYY"
c="aaaa bbbb cccc dddd ZZZZ WWWW XXXX YYYY"
printf '{"id":"a","t":"%s"}\n{"id":"b","t":"%s"}\n{"id":"c","t":"%s"}\n' "$a" "$b" "$c" > "$work/chain.jsonl"
"$BIN" "$work/chain.jsonl" -f t --report "$work/chain.json" >/dev/null 2>&1
sab=$(python3 - "$work/chain.json" <<'PY'
import json,sys
print(json.load(open(sys.argv[1]))['highest_similarity']['quantiles'][0]['value'])
PY
)
t=$(python3 -c "print(round($sab - 0.01, 4))")
sem=$("$BIN" "$work/chain.jsonl" -f t -t "$t" -q 2>/dev/null | grep -o '"id":"[a-c]"' | tr -d '\n')
comp=$("$BIN" "$work/chain.jsonl" -f t -t "$t" --mode components -q 2>/dev/null | grep -o '"id":"[a-c]"' | tr -d '\n')
check "semdedup and components differ on a chain (sem=$sem comp=$comp at $t)" \
  bash -c "test '$comp' = '\"id\":\"a\"' && test '$sem' != '$comp'"

# HNSW on a small set gives the same decision here and reports recall.
"$BIN" "$work/in.jsonl" -f task.instruction --rank 'success desc, reward desc, id asc' \
  --index hnsw --report "$work/hnsw.json" > "$work/hnsw.out" 2>/dev/null
check "hnsw keeps the same records and reports recall" \
  bash -c "cmp -s '$work/hnsw.out' '$work/out.jsonl' && grep -q pair_recall '$work/hnsw.json'"

# MinHash (model-free Jaccard): the one-word edit reaches Jaccard 0.7 and is
# dropped for the better-ranked copy; the same input gives the same output.
for i in 1 2; do
  "$BIN" "$work/in.jsonl" -f task.instruction --rank 'success desc, reward desc, id asc' \
    --embedding minhash -t 0.7 --dropped "$work/mh-d$i.jsonl" --report "$work/mh$i.json" \
    > "$work/mh$i.out" 2>/dev/null
done
check "minhash keeps t2 t3 t5 t7 and drops t1 as a near copy of t2" \
  bash -c "test \"\$(grep -o '\"id\":\"t[0-9]\"' '$work/mh1.out' | tr -d '\n')\" = '\"id\":\"t2\"\"id\":\"t3\"\"id\":\"t5\"\"id\":\"t7\"' \
    && grep -q '\"id\":\"t1\",\"matched_id\":\"t2\"' '$work/mh-d1.jsonl' \
    && grep -q '\"kind\": \"minhash\"' '$work/mh1.json'"
check "minhash: same input twice, identical output" \
  bash -c "cmp -s '$work/mh1.out' '$work/mh2.out' && cmp -s '$work/mh-d1.jsonl' '$work/mh-d2.jsonl'"

# Trajectories rendered from the store: r1 and r2 did the same thing (a
# trivially different command), r3 another thing, r4 has no calls.
FORGE_DEDUP_FIXTURE_DIR="$work/fx" "${FORGE_BIN}/forge-tests" -tc='dedup trajectory fixture*' >/dev/null
"$BIN" --trajectories --store "$work/fx/forge.db" --rank 'reward desc' --id-field rollout_id \
  --dropped "$work/tr-d.jsonl" -q "$work/fx/rollouts.jsonl" > "$work/tr.out" 2> "$work/tr.err"
rc=$?
check "trajectories: r1 dropped as a near copy of the better-rewarded r2" \
  grep -q '"id":"r1","matched_id":"r2"' "$work/tr-d.jsonl"
check "trajectories: r2, r3 kept; r4 (no calls) passes through named, exit 65" \
  bash -c "test $rc = 65 && test \"\$(grep -o 'r[0-9]' '$work/tr.out' | tr -d '\n')\" = r2r3r4 \
    && grep -q 'rollouts.jsonl:4: rollout r4 has no recorded calls' '$work/tr.err'"
"$BIN" --trajectories "$work/fx/rollouts.jsonl" -q >/dev/null 2>"$work/e"
check "--trajectories without --store exits 64" test $? = 64
"$BIN" --trajectories --store "$work/nostore.db" "$work/fx/rollouts.jsonl" -q >/dev/null 2>"$work/e"
check "--trajectories with a missing store exits 66" test $? = 66

"$BIN" "$work/nope.jsonl" -q >/dev/null 2>"$work/e"
check "missing input file exits 66" test $? = 66
"$BIN" "$work/in.jsonl" --rank 'reward sideways' -q >/dev/null 2>&1
check "bad --rank exits 64" test $? = 64
"$BIN" "$work/in.jsonl" -f task.instruction -q --strict >/dev/null 2>"$work/e"
check "--strict stops at the malformed line with exit 65" \
  bash -c "test $? = 65 && grep -q 'in.jsonl:6' '$work/e'"

exit $fail
