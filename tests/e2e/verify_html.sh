#!/usr/bin/env bash
# forge-verify report --by / compare / --html on two runs recorded through a
# real forge-proxy into a real store (tests/e2e/verify/behaviour_runs.py):
# the behaviour figures against those worked out by the fixture, compare's
# bootstrap intervals against a reference written here in Python, and both
# pages rendered by headless Chromium: screenshots that are not blank, and
# every chart in the DOM the browser parsed. Without chromium: exit 77 (skip).
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/e2e/verify/pages.sh"
require_chromium verify_html
verify=$FORGE_BIN/forge-verify
fixture=$FORGE_SRC/tests/e2e/verify/behaviour_runs.py

# 1. Record both runs through forge-proxy --replay (the scripted policy).
record_runs "$fixture"

# 2. report --by harness: behaviour per harness as the fixture worked it out.
expect_exit 0 "report --by harness" "$verify" report --by harness --store "$WORK/forge.db" -k 1,3 --json \
  --html "$WORK/report.html" "$WORK/a.jsonl" "$WORK/b.jsonl"
cp "$OUT" "$WORK/report.json"
python3 - "$WORK/report.json" "$WORK/expected.json" <<'EOF' && pass || fail "report --by harness figures"
import json, sys
report, expected = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
groups = {g["group"]: g for g in report["groups"]}
assert report["by"] == "harness" and sorted(groups) == ["claude-code", "opencode"], groups.keys()
for harness, e in expected.items():
    b = groups[harness]["behaviour"]
    near = lambda x, y: abs(x - y) < 1e-9
    assert b["rollouts"] == e["trials"] and b["tool_calls"] == e["calls"], (harness, b, e)
    assert near(b["share_by_kind"]["shell"], e["shell"] / e["calls"]), (harness, b["share_by_kind"], e)
    assert near(b["self_verification_rate"], e["verified"] / e["edited"]), (harness, b, e)
    assert b["rollouts_with_failed_tool_calls"] == e["with_failures"] and b["recovered"] == e["recovered"], (harness, b, e)
    assert near(b["turns_per_trial"], e["turns"] / e["trials"]), (harness, b, e)
    assert near(b["completion_tokens_per_trial"], e["completion_tokens"] / e["trials"]), (harness, b, e)
assert groups["claude-code"]["overall"]["passed"] == 6 and groups["opencode"]["overall"]["passed"] == 15
EOF
expect_exit 0 "report --by model" "$verify" report --by model --store "$WORK/forge.db" --table "$WORK/a.jsonl" "$WORK/b.jsonl"
grep -q '^ckpt-rl ' "$OUT" && grep -q '^ckpt-sft ' "$OUT" && grep -q 'self-verify' "$OUT" && pass \
  || fail "report --by model (from the recorded calls) table: $(cat "$OUT")"

# 3. compare: reproducible, and its intervals (B - A, and A and B over the
# same tasks) equal a reference computation.
expect_exit 0 "compare" "$verify" compare --store "$WORK/forge.db" -k 1,2 --seed 7 --resamples 4000 --json \
  --html "$WORK/compare.html" "$WORK/a.jsonl" "$WORK/b.jsonl"
cp "$OUT" "$WORK/compare.json"
"$verify" compare -k 1,2 --seed 7 --resamples 4000 --json "$WORK/a.jsonl" "$WORK/b.jsonl" >"$WORK/again.json"
[ "$(jq -c .overall "$WORK/compare.json")" = "$(jq -c .overall "$WORK/again.json")" ] && pass \
  || fail "the same seed gave other intervals"
