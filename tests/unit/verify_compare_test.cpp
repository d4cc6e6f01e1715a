// compare: bootstrap intervals checked against brute-force enumeration of
// every resample, per-task intervals, flips, and the HTML pages' charts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "verify/bootstrap.h"
#include "verify/compare.h"
#include "verify/html.h"

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

TEST_CASE("per-task interval: certain differences are exact, equal runs straddle zero") {
  forge::verify::CompareSettings settings;
  settings.ks = {1, 2};
  settings.resamples = 2000;
  forge::verify::TaskStats never, always, half_a, half_b;
  never.valid = 4;
  always.valid = 4;
  always.passed = 4;
  auto d = forge::verify::TaskDifference(never, always, settings.ks, settings, 1);
  CHECK(d[0].pass_at_k.estimate == 1);
  CHECK(d[0].pass_at_k.low == 1);
  CHECK(d[0].pass_at_k.high == 1);
  half_a.valid = half_b.valid = 10;
  half_a.passed = half_b.passed = 5;
  d = forge::verify::TaskDifference(half_a, half_b, settings.ks, settings, 1);
  CHECK(d[1].pass_hat_k.estimate == 0);
  CHECK(d[1].pass_hat_k.low < 0);
  CHECK(d[1].pass_hat_k.high > 0);
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
  settings.resamples = 10000;  // each extreme mean has 1/27 of the draws: ~370 against the 250 needed
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
  settings.resamples = 100;
  auto c = forge::verify::Compare(a, b, "a.jsonl", "b.jsonl", settings, false);
  REQUIRE(c.ok());
  std::string page = forge::verify::ComparePage(*c, {{"a.jsonl", "b.jsonl"}, {}});
  for (const char* id : {"chart-differences", "chart-differences-hat", "chart-pass-curves", "chart-outcomes"}) {
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
  std::string report_page = forge::verify::ReportPage(report, {{"v.jsonl"}, {}});
  CHECK(report_page.find("<svg id=\"chart-pass-curves\"") != std::string::npos);
  CHECK(report_page.find("<svg id=\"chart-outcomes\"") != std::string::npos);
  CHECK(report_page.find("infra_error") != std::string::npos);
}
