// forge-verify's HTML pages (report --html, compare --html): one
// self-contained file (inline CSS and SVG, no script, no outside asset) with
// the charts at the top and the tables beneath. Chart ids, for tests and
// links: chart-pass-curves, chart-outcomes, chart-tool-use, chart-rates,
// chart-effort, and on the compare page chart-differences and
// chart-differences-hat (pass@k at the first k, pass^k at the last).
#pragma once

#include <string>
#include <vector>

#include "verify/compare.h"
#include "verify/report_groups.h"

namespace forge::verify {

// Named on the page, so a reader knows what it was made from.
struct PageSource {
  std::vector<std::string> inputs;
  std::vector<std::string> stores;
};

std::string ReportPage(const GroupedReport& report, const PageSource& source);
std::string ComparePage(const Comparison& comparison, const PageSource& source);

}  // namespace forge::verify
