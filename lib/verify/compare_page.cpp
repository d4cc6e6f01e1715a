// The compare page (html.h): A's and B's levels and B - A over the tasks
// both ran at the top, the largest gains and losses with the rest as a
// distribution, then the runs' charts and the tables.
#include <algorithm>

#include <fmt/format.h>

#include "verify/html.h"
#include "verify/page_parts.h"

namespace forge::verify {

namespace {

using namespace page;  // NOLINT: the page's own parts

constexpr const char* kGain = "#2f9e6b";
constexpr const char* kLoss = "#d6604d";

std::string Percent(double confidence) { return fmt::format("{:.0f}%", confidence * 100); }

std::string Cards(const Comparison& c) {
  std::string cards = Card("tasks in both", Count(static_cast<int64_t>(c.tasks.size())),
                           fmt::format("{} only in A, {} only in B", c.only_a.size(), c.only_b.size()));
  const Interval& a = c.overall_a[0].pass_at_k;
  const Interval& b = c.overall_b[0].pass_at_k;
  const int64_t k = c.overall[0].k;
  cards += Card(fmt::format("A pass@{}", k), Fixed(a.estimate, 3), fmt::format("[{:.3f}, {:.3f}]", a.low, a.high));
  cards += Card(fmt::format("B pass@{}", k), Fixed(b.estimate, 3), fmt::format("[{:.3f}, {:.3f}]", b.low, b.high));
  for (size_t i = 0; i < c.overall.size() && i < 2; ++i) {
    const Interval& d = c.overall[i].pass_at_k;
    cards += Card(fmt::format("B − A pass@{}", c.overall[i].k), SignedText(d.estimate),
                  fmt::format("[{}, {}]", SignedText(d.low), SignedText(d.high)),
                  d.low > 0 ? "pos" : d.high < 0 ? "neg" : "");
  }
  size_t gains = 0, losses = 0, gained = 0, lost = 0;
  for (const auto& t : c.tasks) {
    gains += t.Marked(c.alpha()) > 0;
    losses += t.Marked(c.alpha()) < 0;
    gained += t.flip == "gained";
    lost += t.flip == "lost";
  }
  cards += Card("marked tasks", fmt::format("+{} −{}", gains, losses),
                fmt::format("Holm p ≤ {:g} · flipped +{} −{}", c.alpha(), gained, lost));
  const std::string lede = fmt::format(
      "A, B and B − A are over the same {} tasks (the tasks both runs ran; the whole runs are in the tables), with "
      "{} paired bootstrap intervals over those tasks. Marked: tasks whose difference an exact test calls real after "
      "Holm's adjustment; flipped: tasks one run never passed and the other did.",
      Count(static_cast<int64_t>(c.tasks.size())), Percent(c.settings.bootstrap.confidence));
  return "<div class=\"cards\">" + cards + "</div>\n<p class=\"lede\">" + svg::Escape(lede) + "</p>\n";
}

const Interval& Of(const KIntervals& v, bool hat) { return hat ? v.pass_hat_k : v.pass_at_k; }

std::string LeftOut(const std::vector<const TaskComparison*>& sorted, size_t from, size_t to, size_t at, bool hat) {
  size_t none = 0;
  for (size_t i = from; i < to; ++i) none += Of(sorted[i]->diffs[at], hat).estimate == 0;
  return fmt::format("… {} more tasks, B − A from {} to {} ({} with none)", Count(static_cast<int64_t>(to - from)),
                     SignedText(Of(sorted[to - 1]->diffs[at], hat).estimate), SignedText(Of(sorted[from]->diffs[at], hat).estimate),
                     Count(static_cast<int64_t>(none)));
}

std::string DifferenceSection(const Comparison& c, bool hat) {
  const size_t at = hat ? c.overall.size() - 1 : 0;
  const std::string metric = fmt::format("{}{}", hat ? "pass^" : "pass@", c.overall[at].k);
  const auto sorted = c.ByDifference(at, hat);
  const std::vector<size_t> shown = Ends(sorted.size(), kTasksPerSide);
  std::vector<svg::Estimate> rows;
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i > 0 && shown[i] != shown[i - 1] + 1) {
      rows.push_back({LeftOut(sorted, shown[i - 1] + 1, shown[i], at, hat), 0, 0, 0, "", "", true});
    }
    const TaskComparison& t = *sorted[shown[i]];
    const Interval& v = Of(t.diffs[at], hat);
    const int marked = t.Marked(c.alpha());
    rows.push_back({t.task_id + (t.flip.empty() ? "" : " (" + t.flip + ")"), v.estimate, v.low, v.high, IntervalText(v),
                    marked > 0 ? kGain : marked < 0 ? kLoss : "", false});
  }
  const Interval& o = Of(c.overall[at], hat);
  svg::Estimate overall{fmt::format("overall ({} tasks)", Count(static_cast<int64_t>(c.tasks.size()))), o.estimate, o.low,
                        o.high, IntervalText(o), o.low > 0 ? kGain : o.high < 0 ? kLoss : "", false};
  const BootstrapSettings& b = c.settings.bootstrap;
  const std::string caption = fmt::format(
      "Per task: B − A with its {0} posterior interval (Jeffreys' prior on each run's pass rate; right at small n). "
      "A task is coloured only when Fisher's exact test, Holm-adjusted over the {1} tasks, gives p ≤ {2:g} (green: B "
      "better; red: A better); grey otherwise. {3}Overall: the mean over tasks with a {0} paired bootstrap interval "
      "over tasks ({4} resamples, seed {5}).",
      Percent(b.confidence), Count(static_cast<int64_t>(c.tasks.size())), c.alpha(),
      sorted.size() > shown.size() ? fmt::format("The {} largest gains and losses are drawn; the distribution below has every task. ", kTasksPerSide)
                                   : "",
      Count(b.resamples), b.seed);
  return Section(hat ? "differences-hat" : "differences", "Difference in " + metric + ", B − A", caption,
                 svg::ForestPlot(hat ? "chart-differences-hat" : "chart-differences", metric + " difference (B − A)", rows,
                                 overall));
}

