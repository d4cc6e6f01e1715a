#!/usr/bin/env bash
# Pages at training scale (issue 58): two generated runs of 2,000 tasks
# (tests/e2e/verify/scale_runs.py). The compare page and the report page,
# opened in headless Chromium at 1280 px: under 5,000 px tall, every chart
# laid out, the 8 largest gains and losses drawn by name and the other
# 1,984 tasks summarised in a line, the levels of A and B at the top, the
# provenance at the foot. Without chromium: exit 77 (skip).
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/e2e/verify/pages.sh"
require_chromium verify_scale
verify=$FORGE_BIN/forge-verify
python3 "$FORGE_SRC/tests/e2e/verify/scale_runs.py" "$WORK"

expect_exit 0 "compare 2,000 tasks" "$verify" compare -k 1,4 --json --html "$WORK/compare.html" "$WORK/a.jsonl" "$WORK/b.jsonl"
jq -e '.overall.tasks == 2000 and (.tasks | length) == 2000' "$OUT" >/dev/null && pass || fail "compare: $(jq -c .overall "$OUT")"
expect_exit 0 "report 2,000 tasks" "$verify" report -k 1,4 --json --html "$WORK/report.html" "$WORK/b.jsonl"
for page in compare report; do
  python3 "$FORGE_SRC/tests/e2e/verify/page_in_browser.py" "$chromium" "$WORK/$page.html" 1280 "$WORK/$page.png" \
    >"$WORK/$page.json" 2>"$WORK/browser.err" && pass || { fail "$page: chromium: $(tail -3 "$WORK/browser.err")"; continue; }
  python3 - "$WORK/$page.json" "$page" <<'PY' && pass || fail "$page as the browser laid it out"
import json, sys
layout, page = json.load(open(sys.argv[1])), sys.argv[2]
charts, text = layout["charts"], layout["text"]
print(page, "page height", layout["height"], "px")
assert layout["height"] < 5000, layout["height"]
ids = ["chart-pass-curves", "chart-outcomes"]
ids += ["chart-differences", "chart-differences-hat", "chart-difference-histogram"] if page == "compare" else ["chart-task-histogram"]
for chart in ids:
    assert chart in charts and charts[chart][0] > 600 and charts[chart][1] > 100, (chart, charts.get(chart))
if page == "compare":
    assert layout["points"]["chart-differences"] == 16, layout["points"]  # 8 gains, 8 losses; the rest a line
    assert "1,984 more tasks" in text, text[:2000]
    for label in ("A PASS@1", "B PASS@1", "B − A PASS@1", "B − A PASS@4"):  # the levels at the top (upper-cased by CSS)
        assert label in text, label
else:
    assert "1,984 more tasks, pass@1 from" in text
for fact in ("made", "forge-verify 0.", "threshold", "1 (every verdict)", "resamples, seed 1"):
    assert fact in text, fact
PY
  [ -n "${FORGE_KEEP_SCREENSHOTS:-}" ] && cp "$WORK/$page.png" "$FORGE_KEEP_SCREENSHOTS/scale-$page.png"
done
finish
