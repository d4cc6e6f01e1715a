#!/usr/bin/env bash
# The learning curve of a generated training run of 10 policy versions
# (tests/e2e/verify/learning_run.py), recorded through a real forge-proxy
# into a real store; the verdict records carry no version, so `report --by
# policy_version --store` reads it from the calls. As rounds arrive: the
# report of the first five rounds, then of all ten. Checked: each version's
# pass@1 and behaviour against the fixture's own figures, each version's
# interval against a reference bootstrap written here (SplitMix64, the
# group's seed, the percentile ends), and the page in headless Chromium: the
# curve with its 10 points per series, the behaviour beside it. Without
# chromium: exit 77 (skip).
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/e2e/verify/pages.sh"
require_chromium verify_learning
verify=$FORGE_BIN/forge-verify
fixture=$FORGE_SRC/tests/e2e/verify/learning_run.py

record_runs "$fixture"

# Five rounds in: five points.
expect_exit 0 "report of rounds 0-4" "$verify" report --by policy_version --store "$WORK/forge.db" -k 1,2 --json \
  "$WORK"/round-{0..4}.jsonl
jq -e '[.groups[].group] == ["0","1","2","3","4"]' "$OUT" >/dev/null && pass || fail "five rounds: $(jq -c '[.groups[].group]' "$OUT")"

# All ten.
expect_exit 0 "report of rounds 0-9" "$verify" report --by policy_version --store "$WORK/forge.db" -k 1,2 --seed 3 \
  --resamples 2000 --json --html "$WORK/learning.html" "$WORK"/round-{0..9}.jsonl
cp "$OUT" "$WORK/report.json"
python3 - "$WORK/report.json" "$WORK/expected.json" "$WORK" <<'PY' && pass || fail "the curve's figures"
import json, math, sys
report, expected = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
groups = report["groups"]
assert [g["group"] for g in groups] == [str(v) for v in range(10)], [g["group"] for g in groups]
M = (1 << 64) - 1
def splitmix(seed):
    s = seed
    while True:
        s = (s + 0x9E3779B97F4A7C15) & M
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        yield z ^ (z >> 31)
def seed_for(seed, name):  # the seed xor FNV-1a of the group's name
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & M
    return seed ^ h
at = lambda n, c, k: 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)
R, a = report["bootstrap"]["resamples"], 1 - report["bootstrap"]["confidence"]
assert R == 2000 and report["bootstrap"]["seed"] == 3
for g in groups:
    v, e, o = g["group"], expected[g["group"]], g["overall"]
    assert abs(o["pass_at_k"]["1"] - e["pass_at_1"]) < 1e-12, (v, o["pass_at_k"], e)
    b = g["behaviour"]
    assert abs(b["turns_per_trial"] - e["turns"]) < 1e-12, (v, b, e)
    assert b["self_verification_rate"] == (1.0 if e["self_verified"] else 0.0), (v, b)
    # The reference bootstrap of the mean over the version's tasks.
    counts = {}
    for line in open("%s/round-%s.jsonl" % (sys.argv[3], v)):
        r = json.loads(line)
        n, c = counts.get(r["task_id"], (0, 0))
        counts[r["task_id"]] = (n + 1, c + (r["verdict"]["outcome"] == "passed"))
    for k in (1, 2):
        vals = [at(n, c, k) for _, (n, c) in sorted(counts.items())]
        draw = splitmix(seed_for(3, v))
        means = sorted(sum(vals[next(draw) % len(vals)] for _ in vals) / len(vals) for _ in range(R))
        lo, hi = means[math.floor(R * a / 2 + 1e-9)], means[math.ceil(R * (1 - a / 2) - 1e-9) - 1]
        got = o["intervals"]["pass_at_k"][str(k)]
        assert abs(got["low"] - lo) < 1e-12 and abs(got["high"] - hi) < 1e-12, (v, k, got, lo, hi)
print("10 versions: pass@1 from %.3f to %.3f" % (groups[0]["overall"]["pass_at_k"]["1"], groups[-1]["overall"]["pass_at_k"]["1"]))
PY
expect_exit 0 "the table" "$verify" report --by policy_version --store "$WORK/forge.db" -k 1 --table "$WORK"/round-*.jsonl
grep -Eq '^9 +6 +24 +22 +0 +0\.9167 ' "$OUT" && pass || fail "table: $(cat "$OUT")"

# The page in a browser: the curve, its points, the behaviour beside it.
python3 "$FORGE_SRC/tests/e2e/verify/page_in_browser.py" "$chromium" "$WORK/learning.html" 1280 "$WORK/learning.png" \
  >"$WORK/layout.json" 2>"$WORK/browser.err" && pass || fail "chromium: $(tail -3 "$WORK/browser.err")"
python3 - "$WORK/layout.json" <<'PY' && pass || fail "the page as the browser laid it out"
import json, sys
page = json.load(open(sys.argv[1]))
charts, points = page["charts"], page["points"]
for chart in ("chart-learning-curve", "chart-learning-behaviour", "chart-pass-curves", "chart-outcomes", "chart-tool-use"):
    assert chart in charts and charts[chart][0] > 600 and charts[chart][1] > 100, (chart, charts.get(chart))
assert points["chart-learning-curve"] == 30, points  # pass@1, pass@2 and pass^2 at 10 versions
assert points["chart-learning-behaviour"] == 10 * 3, points  # self-verification, turns, tokens (no failed tool call)
text = page["text"]
assert "Learning curve by policy_version" in text and "the same 6 tasks at every point" in text, text[:400]
assert page["height"] < 6000, page["height"]
print("page height", page["height"])
PY
[ -n "${FORGE_KEEP_SCREENSHOTS:-}" ] && cp "$WORK/learning.png" "$WORK/learning.html" "$FORGE_KEEP_SCREENSHOTS/"
finish
