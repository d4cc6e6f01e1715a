#!/usr/bin/env bash
# forge-pack end to end: a store of recorded calls (written by the unit-test
# fixture), every output format, safetensors read back by an independent
# numpy reader, and bad input reported with file:line.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pack="$FORGE_BIN/forge-pack"
# Debian's python3 (with python3-numpy), not whatever python3 is first on PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
fail() { echo "FAIL: $*" >&2; exit 1; }

FORGE_PACK_FIXTURE_DIR="$work/fx" "$FORGE_BIN/forge-tests" -tc='pack fixture*' >/dev/null
store="$work/fx/forge.db"
records="$work/fx/rollouts.jsonl"

echo "== rl: packed safetensors read back by numpy"
"$pack" --store "$store" --format rl --advantage drgrpo --token-budget 16 --out-dir "$work/rl" \
  --stats "$work/rl-stats.json" "$records" >"$work/index.jsonl" 2>"$work/rl.err"
cat "$work/rl.err"
grep -q 'utilisation' "$work/rl.err" || fail "no packing summary on stderr"
"$py" - "$work/index.jsonl" "$work/fx/expected.json" "$work/rl-stats.json" <<'PY'
import json, struct, sys
import numpy as np

DTYPES = {"I32": np.int32, "U8": np.uint8, "F32": np.float32, "I64": np.int64}

def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    assert (8 + n) % 8 == 0, "data buffer not 8-byte aligned"
    base = 8 + n
    tensors, covered = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        covered.append((begin, end))
        arr = np.frombuffer(blob[base + begin:base + end], dtype=np.dtype(DTYPES[info["dtype"]]).newbyteorder("<"))
        tensors[name] = arr.reshape(info["shape"])
    covered.sort()
    pos = 0
    for b, e in covered:
        assert b == pos, f"hole or overlap at {b}"
        pos = e
    assert base + pos == len(blob), "buffer not fully covered"
    return header.get("__metadata__", {}), tensors

index = [json.loads(l) for l in open(sys.argv[1])]
expected = json.load(open(sys.argv[2]))
stats = json.load(open(sys.argv[3]))
seen = set()
for entry in index:
    meta, t = read(entry["file"])
    assert meta["format"] == "forge-pack-rl/1" and meta["advantage"] == "drgrpo", meta
    cu = t["cu_seqlens"]
    assert cu[0] == 0 and cu[-1] == len(t["input_ids"]) == entry["tokens"] <= 16
    rollouts = json.loads(meta["rollout_ids"]); indices = json.loads(meta["sample_indices"])
    uids = json.loads(meta["uids"])
    assert uids == entry["uids"] and len(rollouts) == len(cu) - 1 == entry["rows"]
    for row, (r, i) in enumerate(zip(rollouts, indices)):
        key = f"{r}/{i}"
        want = expected[key]
        s, e = cu[row], cu[row + 1]
        assert t["input_ids"][s:e].tolist() == want["input_ids"], key
        assert t["loss_mask"][s:e].tolist() == want["loss_mask"], key
        assert t["position_ids"][s:e].tolist() == list(range(e - s)), key
        mask = np.array(want["loss_mask"], dtype=bool)
        adv = t["advantages"][s:e]
        assert np.allclose(adv[mask], want["advantage"], atol=1e-6), (key, adv)
        assert np.all(adv[~mask] == 0), key
        lp = t["rollout_log_probs"][s:e]
        assert np.all(lp[~mask] == 0) and np.all(lp[mask] < 0), key
        assert abs(t["row_advantages"][row] - want["advantage"]) < 1e-6
        seen.add(key)
assert seen == set(expected), (seen, set(expected))
assert stats["dropped"] == {"no_token_ids": 1, "not_stopped": 1}, stats["dropped"]
assert stats["rl"]["rows"] == 5 and stats["rl"]["groups"] == 3, stats["rl"]
print(f"numpy reader: {len(index)} files, {len(seen)} rows match")
PY

echo "== rl: grpo values and zero-variance dropping"
"$pack" -q --store "$store" --format rl --out-dir "$work/rl2" --drop-zero-variance \
  --stats "$work/rl2.json" "$records" >/dev/null
"$py" -c "
import json,sys; s=json.load(open('$work/rl2.json'))
assert s['rl']['zero_variance_groups']==0 and s['rl']['rows']==5, s['rl']"

echo "== rl: staleness limit"
"$pack" -q --store "$store" --format rl --out-dir "$work/rl3" --max-staleness 1 --policy-version 5 \
  --stats "$work/rl3.json" "$records" >/dev/null