std::string HistogramSection(const Comparison& c) {
  // Bins of 0.1 centred on -1, -0.9, ..., 1: the middle one is "no change".
  std::vector<svg::Bin> bins;
  for (int i = -10; i <= 10; ++i) {
    bins.push_back({(i - 0.5) / 10, (i + 0.5) / 10, 0, i < 0 ? kLoss : i > 0 ? kGain : "#9aa5b1"});
  }
  size_t up = 0, down = 0;
  for (const auto& t : c.tasks) {
    const double d = t.diffs[0].pass_at_k.estimate;
    ++bins[static_cast<size_t>(std::clamp(std::lround(d * 10) + 10, 0L, 20L))].count;
    up += d > 0;
    down += d < 0;
  }
  const std::string metric = fmt::format("pass@{}", c.overall[0].k);
  return Section("difference-histogram", "Every task's difference in " + metric,
                 fmt::format("B − A of each of the {} tasks in both, in bins of 0.1: {} higher in B, {} lower, {} the same "
                             "(colour says the sign here, not significance).",
                             Count(static_cast<int64_t>(c.tasks.size())), Count(static_cast<int64_t>(up)),
                             Count(static_cast<int64_t>(down)), Count(static_cast<int64_t>(c.tasks.size() - up - down))),
                 svg::Histogram("chart-difference-histogram", metric + " difference (B − A)", bins));
}

std::string TaskCells(const TaskComparison& t, const Comparison& c) {
  const int marked = t.Marked(c.alpha());
  const char* cls = marked > 0 ? " pos" : marked < 0 ? " neg" : "";
  std::string r = fmt::format("<tr><td>{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}/{}</td>", svg::Escape(t.task_id),
                              t.a.passed, t.a.valid, t.b.passed, t.b.valid);
  for (const auto& d : t.diffs) r += fmt::format("<td class=\"num{}\">{}</td>", cls, IntervalText(d.pass_at_k));
  for (const auto& d : t.diffs) {
    if (d.k > 1) r += fmt::format("<td class=\"num{}\">{}</td>", cls, IntervalText(d.pass_hat_k));
  }
  return r + fmt::format("<td class=\"num{}\">{:.3g}</td><td>{}</td></tr>\n", cls, t.p_holm, svg::Escape(t.flip));
}

std::string CompareTable(const Comparison& c) {
  std::string t = "<h3>Per task, B − A (largest gain first)</h3><div class=\"scroll\"><table><tr><th>task</th>"
                  "<th class=\"num\">A c/n</th><th class=\"num\">B c/n</th>";
  size_t columns = 5;
  for (int64_t k : c.settings.ks) {
    t += fmt::format("<th class=\"num\">Δ pass@{} [posterior]</th>", k);
    ++columns;
  }
  for (int64_t k : c.settings.ks) {
    if (k == 1) continue;
    t += fmt::format("<th class=\"num\">Δ pass^{} [posterior]</th>", k);
    ++columns;
  }
  t += "<th class=\"num\">p (Holm)</th><th>flip</th></tr>\n";
  const auto sorted = c.ByDifference();
  const std::vector<size_t> shown = Ends(sorted.size(), kTasksPerSide);
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i > 0 && shown[i] != shown[i - 1] + 1) {
      t += GapRow(LeftOut(sorted, shown[i - 1] + 1, shown[i], 0, false) + "; the JSON output has every task", columns);
    }
    t += TaskCells(*sorted[shown[i]], c);
  }
  const auto& oa = c.overall_a[0].pass_at_k;
  const auto& ob = c.overall_b[0].pass_at_k;
  t += fmt::format("<tr class=\"total\"><td>overall (mean over tasks)</td><td class=\"num\">{:.3f}</td><td class=\"num\">{:.3f}</td>",
                   oa.estimate, ob.estimate);
  auto cls = [](const Interval& v) { return v.low > 0 ? " pos" : v.high < 0 ? " neg" : ""; };
  for (const auto& d : c.overall) t += fmt::format("<td class=\"num{}\">{}</td>", cls(d.pass_at_k), IntervalText(d.pass_at_k));
  for (const auto& d : c.overall) {
    if (d.k > 1) t += fmt::format("<td class=\"num{}\">{}</td>", cls(d.pass_hat_k), IntervalText(d.pass_hat_k));
  }
  return t + "<td></td><td></td></tr></table></div>\n";
}

