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

# CRLF: kept records are the bytes as read, line endings included.
printf '{"id":"w1","t":"%s"}\r\n{"id":"w2","t":"%s"}\r\n{"id":"w3","t":"zz top"}' "$long" "$long" > "$work/crlf.jsonl"
"$BIN" "$work/crlf.jsonl" -f t -q > "$work/crlf.out" 2>/dev/null
printf '{"id":"w1","t":"%s"}\r\n{"id":"w3","t":"zz top"}\n' "$long" > "$work/crlf.want"
check "CRLF lines pass through with their CR; a last line without an ending gets a newline" \
  cmp -s "$work/crlf.want" "$work/crlf.out"

# --help lists only the exit statuses forge-dedup can end with.
"$BIN" --help > "$work/help" 2>&1
check "--help: exit list without 1 (negative verdict) and 78 (configuration)" \
  bash -c "grep -q 'Exit status: 0 ok; 64 usage' '$work/help' && ! grep -q 'negative verdict' '$work/help' \
    && ! grep -q '78 configuration' '$work/help' && grep -q '10 %' '$work/help'"

# Precomputed vectors: a .npy written by numpy, one row per record. Rows 0 and
# 2 nearly agree, row 3 is far; the texts themselves are unrelated.
py=/usr/bin/python3
printf '%s\n' '{"id":"v0","t":"alpha"}' '{"id":"v1","t":"beta"}' '{"id":"v2","t":"gamma"}' \
  '{"id":"v3","t":"delta"}' > "$work/vec.jsonl"
$py - "$work" <<'PY'
import json, sys, numpy as np
w = sys.argv[1]
x = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0.98, 0.05, 0.1, 0], [0, 0, 0, 2]], dtype=np.float32)
np.save(w + "/vec.npy", x)
x.tofile(w + "/vec.f32")
np.save(w + "/vec3.npy", x[:3])
np.save(w + "/vec64.npy", x.astype(np.float64))
bad = x.copy(); bad[1, 2] = np.nan; bad[3] = 0
np.save(w + "/bad.npy", bad)
with open(w + "/field.jsonl", "w") as f:
    for i, row in enumerate(x):
        f.write(json.dumps({"id": f"v{i}", "t": "text %d" % i, "emb": [float(v) for v in row]}) + "\n")
    f.write(json.dumps({"id": "v4", "t": "text 4", "emb": [1, 2]}) + "\n")
    f.write(json.dumps({"id": "v5", "t": "text 5", "emb": "1 2 3 4"}) + "\n")
    f.write(json.dumps({"id": "v6", "t": "text 6"}) + "\n")
PY
"$BIN" "$work/vec.jsonl" --vectors "$work/vec.npy" -t 0.95 --dropped "$work/vd.jsonl" \
  --report "$work/vr.json" > "$work/v.out" 2>"$work/v.err"
rc=$?
check "--vectors .npy: v2 dropped as a near copy of v0 by the given vectors (exit 0)" \
  bash -c "test $rc = 0 && grep -q '\"id\":\"v2\",\"matched_id\":\"v0\"' '$work/vd.jsonl' \
    && test \"\$(grep -o 'v[0-9]' '$work/v.out' | tr -d '\n')\" = v0v1v3 \
    && grep -q '\"kind\": \"precomputed\"' '$work/vr.json'"
"$BIN" "$work/vec.jsonl" --vectors "$work/vec.f32" --dim 4 -t 0.95 -q > "$work/vraw.out" 2>/dev/null
check "--vectors raw float32 with --dim: the same decision" cmp -s "$work/v.out" "$work/vraw.out"
"$BIN" "$work/vec.jsonl" --vectors "$work/vec.f32" -q > /dev/null 2>"$work/e"
check "raw file without --dim: exit 64, says --dim" bash -c "test $? = 64 && grep -q -- '--dim' '$work/e'"
"$BIN" "$work/vec.jsonl" --vectors "$work/vec3.npy" -q > "$work/o" 2>"$work/e"
check "3 rows for 4 records: exit 65 naming the file and both counts, nothing written" \
  bash -c "test $? = 65 && grep -q 'vec3.npy: 3 rows, but the input has 4 records' '$work/e' && test ! -s '$work/o'"
"$BIN" "$work/vec.jsonl" --vectors "$work/vec64.npy" -q > /dev/null 2>"$work/e"
check "float64 .npy: exit 65 naming the dtype" bash -c "test $? = 65 && grep -q \"vec64.npy: .npy dtype is '<f8'\" '$work/e'"
"$BIN" "$work/vec.jsonl" --vectors "$work/nope.npy" -q > /dev/null 2>"$work/e"
check "missing vector file: exit 66" test $? = 66
"$BIN" "$work/vec.jsonl" --vectors "$work/bad.npy" -t 0.95 -q > "$work/o" 2>"$work/e"
rc=$?
check "NaN and all-zero rows: named by row and record, passed through, exit 65" \
  bash -c "test $rc = 65 && grep -q 'bad.npy: row 1 (.*vec.jsonl:2) element 2 is NaN' '$work/e' \
    && grep -q 'bad.npy: row 3 (.*vec.jsonl:4) is all zeros' '$work/e' && test \$(wc -l < '$work/o') = 3"
"$BIN" "$work/field.jsonl" --vector-field emb -t 0.95 --dropped "$work/fd.jsonl" -q > "$work/o" 2>"$work/e"
rc=$?
check "--vector-field: v2 dropped for v0; wrong length, a string, a missing field named; exit 65" \
  bash -c "test $rc = 65 && grep -q '\"id\":\"v2\",\"matched_id\":\"v0\"' '$work/fd.jsonl' \
    && grep -q 'field.jsonl:5: vector emb has 2 numbers, the first vector had 4' '$work/e' \
    && grep -q 'field.jsonl:6: vector emb is string, not an array of numbers' '$work/e' \
    && grep -q 'field.jsonl:7: vector emb has no emb field' '$work/e' && test \$(wc -l < '$work/o') = 6"
"$BIN" "$work/field.jsonl" --vector-field emb --vectors "$work/vec.npy" -q > /dev/null 2>&1
check "--vector-field with --vectors: exit 64" test $? = 64

# calibrate: per threshold, counts and the pairs nearest it on either side.
"$BIN" calibrate "$work/in.jsonl" -f task.instruction --report-thresholds 0.8,0.96 -t 0.9 \
  > "$work/cal.out" 2> "$work/cal.err"
rc=$?
check "calibrate: one JSON line per threshold, no records, exit 65 (the malformed line)" \
  bash -c "test $rc = 65 && test \$(wc -l < '$work/cal.out') = 3 && ! grep -q '\"task\"' '$work/cal.out'"
check "calibrate: the t1/t2 pair is just above 0.9 and just below 0.96, with snippets at the edit" \
  $py - "$work/cal.out" <<'PY'
import json, sys
rows = {r["threshold"]: r for r in map(json.loads, open(sys.argv[1]))}
above = rows[0.9]["near_misses"]["above"][0]
below = rows[0.96]["near_misses"]["below"][0]
ok = {above["a"]["id"], above["b"]["id"]} == {"t1", "t2"} and 0.9 <= above["score"] < 0.96 \
    and below == above and "ten most" in above["a"]["snippet"] + above["b"]["snippet"] \
    and rows[0.9]["dropped"] == 2 and rows[0.96]["dropped"] == 1
sys.exit(0 if ok else 1)
PY
check "calibrate: a table on stderr names the pair" grep -q 't2 ~ t1\|t1 ~ t2' "$work/cal.err"

exit $fail