"$py" -c "
import json; s=json.load(open('$work/rl3.json'))
assert s['dropped'].get('stale')==5 and s['rl']['rows']==0, s"

echo "== rl: a tampered or excluded verdict never has a positive reward or advantage (#53)"
# The run as forge-verify writes it and as the issue's repro edited it: a0
# passed honestly; a1 tampered (the verifier claimed 1; an older record still
# says reward 1); a2 infra_error with a stray reward 1; b0 tampered with no
# claim kept; b1 failed.
jq -c 'if .rollout_id == "a1" then .verdict = {outcome: "tampered", passed: false, reward: 1}
       elif .rollout_id == "a2" then .verdict = {outcome: "infra_error", passed: false, reward: 1}
       elif .rollout_id == "b0" then .verdict = {outcome: "tampered", passed: false, reward: 0, claimed_reward: 1}
       else . end' "$records" >"$work/mixed.jsonl"
for mode in fail drop; do
  "$pack" -q --store "$store" --format rl --advantage grpo --untrusted "$mode" --token-budget 16 \
    --out-dir "$work/rl-$mode" --stats "$work/rl-$mode.json" "$work/mixed.jsonl" >"$work/index-$mode.jsonl"
  "$py" - "$work/index-$mode.jsonl" "$work/rl-$mode.json" "$mode" <<'PY'
import json, struct, sys
import numpy as np
untrusted = {"a1", "a2", "b0"}
rows = {}
for entry in map(json.loads, open(sys.argv[1])):
    blob = open(entry["file"], "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header["__metadata__"]
    def tensor(name):
        info = header[name]
        b, e = info["data_offsets"]
        return np.frombuffer(blob[8 + n + b:8 + n + e], dtype={"F32": "<f4", "I32": "<i4"}[info["dtype"]])
    adv = tensor("row_advantages")
    rew = tensor("rewards") if "rewards" in header else None
    for row, r in enumerate(json.loads(meta["rollout_ids"])):
        rows.setdefault(r, []).append((float(adv[row]), None if rew is None else float(rew[row])))
stats = json.load(open(sys.argv[2]))
assert stats["untrusted_verdicts"] == {"tampered": 2, "infra_error": 1}, stats["untrusted_verdicts"]
if sys.argv[3] == "drop":
    assert not untrusted & set(rows), rows
    assert stats["filtered"]["untrusted"] == 3, stats["filtered"]
else:
    assert untrusted <= set(rows), rows
    assert stats["filtered"]["untrusted"] == 0, stats["filtered"]
for r in untrusted & set(rows):
    for adv, rew in rows[r]:
        assert adv <= 0 and (rew is None or rew == 0), (r, adv, rew)
if sys.argv[3] == "fail":
    assert all(adv > 0 for adv, _ in rows["a0"]), rows["a0"]  # the honest pass is its group's best
print(f"untrusted {sys.argv[3]}: {len(rows)} rollouts in rows, none untrusted with a positive reward or advantage")
PY
done

echo "== sft-messages: teacher fallback flagged, tool arguments as strings"
"$pack" -q --store "$store" --format sft-messages "$records" >"$work/sft.jsonl"
"$py" - "$work/sft.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 6, len(rows)
teacher = [r for r in rows if r["from_messages"]]
assert len(teacher) == 1 and teacher[0]["rollout_id"] == "c0"
for r in rows:
    assert r["messages"][-1]["role"] == "assistant"
    for m in r["messages"]:
        for c in m.get("tool_calls", []):
            assert isinstance(c["function"]["arguments"], str)
assert isinstance(teacher[0]["tools"], list)
PY
"$pack" -q --store "$store" --passed-only "$records" | grep -c . | grep -qx 4 || fail "--passed-only"
"$pack" -q --store "$store" --min-reward 0.5 --mode per-call "$records" | grep -c . | grep -qx 5 \
  || fail "--min-reward with per-call"

echo "== sft-tokens: labels -100 off the sampled tokens"
"$pack" -q --store "$store" --format sft-tokens --max-tokens 10 --stats "$work/tok.json" "$records" >"$work/tok.jsonl"
"$py" - "$work/tok.jsonl" "$work/tok.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
stats = json.load(open(sys.argv[2]))
assert stats["dropped"]["too_long"] == 3, stats["dropped"]
for r in rows:
    assert len(r["input_ids"]) <= 10
    for i, l, m in zip(r["input_ids"], r["labels"], r["loss_mask"]):
        assert (l == i) if m else (l == -100)
    assert r["loss_mask"][-1] == 1
assert len(rows) == 2
PY

echo "== verl-prompts: one row per task"
"$pack" -q --store "$store" --format verl-prompts "$records" >"$work/prompts.jsonl"
"$py" - "$work/prompts.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["extra_info"]["task_id"] for r in rows] == ["A", "B", "C"], rows
assert rows[0]["prompt"] == [{"role": "user", "content": "do A"}]
assert rows[0]["reward_model"]["style"] == "rule"
assert isinstance(rows[2]["extra_info"]["tools"], str) and rows[2]["agent_name"] == "tool_agent"
PY

echo "== bad input: malformed line and missing rollout id reported with file:line, the rest still packed"
cp "$records" "$work/bad.jsonl"
echo '{"rollout_id": "a1", "task_id": ' >>"$work/bad.jsonl"
echo '{"task_id": "A"}' >>"$work/bad.jsonl"
echo '{"rollout_id": "zz", "task_id": "Z"}' >>"$work/bad.jsonl"
set +e
"$pack" --store "$store" --stats "$work/bad-stats.json" "$work/bad.jsonl" >"$work/bad.out" 2>"$work/bad.err"
rc=$?
set -e
cat "$work/bad.err"
[ "$rc" -eq 65 ] || fail "malformed input exit $rc, want 65"
grep -q "bad.jsonl:7" "$work/bad.err" || fail "no file:line for the malformed line"
grep -q "bad.jsonl:8: record has no rollout_id" "$work/bad.err" || fail "no file:line for the missing id"
grep -q "bad.jsonl:9: no recorded calls for rollout zz" "$work/bad.err" || fail "no warning for a rollout without calls"
[ "$(grep -c . "$work/bad.out")" -eq 6 ] || fail "good records lost next to bad ones"
# Both skipped lines are counted, each by its kind, in the summary and in --stats.
grep -q "2 input lines skipped (1 malformed, 1 lacking required fields)" "$work/bad.err" ||
  fail "the summary does not count both skipped lines: $(tail -n 2 "$work/bad.err")"
jq -e '.malformed_lines == 1 and .bad_records == 1' "$work/bad-stats.json" >/dev/null ||
  fail "--stats does not count both skipped lines: $(cat "$work/bad-stats.json")"
set +e
"$pack" --strict --store "$store" "$work/bad.jsonl" >/dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 65 ] || fail "--strict exit $rc"