std::string RunsTable(const Comparison& c) {
  const std::vector<KIntervals> none;
  std::string t = "<h3>The runs</h3><div class=\"scroll\"><table>" + StatsHeader("run", c.paired_a.report.overall_ks, true, true);
  for (auto [name, g, iv] : {std::tuple{"A, tasks in both", &c.paired_a, &c.overall_a},
                             std::tuple{"B, tasks in both", &c.paired_b, &c.overall_b}}) {
    t += StatsRow(name, g->report.overall, g->report.overall_ks, g->report.overall_mean_reward, g->report.tasks.size(), iv);
  }
  if (!c.only_a.empty() || !c.only_b.empty()) {
    for (auto [name, g] : {std::pair{"A, whole run", &c.a}, std::pair{"B, whole run", &c.b}}) {
      t += StatsRow(name, g->report.overall, g->report.overall_ks, g->report.overall_mean_reward, g->report.tasks.size(), &none);
    }
  }
  t += "</table></div>\n";
  auto list = [](const std::vector<std::string>& ids) { return Listed(ids, 20); };
  if (!c.only_a.empty() || !c.only_b.empty()) {
    t += Note("Not compared — only in A: " + list(c.only_a) + "; only in B: " + list(c.only_b) +
              ". Whole-run rows count every task of a run; every other figure on this page is over the tasks in both.");
  }
  std::vector<std::string> gained, lost;
  for (const auto& task : c.tasks) {
    if (task.flip == "gained") gained.push_back(task.task_id);
    if (task.flip == "lost") lost.push_back(task.task_id);
  }
  return t + "<p><b>Gained</b> (A never passed, B did): " + svg::Escape(list(gained)) +
         "<br><b>Lost</b> (A passed, B never did): " + svg::Escape(list(lost)) + "</p>";
}

}  // namespace

std::string ComparePage(const Comparison& c, const Provenance& made) {
  const std::vector<const GroupReport*> paired = {&c.paired_a, &c.paired_b};
  auto base = [](const std::string& path) { return path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1); };
  const std::string title = "A: " + base(c.label_a) + "  ·  B: " + base(c.label_b);
  std::string page = Head("forge-verify compare — " + title) +
                     Header("forge-verify compare", title, "A: " + c.label_a + " · B: " + c.label_b);
  page += Cards(c) + DifferenceSection(c, false);
  if (c.overall.back().k > 1) page += DifferenceSection(c, true);  // at k = 1, pass^1 is pass@1
  page += HistogramSection(c);
  const std::string both = fmt::format("the {} tasks both runs ran", Count(static_cast<int64_t>(c.tasks.size())));
  page += CurvesSection(paired, both, false);
  page += OutcomesSection({OutcomeRow("A", c.paired_a.report.overall), OutcomeRow("B", c.paired_b.report.overall)}, both);
  page += BehaviourSections(paired, true);
  const std::string tables = CompareTable(c) + RunsTable(c) + BehaviourTable(paired);
  page += Section("tables", "Tables", "The numbers behind the charts.", tables);
  const BootstrapSettings& b = c.settings.bootstrap;
  auto facts = CountingFacts({&c.a.report, &c.b.report});
  facts.push_back({"per task", fmt::format("each run's pass rate has the posterior Beta(c + 1/2, n − c + 1/2) (Jeffreys' "
                                           "prior); a level's and B − A's {} intervals are equal-tailed posterior intervals, "
                                           "computed by numerical integration, widened to hold the estimate",
                                           Percent(b.confidence))});
  facts.push_back({"marked", fmt::format("Fisher's exact test of equal pass rates per task, Holm-adjusted over the {} "
                                         "tasks compared; marked when p ≤ {:g}",
                                         Count(static_cast<int64_t>(c.tasks.size())), c.alpha())});
  facts.push_back({"overall", fmt::format("{} paired percentile bootstrap over the tasks in both: {} resamples, seed {} "
                                          "(SplitMix64; forge-verify(1) says how to reproduce it)",
                                          Percent(b.confidence), Count(b.resamples), b.seed)});
  return page + Footer(made, facts);
}

}  // namespace forge::verify
