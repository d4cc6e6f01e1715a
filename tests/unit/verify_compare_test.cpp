// compare: bootstrap intervals checked against brute-force enumeration of
// every resample, per-task intervals, flips, and the HTML pages' charts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "verify/bootstrap.h"
#include "verify/compare.h"
#include "verify/html.h"
#include "verify/svg.h"

namespace {

using forge::verify::Attempt;
using forge::verify::Outcome;

Attempt A(const std::string& task, bool passed, const std::string& harness = "h") {
  Attempt a;
  a.trial.task_id = task;
  a.trial.harness = harness;
  a.trial.outcome = passed ? Outcome::kPassed : Outcome::kFailed;
  a.trial.reward = passed ? 1.0 : 0.0;
  a.group = "all";
  return a;
}

void Add(std::vector<Attempt>& run, const std::string& task, int passed, int failed) {
  for (int i = 0; i < passed; ++i) run.push_back(A(task, true));
  for (int i = 0; i < failed; ++i) run.push_back(A(task, false));
}

// The exact bootstrap distribution of the mean of `values`: every one of the
// n^n equally likely resamples.
std::vector<double> AllResampleMeans(const std::vector<double>& values) {
  const size_t n = values.size();
  size_t total = 1;
  for (size_t i = 0; i < n; ++i) total *= n;
  std::vector<double> means;
  for (size_t code = 0; code < total; ++code) {
    double sum = 0;
    size_t c = code;
    for (size_t i = 0; i < n; ++i, c /= n) sum += values[c % n];
    means.push_back(sum / static_cast<double>(n));
  }
  return means;
}

}  // namespace

TEST_CASE("SplitMix64 gives the published sequence") {
  forge::verify::SplitMix64 gen(0);
  CHECK(gen.Next() == 0xe220a8397b1dcdafULL);
  CHECK(gen.Next() == 0x6e789e6aa1b965f4ULL);
  CHECK(gen.Next() == 0x06c45d188009454fULL);
}

TEST_CASE("percentile interval picks the documented order statistics") {
  std::vector<double> s;
  for (int i = 99; i >= 0; --i) s.push_back(i);
  auto v = forge::verify::PercentileInterval(s, 42, 0.90);
  CHECK(v.estimate == 42);
  CHECK(v.low == 5);    // s[floor(100 * 0.05)]
  CHECK(v.high == 94);  // s[ceil(100 * 0.95) - 1]
}

TEST_CASE("bootstrap interval of a mean agrees with the exact distribution over every resample") {
  const std::vector<double> values = {0.0, 0.25, 1.0, -0.5, 0.75};  // 5^5 = 3125 resamples
  std::vector<double> exact = AllResampleMeans(values);
  std::sort(exact.begin(), exact.end());
  auto cdf_below = [&](double x) {  // P(mean < x), P(mean <= x)
    auto lo = std::lower_bound(exact.begin(), exact.end(), x - 1e-12) - exact.begin();
    auto hi = std::upper_bound(exact.begin(), exact.end(), x + 1e-12) - exact.begin();
    return std::pair{double(lo) / exact.size(), double(hi) / exact.size()};
  };
  auto intervals = forge::verify::BootstrapMeans({values}, 200000, 7, 0.95);
  REQUIRE(intervals.size() == 1);
  CHECK(intervals[0].estimate == doctest::Approx(0.3));
  // Each end is a value the exact distribution puts its 2.5 % / 97.5 % point at
  // (within Monte Carlo error of 200,000 draws).
  auto [below_low, upto_low] = cdf_below(intervals[0].low);
  CHECK(below_low <= 0.025 + 0.002);
  CHECK(upto_low >= 0.025 - 0.002);
  auto [below_high, upto_high] = cdf_below(intervals[0].high);
  CHECK(below_high <= 0.975 + 0.002);
  CHECK(upto_high >= 0.975 - 0.002);
  // The same seed draws the same resamples; another seed other ones.
  auto again = forge::verify::BootstrapMeans({values}, 2000, 7, 0.95);
  auto same = forge::verify::BootstrapMeans({values}, 2000, 7, 0.95);
  CHECK(again[0].low == same[0].low);
  CHECK(again[0].high == same[0].high);
}