echo "== usage and missing inputs"
set +e
"$pack" --store "$work/nope.db" "$records" >/dev/null 2>&1; rc1=$?
"$pack" --store "$store" --format rl "$records" >/dev/null 2>&1; rc2=$?
"$pack" --store "$store" --format bogus "$records" >/dev/null 2>&1; rc3=$?
set -e
[ "$rc1" -eq 66 ] || fail "missing store exit $rc1, want 66"
[ "$rc2" -eq 64 ] || fail "rl without --out-dir exit $rc2, want 64"
[ "$rc3" -eq 64 ] || fail "bad --format exit $rc3, want 64"

echo "== parquet converter: written by parquet-wasm (arrow-rs), read back by hyparquet (an independent reader)"
pq_dir=$(bash "$FORGE_SRC/scripts/install-parquet-tools.sh" --print-dir)
if [ -f "$pq_dir/.installed" ] && command -v node >/dev/null; then
  export FORGE_PARQUET_DIR="$pq_dir"
  node "$FORGE_SRC/scripts/sft-to-parquet.mjs" "$work/sft.jsonl" "$work/sft.parquet" 2>"$work/pq.err" \
    || { cat "$work/pq.err"; fail "converter failed"; }
  grep -q '6 rows written' "$work/pq.err" || fail "converter summary: $(cat "$work/pq.err")"
  cat >"$work/read-parquet.mjs" <<'JS'
