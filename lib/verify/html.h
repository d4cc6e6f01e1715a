// forge-verify's HTML pages (report --html, compare --html): one
// self-contained file (inline CSS and SVG, no script, no outside asset) with
// the charts at the top and the tables beneath, readable at any number of
// tasks: tasks are shown by name only at the ends (the lowest and highest, or
// the largest gains and losses), the rest summarised and charted as a
// distribution; legends and group lists cap. Chart ids, for tests and links:
// chart-pass-curves, chart-outcomes, chart-tool-use, chart-rates,
// chart-effort; on a report page chart-task-histogram (without --by) and,
// when the groups are numbers (policy versions), chart-learning-curve and
// chart-learning-behaviour; on a compare page chart-differences (pass@k at
// the first k), chart-differences-hat (pass^k at the last k, when above 1)
// and chart-difference-histogram.
#pragma once

#include <string>
#include <vector>

#include "verify/compare.h"
#include "verify/report_groups.h"

namespace forge::verify {

// Where a page comes from, written at its foot with the forge version, the
// thresholds the verdicts record and how the intervals were drawn.
struct Provenance {
  std::vector<std::string> inputs;
  std::vector<std::string> stores;
  std::string made_at;  // e.g. "2026-12-01 10:00:00 UTC"; empty: not said
};

std::string ReportPage(const GroupedReport& report, const Provenance& made);
std::string ComparePage(const Comparison& comparison, const Provenance& made);

}  // namespace forge::verify