TEST_CASE("compare: paired tasks, overall mean of differences, flips, tasks in one run only") {
  std::vector<Attempt> a, b;
  Add(a, "t1", 0, 4);  // 0/4 -> 3/4: gained
  Add(b, "t1", 3, 1);
  Add(a, "t2", 2, 2);  // 2/4 -> 0/4: lost
  Add(b, "t2", 0, 4);
  Add(a, "t3", 4, 0);  // unchanged
  Add(b, "t3", 4, 0);
  Add(a, "only-a", 1, 1);
  Add(b, "only-b", 1, 1);
  forge::verify::CompareSettings settings;
  settings.bootstrap.resamples = 10000;  // each extreme mean has 1/27 of the draws: ~370 against the 250 needed
  auto c = forge::verify::Compare(a, b, "a.jsonl", "b.jsonl", settings, false);
  REQUIRE(c.ok());
  REQUIRE(c->tasks.size() == 3);
  CHECK(c->tasks[0].flip == "gained");
  CHECK(c->tasks[1].flip == "lost");
  CHECK(c->tasks[2].flip.empty());
  CHECK(c->only_a == std::vector<std::string>{"only-a"});
  CHECK(c->only_b == std::vector<std::string>{"only-b"});
  // pass@1 differences: +0.75, -0.5, 0; their mean.
  CHECK(c->overall[0].pass_at_k.estimate == doctest::Approx(0.25 / 3));
  CHECK(c->overall[0].pass_at_k.low <= c->overall[0].pass_at_k.estimate);
  CHECK(c->overall[0].pass_at_k.high >= c->overall[0].pass_at_k.estimate);
  // Three tasks: the interval's ends are means of three of the differences.
  CHECK(c->overall[0].pass_at_k.low == doctest::Approx(-0.5));
  CHECK(c->overall[0].pass_at_k.high == doctest::Approx(0.75));

  auto json = forge::verify::ComparisonToJson(*c);
  CHECK(json["flipped"]["gained"] == nlohmann::json::array({"t1"}));
  CHECK(json["overall"]["pass_at_k"]["1"]["difference"].get<double>() == doctest::Approx(0.25 / 3));
  CHECK(forge::verify::ComparisonToTable(*c).find("gained (A never passed, B did): t1") != std::string::npos);

  std::vector<Attempt> none;
  Add(none, "other", 1, 0);
  auto disjoint = forge::verify::Compare(a, none, "a", "b", settings, false);
  REQUIRE_FALSE(disjoint.ok());
  CHECK(disjoint.status().message() == "the two runs have no task in common");
}

TEST_CASE("the pages hold every chart, escape what they show, and load nothing") {
  std::vector<Attempt> a, b;
  Add(a, "<script>alert(1)</script>", 1, 1);
  Add(b, "<script>alert(1)</script>", 2, 0);
  a.push_back(A("<script>alert(1)</script>", false));
  a.back().trial.outcome = Outcome::kInfraError;
  forge::verify::CompareSettings settings;
  settings.ks = {1, 2};
  settings.bootstrap.resamples = 100;
  auto c = forge::verify::Compare(a, b, "a.jsonl", "b.jsonl", settings, false);
  REQUIRE(c.ok());
  std::string page = forge::verify::ComparePage(*c, {{"a.jsonl", "b.jsonl"}, {}, "2026-12-01 10:00:00 UTC"});
  for (const char* id : {"chart-differences", "chart-differences-hat", "chart-difference-histogram", "chart-pass-curves",
                         "chart-outcomes"}) {
    CHECK_MESSAGE(page.find(std::string("<svg id=\"") + id + "\"") != std::string::npos, id);
  }
  CHECK(page.find("<script>") == std::string::npos);
  CHECK(page.find("&lt;script&gt;") != std::string::npos);
  CHECK(page.find("http") == std::string::npos);
  CHECK(page.find("url(") == std::string::npos);
  CHECK(page.find("No recorded calls were read") != std::string::npos);

  std::vector<const Attempt*> all;
  for (auto& x : a) all.push_back(&x);
  auto group = forge::verify::BuildGroupReport("all", all, {1}, false);
  REQUIRE(group.ok());
  forge::verify::GroupedReport report;
  report.all = std::move(*group);
  std::string report_page = forge::verify::ReportPage(report, {{"v.jsonl"}, {}, ""});
  CHECK(report_page.find("<svg id=\"chart-pass-curves\"") != std::string::npos);
  CHECK(report_page.find("<svg id=\"chart-outcomes\"") != std::string::npos);
  CHECK(report_page.find("<svg id=\"chart-task-histogram\"") != std::string::npos);
  CHECK(report_page.find("infra_error") != std::string::npos);
  // Provenance: when, by which forge, from what, judged at which threshold.
  CHECK(page.find("2026-12-01 10:00:00 UTC by forge-verify " FORGE_VERSION) != std::string::npos);
  CHECK(page.find("a.jsonl, b.jsonl") != std::string::npos);
  CHECK(page.find("10,000 resamples") == std::string::npos);  // 100 here
  CHECK(page.find("100 resamples, seed 1") != std::string::npos);
  CHECK(page.find("threshold") != std::string::npos);
}