// Reads the parquet with hyparquet and compares every row with the JSONL it came from.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
const [parquetPath, jsonlPath] = process.argv.slice(2);
const require = createRequire(path.join(process.env.FORGE_PARQUET_DIR, "package.json"));
const { parquetReadObjects, parquetMetadata } = await import(pathToFileURL(require.resolve("hyparquet")));
const buf = fs.readFileSync(parquetPath);
const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
const fail = (m) => { console.error("FAIL: " + m); process.exit(1); };
const meta = parquetMetadata(file);
if (Number(meta.num_rows) < 1) fail("no rows in the file metadata");
const rows = await parquetReadObjects({ file });
const want = fs.readFileSync(jsonlPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
if (rows.length !== want.length) fail(`rows ${rows.length} != ${want.length}`);
const same = (a, b, what) => { if (JSON.stringify(a) !== JSON.stringify(b)) fail(`${what}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`); };
rows.forEach((r, i) => {
  const w = want[i];
  const where = `row ${i} (${w.rollout_id})`;
  same(r.rollout_id, w.rollout_id, where + " rollout_id");
  same(r.task_id, w.task_id, where + " task_id");
  same(Number(r.sample_index), w.sample_index, where + " sample_index");
  same(r.from_messages, w.from_messages, where + " from_messages");
  same(r.reward, w.reward ?? null, where + " reward");
  same(r.tools === null ? null : JSON.parse(r.tools), w.tools ?? null, where + " tools");
  if (r.messages.length !== w.messages.length) fail(where + " message count");
  r.messages.forEach((m, k) => {
    const e = w.messages[k];
    same(m.role, e.role, `${where} messages[${k}].role`);
    same(m.content, e.content == null || typeof e.content === "string" ? e.content ?? null : JSON.stringify(e.content), `${where} messages[${k}].content`);
    same(m.tool_call_id, e.tool_call_id ?? null, `${where} messages[${k}].tool_call_id`);
    const calls = (e.tool_calls || []).map((c) => ({ id: c.id, type: c.type, function: { name: c.function.name, arguments: c.function.arguments } }));
    same(m.tool_calls, calls.length ? calls : null, `${where} messages[${k}].tool_calls`);
    for (const c of m.tool_calls || []) if (typeof c.function.arguments !== "string") fail(where + " arguments not a string");
  });
});
console.log(`parquet read back: ${rows.length} rows equal to the JSONL; columns ${Object.keys(rows[0]).join(",")}`);
JS
  node "$work/read-parquet.mjs" "$work/sft.parquet" "$work/sft.jsonl" || fail "parquet read-back"
  # A malformed line and a row without messages: reported with file:line, exit 65, the rest written.
  { head -2 "$work/sft.jsonl"; echo '{"messages": ['; echo '{"rollout_id": "x"}'; tail -n +3 "$work/sft.jsonl"; } >"$work/sft-bad.jsonl"
  set +e
  node "$FORGE_SRC/scripts/sft-to-parquet.mjs" "$work/sft-bad.jsonl" "$work/sft-bad.parquet" 2>"$work/pq-bad.err"; rc=$?
  node "$FORGE_SRC/scripts/sft-to-parquet.mjs" "$work/sft.jsonl" 2>/dev/null; rc_usage=$?
  node "$FORGE_SRC/scripts/sft-to-parquet.mjs" "$work/nope.jsonl" "$work/x.parquet" 2>/dev/null; rc_missing=$?
  FORGE_PARQUET_DIR="$work/empty" node "$FORGE_SRC/scripts/sft-to-parquet.mjs" "$work/sft.jsonl" "$work/x.parquet" 2>/dev/null; rc_nomod=$?
  set -e
  [ "$rc" -eq 65 ] || fail "converter on bad lines exit $rc, want 65"
  grep -q 'sft-bad.jsonl:3:' "$work/pq-bad.err" || fail "no file:line for the malformed line: $(cat "$work/pq-bad.err")"
  grep -q 'sft-bad.jsonl:4: no messages array' "$work/pq-bad.err" || fail "no file:line for the row without messages"
  node "$work/read-parquet.mjs" "$work/sft-bad.parquet" "$work/sft.jsonl" || fail "good rows of a bad file not all written"
  [ "$rc_usage" -eq 64 ] || fail "converter usage exit $rc_usage, want 64"
  [ "$rc_missing" -eq 66 ] || fail "converter missing input exit $rc_missing, want 66"
  [ "$rc_nomod" -eq 69 ] || fail "converter without its modules exit $rc_nomod, want 69"
else
  echo "parquet tools not installed (run scripts/install-parquet-tools.sh): converter not exercised"
fi
if "$py" -c 'import pyarrow' 2>/dev/null; then
  echo "== parquet converter (pyarrow variant)"
  "$py" "$FORGE_SRC/scripts/sft-to-parquet.py" "$work/sft.jsonl" "$work/sft-pa.parquet"
  "$py" -c "import pyarrow.parquet as pq; t=pq.read_table('$work/sft-pa.parquet'); assert t.num_rows==6"
fi
echo "pack e2e: ok"