python3 - "$WORK/compare.json" "$WORK/a.jsonl" "$WORK/b.jsonl" <<'EOF' && pass || fail "compare against the reference"
# The reference: pass@k from binomials, SplitMix64, resample tasks, percentile interval.
import json, math, sys
c = json.load(open(sys.argv[1]))
M = (1 << 64) - 1
def splitmix(seed):
    s = seed
    while True:
        s = (s + 0x9E3779B97F4A7C15) & M
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        yield z ^ (z >> 31)
def counts(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        n, p = out.get(r["task_id"], (0, 0))
        out[r["task_id"]] = (n + 1, p + (r["verdict"]["outcome"] == "passed"))
    return out
at = lambda n, c, k: 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)
hat = lambda n, c, k: math.comb(c, k) / math.comb(n, k)
A, B = counts(sys.argv[2]), counts(sys.argv[3])
tasks = sorted(set(A) & set(B))
assert [t["task_id"] for t in c["tasks"]] == tasks
R, seed, conf = 4000, 7, 0.95
for k in (1, 2):
    for key, f in (("pass_at_k", at), ("pass_hat_k", hat)):
        diffs = [f(*B[t], k) - f(*A[t], k) for t in tasks]
        for t, d in zip(c["tasks"], diffs):
            assert abs(t[key][str(k)]["difference"] - d) < 1e-12, (t, d)
        # Use the tool's own per-task values (bit for bit) so the resampled means match exactly:
        # B - A, and A's and B's levels over the same tasks from the same resamples.
        a = 1 - conf
        for name, vals, got in (
                ("B-A", [t[key][str(k)]["difference"] for t in c["tasks"]], c["overall"][key][str(k)]),
                ("A", [t["a"][key][str(k)]["value"] for t in c["tasks"]], c["overall"]["a"][key][str(k)]),
                ("B", [t["b"][key][str(k)]["value"] for t in c["tasks"]], c["overall"]["b"][key][str(k)])):
            g = splitmix(seed)
            means = []
            for _ in range(R):
                s = 0.0
                for _ in range(len(vals)):
                    s += vals[next(g) % len(vals)]
                means.append(s / len(vals))
            means.sort()
            lo, hi = means[math.floor(R * a / 2 + 1e-9)], means[math.ceil(R * (1 - a / 2) - 1e-9) - 1]
            estimate = got["difference"] if name == "B-A" else got["value"]
            assert abs(estimate - sum(vals) / len(vals)) < 1e-12, (name, key, k, got)
            assert got["low"] == lo and got["high"] == hi, (name, key, k, got, lo, hi)
        # A's level is its mean over the paired tasks, as the reference counts them.
        assert abs(c["overall"]["a"][key][str(k)]["value"] - sum(f(*A[t], k) for t in tasks) / len(tasks)) < 1e-12
assert c["flipped"]["gained"] == ["t4", "t5"] and c["flipped"]["lost"] == [], c["flipped"]
d = c["behaviour_difference"]
assert d["share_by_kind"]["shell"] < 0 and d["share_by_kind"]["edit"] > 0, d
EOF
expect_exit 64 "compare with stdin twice" "$verify" compare - -
grep -q "only one of A and B can be stdin" "$ERR" && pass || fail "stdin twice: $(cat "$ERR")"

# 4. Both pages in a real browser.
for page in report compare; do
  html=$WORK/$page.html
  grep -qi '<script' "$html" && fail "$page: has a script"
  grep -Eq '(src|href)=|url\(|@import' "$html" && fail "$page: refers to an outside asset"
  profile=$(mktemp -d)
  flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
         --disable-component-update --disable-sync --user-data-dir="$profile" --window-size=1280,2000)
  timeout 120 "$chromium" "${flags[@]}" --screenshot="$WORK/$page.png" "file://$html" >/dev/null 2>"$WORK/chromium.err"
  timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$html" >"$WORK/$page.dom" 2>>"$WORK/chromium.err"
  rm -rf "$profile"
  [ -s "$WORK/$page.png" ] && pass || { fail "$page: no screenshot: $(tail -5 "$WORK/chromium.err")"; continue; }
  python3 - "$WORK/$page.png" <<'EOF' && pass || fail "$page: the screenshot looks blank"
# Decode the PNG (8-bit RGB/RGBA, non-interlaced, as Chromium writes it) and count colours.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
rows, prev = [], bytearray(stride)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
colours, ink = set(), 0
for line in rows[::4]:
    for x in range(0, stride, bpp * 2):
        px = line[x:x + 3]
        colours.add(px)
        ink += px != b"\xff\xff\xff" and px != b"\xf5\xf7\xfa"
print("colours", len(colours), "ink", ink)
assert len(colours) >= 40 and ink >= 2000, (len(colours), ink)
EOF
  ids="chart-pass-curves chart-outcomes chart-tool-use chart-rates chart-effort"
  [ "$page" = compare ] && ids="$ids chart-differences chart-differences-hat"
  for id in $ids; do
    grep -q "<svg id=\"$id\"" "$WORK/$page.dom" && pass || fail "$page: $id not in the browser's DOM"
  done
  grep -q '<polyline' "$WORK/$page.dom" && grep -q '<rect' "$WORK/$page.dom" && pass || fail "$page: no chart shapes"
  [ -n "${FORGE_KEEP_SCREENSHOTS:-}" ] && cp "$WORK/$page.png" "$WORK/$page.html" "$FORGE_KEEP_SCREENSHOTS/"
done
finish