namespace {

// The SVG of one chart on a page.
std::string ChartOf(const std::string& page, const std::string& id) {
  const size_t at = page.find("<svg id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  return page.substr(at, page.find("</svg>", at) - at);
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("compare: A's and B's values are over the tasks both ran, as B - A is (issue 58)") {
  // The example: t1 in both (passed in both), t2 only in A (failed).
  std::vector<Attempt> a, b;
  Add(a, "t1", 1, 0);
  Add(a, "t2", 0, 1);
  Add(b, "t1", 1, 0);
  forge::verify::CompareSettings settings;
  settings.bootstrap.resamples = 1000;
  auto c = forge::verify::Compare(a, b, "a.jsonl", "b.jsonl", settings, false);
  REQUIRE(c.ok());
  CHECK(c->overall_a[0].pass_at_k.estimate == 1.0);  // not 0.5, A's mean over t1 and t2
  CHECK(c->overall_b[0].pass_at_k.estimate == 1.0);
  CHECK(c->overall[0].pass_at_k.estimate == 0.0);
  CHECK(c->a.report.overall_ks[0].pass_at_k == 0.5);  // the whole run, kept and labelled as such
  CHECK(c->paired_a.curve[0].pass_at_k == 1.0);       // the curves too
  const std::string table = forge::verify::ComparisonToTable(*c);
  CHECK(table.find("pass@1  A 1.0000 [1.000, 1.000]  B 1.0000 [1.000, 1.000]  B-A +0.000") != std::string::npos);
  CHECK(table.find("whole runs, all their tasks: A pass@1 0.5000 over 2 tasks") != std::string::npos);
  const auto json = forge::verify::ComparisonToJson(*c);
  CHECK(json["overall"]["a"]["pass_at_k"]["1"]["value"] == 1.0);
  CHECK(json["a"]["report"]["overall"]["pass_at_k"]["1"] == 0.5);
  const std::string page = forge::verify::ComparePage(*c, {{"a.jsonl", "b.jsonl"}, {}, ""});
  CHECK(page.find("<div class=\"label\">A pass@1</div><div class=\"value\">1.000</div>") != std::string::npos);
  CHECK(page.find("A, whole run") != std::string::npos);

  // Two tasks in both and one of each run's own, worked out by hand: over t1
  // (A 0/2, B 2/2) and t2 (2/2 both), A is 0.5, B 1 and B - A 0.5; a resample
  // of two tasks draws t1 twice a quarter of the time, t2 twice a quarter:
  // A's interval [0, 1], B's [1, 1], B - A's [0, 1]. Whole runs: 1/3, 2/3.
  a.clear();
  b.clear();
  Add(a, "t1", 0, 2);
  Add(b, "t1", 2, 0);
  Add(a, "t2", 2, 0);
  Add(b, "t2", 2, 0);
  Add(a, "only-a", 0, 2);
  Add(b, "only-b", 0, 2);
  c = forge::verify::Compare(a, b, "a", "b", settings, false);
  REQUIRE(c.ok());
  const auto& la = c->overall_a[0].pass_at_k;
  const auto& lb = c->overall_b[0].pass_at_k;
  const auto& d = c->overall[0].pass_at_k;
  CHECK(la.estimate == 0.5);
  CHECK(la.low == 0.0);
  CHECK(la.high == 1.0);
  CHECK(lb.estimate == 1.0);
  CHECK(lb.low == 1.0);
  CHECK(lb.high == 1.0);
  CHECK(d.estimate == 0.5);
  CHECK(d.low == 0.0);
  CHECK(d.high == 1.0);
  CHECK(c->a.report.overall_ks[0].pass_at_k == doctest::Approx(1.0 / 3));
  CHECK(c->b.report.overall_ks[0].pass_at_k == doctest::Approx(2.0 / 3));
}

TEST_CASE("per-task marks follow Holm-adjusted exact tests, never a task's own interval alone") {
  forge::verify::CompareSettings settings;
  settings.bootstrap.resamples = 200;
  auto run = [&](int tasks, int n, bool with_one_real) {
    std::vector<Attempt> a, b;
    for (int i = 0; i < tasks; ++i) {
      const std::string id = "t" + std::to_string(100 + i);
      if (with_one_real && i > 0) {  // unchanged: 2/4 in both
        Add(a, id, 2, 2);
        Add(b, id, 2, 2);
      } else {  // never -> always
        Add(a, id, 0, n);
        Add(b, id, n, 0);
      }
    }
    auto c = forge::verify::Compare(a, b, "a", "b", settings, false);
    REQUIRE(c.ok());
    return std::move(*c);
  };
  // 40 tasks 0/3 -> 3/3: each alone has p = 0.1; nothing is marked, no interval is a point.
  auto small = run(40, 3, false);
  for (const auto& t : small.tasks) {
    CHECK(t.p_value == doctest::Approx(0.1));
    CHECK(t.p_holm == 1.0);
    CHECK(t.Marked(small.alpha()) == 0);
    CHECK(t.diffs[0].pass_at_k.low < 0.4);
  }
  std::string page = forge::verify::ComparePage(small, {{}, {}, ""});
  CHECK(Occurrences(ChartOf(page, "chart-differences"), "r=\"4.5\" fill=\"#2f9e6b\"") == 0);
  CHECK(Occurrences(ChartOf(page, "chart-differences"), "r=\"4.5\" fill=\"#7b8794\"") == 16);
  CHECK(ComparisonToJson(small)["tasks"][0]["marked"].is_null());
  // 40 tasks 0/20 -> 20/20: p = 2 / C(40, 20) each, far below 0.05 / 40: all marked.
  auto large = run(40, 20, false);
  for (const auto& t : large.tasks) CHECK(t.Marked(large.alpha()) == 1);
  // 39 unchanged and one 0/20 -> 20/20: that one only.
  auto one = run(40, 20, true);
  CHECK(one.tasks[0].Marked(one.alpha()) == 1);
  for (size_t i = 1; i < one.tasks.size(); ++i) CHECK(one.tasks[i].Marked(one.alpha()) == 0);
  page = forge::verify::ComparePage(one, {{}, {}, ""});
  CHECK(Occurrences(ChartOf(page, "chart-differences"), "r=\"4.5\" fill=\"#2f9e6b\"") == 1);
  CHECK(ComparisonToJson(one)["tasks"][0]["marked"] == "gain");
}

TEST_CASE("pages that scale: 2,000 tasks, the ends by name and the rest summarised; legends cap") {
  std::vector<Attempt> a, b;
  for (int i = 0; i < 2000; ++i) {
    const std::string id = "task-" + std::to_string(10000 + i);
    Add(a, id, i % 5, 4 - i % 5);
    Add(b, id, (i + i / 7) % 5, 4 - (i + i / 7) % 5);
  }
  forge::verify::CompareSettings settings;
  settings.bootstrap.resamples = 200;
  auto c = forge::verify::Compare(a, b, "a", "b", settings, false);
  REQUIRE(c.ok());
  const std::string page = forge::verify::ComparePage(*c, {{}, {}, ""});
  // 8 largest gains and 8 largest losses, by difference; the rest one line.
  CHECK(Occurrences(ChartOf(page, "chart-differences"), "<circle") == 16);
  CHECK(page.find("1,984 more tasks") != std::string::npos);
  const auto sorted = c->ByDifference();
  CHECK(sorted.front()->diffs[0].pass_at_k.estimate == 1.0);
  CHECK(sorted.back()->diffs[0].pass_at_k.estimate == -1.0);
  CHECK(page.find(sorted.front()->task_id) < page.find(sorted.back()->task_id));
  CHECK(page.find("chart-differences-hat") == std::string::npos);  // at k = 1 pass^1 is pass@1
  CHECK(page.size() < 120000);

  // A report of 2,000 tasks: the table shows 16 by name.
  std::vector<const Attempt*> all;
  for (const auto& x : a) all.push_back(&x);
  auto group = forge::verify::BuildGroupReport("all", all, {1}, false);
  REQUIRE(group.ok());
  forge::verify::GroupedReport report;
  report.all = std::move(*group);
  const std::string report_page = forge::verify::ReportPage(report, {{}, {}, ""});
  CHECK(report_page.find("1,984 more tasks, pass@1 from") != std::string::npos);
  CHECK(Occurrences(ChartOf(report_page, "chart-outcomes"), "<text") < 40 * 3);

  // A legend of 20 entries shows 14 and says how many more.
  std::vector<forge::verify::svg::LegendEntry> legend;
  for (int i = 0; i < 20; ++i) legend.push_back({"group " + std::to_string(i), "#000", false});
  const std::string chart = forge::verify::svg::LineChart("x", "k", "share", {}, legend);
  CHECK(chart.find("group 13") != std::string::npos);
  CHECK(chart.find("group 14") == std::string::npos);
  CHECK(chart.find("+6 more (see the tables)") != std::string::npos);

  // --by with 30 groups: 12 drawn, and said so.
  std::vector<Attempt> many;
  for (int g = 0; g < 30; ++g) {
    for (int i = 0; i < 2; ++i) {
      many.push_back(A("t", i == 0));
      many.back().group = "harness-" + std::to_string(g);
    }
  }
  auto grouped = forge::verify::BuildGroupedReport(many, "harness", {1}, false);
  REQUIRE(grouped.ok());
  const std::string by_page = forge::verify::ReportPage(*grouped, {{}, {}, ""});
  CHECK(by_page.find("The first 12 of 30 groups are drawn") != std::string::npos);
  CHECK(by_page.find("18 other groups") != std::string::npos);  // the outcome bars' last row
}

TEST_CASE("report --by policy_version: a learning curve with intervals, the behaviour beside it") {
  // Versions 0..9, tasks 1..4, 4 trials each; version v passes task j
  // min(4, (v + j) / 3) times; each trial takes 10 - v turns; trials of v >= 5
  // check their work after editing.
  std::vector<Attempt> attempts;
  for (int v = 0; v < 10; ++v) {
    for (int j = 1; j <= 4; ++j) {
      const int passes = std::min(4, (v + j) / 3);
      for (int i = 0; i < 4; ++i) {
        Attempt x = A("t" + std::to_string(j), i < passes);
        x.group = std::to_string(v);
        x.behaviour.emplace();
        x.behaviour->turns = 10 - v;
        x.behaviour->edited = true;
        x.behaviour->self_verified = v >= 5;
        attempts.push_back(std::move(x));
      }
    }
  }
  for (bool passed : {true, false}) {  // records without a version
    attempts.push_back(A("t1", passed));
    attempts.back().group = "(none)";
  }
  auto report = forge::verify::BuildGroupedReport(attempts, "policy_version", {1, 2}, true, {1000, 1, 0.95});
  REQUIRE(report.ok());
  const auto trend = report->Trend();
  REQUIRE(trend.size() == 10);
  for (int v = 0; v < 10; ++v) {
    double expected = 0;
    for (int j = 1; j <= 4; ++j) expected += std::min(4, (v + j) / 3) / 4.0 / 4;
    CAPTURE(v);
    CHECK(trend[v]->name == std::to_string(v));
    CHECK(trend[v]->report.overall_ks[0].pass_at_k == doctest::Approx(expected));
    CHECK(trend[v]->behaviour->PerTrial(trend[v]->behaviour->turns) == doctest::Approx(10 - v));
  }
  // Version 0's tasks are at 0, 0, 1/4, 1/4: a resample is all 0 (or all 1/4)
  // one time in 16, more than 2.5 %: the interval is [0, 1/4].
  REQUIRE(trend[0]->intervals.size() == 2);
  CHECK(trend[0]->intervals[0].pass_at_k.low == 0.0);
  CHECK(trend[0]->intervals[0].pass_at_k.high == 0.25);
  const std::string page = forge::verify::ReportPage(*report, {{"rounds.jsonl"}, {"forge.db"}, ""});
  const std::string curve = ChartOf(page, "chart-learning-curve");
  CHECK(Occurrences(curve, "<circle") == 30);  // pass@1, pass@2, pass^2 at 10 versions
  CHECK(Occurrences(curve, "<path d=") == 30); // each with its interval bar
  // Self-verification, turns and tokens at 10 versions; no trial had a failed tool call.
  CHECK(Occurrences(ChartOf(page, "chart-learning-behaviour"), "<circle") == 30);
  CHECK(page.find("no trial had a failed tool call in any of 10 versions") != std::string::npos);
  CHECK(page.find("the same 4 tasks at every point") != std::string::npos);
  CHECK(page.find("1 group(s) whose policy_version is not a number are not drawn") != std::string::npos);
  CHECK(page.find("Learning curve by policy_version") != std::string::npos);
}
