// The report page (html.h): levels at the top, a learning curve when the
// groups are numbers, the charts, then the tables.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "verify/html.h"
#include "verify/page_parts.h"

namespace forge::verify {

namespace {

using namespace page;  // NOLINT: the page's own parts

std::string IntervalsFact(const GroupedReport& report) {
  const BootstrapSettings& b = report.bootstrap;
  return fmt::format("{:.0f}% percentile bootstrap over each group's tasks ({} resamples, seed {}; a group's own "
                     "stream, seeded from the seed and its name); none below 2 tasks. It says how much a level "
                     "depends on which tasks were drawn.",
                     b.confidence * 100, Count(b.resamples), b.seed);
}

std::string LevelSub(const GroupReport& g) {
  std::string sub = g.intervals.empty() ? std::string("no interval (1 task)")
                                        : fmt::format("[{:.3f}, {:.3f}]", g.intervals[0].pass_at_k.low, g.intervals[0].pass_at_k.high);
  return sub + fmt::format(" · {} tasks · {} trials", Count(static_cast<int64_t>(g.report.tasks.size())), Count(g.report.overall.valid));
}

std::string PlainCards(const GroupedReport& report) {
  const GroupReport& all = report.all;
  const Report& r = all.report;
  std::string cards = Card("tasks", Count(static_cast<int64_t>(r.tasks.size())), "") +
                      Card("valid trials", Count(r.overall.valid),
                           fmt::format("{} excluded · {} tampered (failed)", Count(r.overall.excluded), Count(r.overall.tampered)));
  for (size_t i = 0; i < r.overall_ks.size() && i < 3; ++i) {
    const KValues& v = r.overall_ks[i];
    std::string sub = i < all.intervals.size()
                          ? fmt::format("[{:.3f}, {:.3f}] · pass^{} {:.3f}", all.intervals[i].pass_at_k.low,
                                        all.intervals[i].pass_at_k.high, v.k, v.pass_hat_k)
                          : fmt::format("pass^{} {:.3f}", v.k, v.pass_hat_k);
    cards += Card(fmt::format("pass@{}", v.k), Fixed(v.pass_at_k, 3), sub);
  }
  cards += Card("mean reward", Fixed(r.overall_mean_reward, 3), "tampered trials count 0");
  if (all.behaviour) cards += Card("self-verification", PercentOrNa(all.behaviour->SelfVerificationRate()), "of trials that edited");
  const std::string lede = fmt::format("pass@k: the mean over tasks; [interval]: {:.0f}% percentile bootstrap over the "
                                       "tasks (see the foot of the page).", report.bootstrap.confidence * 100);
  return "<div class=\"cards\">" + cards + "</div>\n<p class=\"lede\">" + svg::Escape(lede) + "</p>\n";
}

std::string GroupCards(const GroupedReport& report, const std::vector<const GroupReport*>& trend) {
  const int64_t k = report.all.report.overall_ks[0].k;
  std::vector<const GroupReport*> shown;
  std::string lede;
  if (!trend.empty()) {
    const GroupReport* best = *std::max_element(trend.begin(), trend.end(), [](const GroupReport* x, const GroupReport* y) {
      return x->report.overall_ks[0].pass_at_k < y->report.overall_ks[0].pass_at_k;
    });
    shown = {trend.front(), trend.back()};
    if (best != trend.front() && best != trend.back()) shown.push_back(best);
    lede = fmt::format("The first and latest {} of {}{}; each over its own tasks.", report.by, trend.size(),
                       shown.size() > 2 ? ", and the best" : "");
  } else {
    for (size_t i = 0; i < report.groups.size() && i < 8; ++i) shown.push_back(&report.groups[i]);
    lede = fmt::format("One card per {} over its own tasks{}; no card pools groups.", report.by,
                       report.groups.size() > shown.size() ? fmt::format(" (the first {} of {})", shown.size(), report.groups.size()) : "");
  }
  std::string cards;
  for (const GroupReport* g : shown) {
    const std::string label = fmt::format("{} {} · pass@{}", report.by, g->name, k);
    cards += Card(label, Fixed(g->report.overall_ks[0].pass_at_k, 3), LevelSub(*g));
  }
  return "<div class=\"cards\">" + cards + "</div>\n<p class=\"lede\">" + svg::Escape(lede) + "</p>\n";
}

// What the points of a trend are over: the same tasks, or not.
std::string TasksOfPoints(const std::vector<const GroupReport*>& trend) {
  std::set<std::string> first;
  for (const auto& row : trend[0]->report.tasks) first.insert(row.stats.task_id);
  size_t fewest = first.size(), most = first.size();
  bool same = true;
  for (const GroupReport* g : trend) {
    fewest = std::min(fewest, g->report.tasks.size());
    most = std::max(most, g->report.tasks.size());
    std::set<std::string> ids;
    for (const auto& row : g->report.tasks) ids.insert(row.stats.task_id);
    same = same && ids == first;
  }
  if (same) return fmt::format("the same {} tasks at every point", first.size());
  return fmt::format("tasks differ between points ({} to {} per point), so a step can be a change of tasks", fewest, most);
}

svg::TrendPoint Point(const GroupReport& g, double x, size_t i, bool hat, const std::string& by) {
  const KValues& v = g.report.overall_ks[i];
  const double y = hat ? v.pass_hat_k : v.pass_at_k;
  svg::TrendPoint p{x, y, std::nullopt, std::nullopt, ""};
  if (i < g.intervals.size()) {
    const Interval& iv = hat ? g.intervals[i].pass_hat_k : g.intervals[i].pass_at_k;
    p.low = iv.low;
    p.high = iv.high;
  }
  p.tip = fmt::format("{} {}: {}{} {:.3f}{} over {} tasks", by, g.name, hat ? "pass^" : "pass@", v.k, y,
                      p.low ? fmt::format(" [{:.3f}, {:.3f}]", *p.low, *p.high) : "", g.report.tasks.size());
  return p;
}

std::string BehaviourPanels(const GroupedReport& report, const std::vector<const GroupReport*>& trend) {
  if (!trend[0]->behaviour) return Note("No recorded calls were read: give --store to draw the behaviour beside the curve.");
  struct Metric {
    const char* title;
    const char* none;  // why a version has no value
    bool percent;
    double y_max;
    std::optional<double> (*of)(const BehaviourSummary&);
  };
  const Metric metrics[] = {
      {"Self-verification rate", "no trial edited", true, 1,
       [](const BehaviourSummary& b) { return b.SelfVerificationRate(); }},
      {"Error recovery rate", "no trial had a failed tool call", true, 1,
       [](const BehaviourSummary& b) { return b.RecoveryRate(); }},
      {"Turns per trial", "", false, 0,
       [](const BehaviourSummary& b) { return std::optional<double>(b.PerTrial(b.turns)); }},
      {"Completion tokens per trial", "", false, 0,
       [](const BehaviourSummary& b) { return std::optional<double>(b.PerTrial(b.completion_tokens)); }}};
  std::vector<svg::TrendPanel> panels;
  for (size_t m = 0; m < std::size(metrics); ++m) {
    svg::TrendSeries series{metrics[m].title, Color(m + 2), false, {}};
    for (const GroupReport* g : trend) {
      const auto v = metrics[m].of(*g->behaviour);
      if (!v) continue;
      series.points.push_back({*NumberOf(g->name), *v, std::nullopt, std::nullopt,
                               fmt::format("{} {}: {}", report.by, g->name,
                                           metrics[m].percent ? PercentOrNa(v) : Fixed(*v, 1))});
    }
    std::string title = metrics[m].title;
    if (!series.points.empty() && series.points.size() < trend.size()) {
      title += fmt::format(" ({} of {})", series.points.size(), trend.size());
    }
    std::string none = series.points.empty() ? std::string(metrics[m].none) + fmt::format(" in any of {} versions", trend.size()) : "";
    panels.push_back({title, "", metrics[m].y_max, metrics[m].percent, {std::move(series)}, none});
  }
  return svg::TrendPanels("chart-learning-behaviour", report.by, panels);
}

std::string LearningSection(const GroupedReport& report, const std::vector<const GroupReport*>& trend) {
  const auto& ks = report.all.report.overall_ks;
  svg::TrendPanel levels{"", "share of tasks", 1, false, {}, ""};
  for (size_t i = 0; i < ks.size() && i < 3; ++i) {
    svg::TrendSeries s{fmt::format("pass@{}", ks[i].k), Color(i), false, {}};
    for (const GroupReport* g : trend) s.points.push_back(Point(*g, *NumberOf(g->name), i, false, report.by));
    levels.series.push_back(std::move(s));
  }
  if (ks.back().k > 1) {
    svg::TrendSeries s{fmt::format("pass^{}", ks.back().k), Color(ks.size() - 1), true, {}};
    for (const GroupReport* g : trend) s.points.push_back(Point(*g, *NumberOf(g->name), ks.size() - 1, true, report.by));
    levels.series.push_back(std::move(s));
  }
  const size_t unplotted = report.groups.size() - trend.size();
  const BootstrapSettings& b = report.bootstrap;
  const std::string caption = fmt::format(
      "Each point is one {} over {}. Bars: {:.0f}% percentile bootstrap over that point's tasks ({} resamples, seed "
      "{}). Rerun the command as rounds arrive: it reads the verdict files and the store as they are.{}",
      report.by, TasksOfPoints(trend), b.confidence * 100, Count(b.resamples), b.seed,
      unplotted > 0 ? fmt::format(" {} group(s) whose {} is not a number are not drawn.", unplotted, report.by) : "");
  return Section("learning-curve", "Learning curve by " + report.by, caption,
                 svg::TrendChart("chart-learning-curve", report.by, levels) + "<h3>Behaviour beside it</h3>" +
                     BehaviourPanels(report, trend));
}

std::string TaskHistogramSection(const Report& r) {
  std::vector<svg::Bin> bins;
  for (int i = 0; i < 10; ++i) bins.push_back({i / 10.0, (i + 1) / 10.0, 0, "#4c9be8"});
  int64_t never = 0, always = 0;
  for (const auto& row : r.tasks) {
    const double v = row.ks[0].pass_at_k;
    ++bins[std::min<size_t>(9, static_cast<size_t>(v * 10))].count;
    never += row.stats.passed == 0;
    always += row.stats.passed == row.stats.valid;
  }
  return Section("task-histogram", fmt::format("Tasks by pass@{}", r.overall_ks[0].k),
                 fmt::format("Every task, by its pass@{} (bins of 0.1; the last holds 1). {} task(s) never passed, {} "
                             "passed every valid trial.",
                             r.overall_ks[0].k, Count(never), Count(always)),
                 svg::Histogram("chart-task-histogram", fmt::format("pass@{} of a task", r.overall_ks[0].k), bins));
}

std::string OutcomesOf(const GroupedReport& report, const std::vector<const GroupReport*>& groups) {
  std::vector<svg::StackRow> rows;
  const Report& all = report.all.report;
  if (report.by.empty()) {
    rows.push_back(OutcomeRow("all tasks", all.overall));
    // The tasks with the most attempts that neither passed nor failed, then the lowest pass@1.
    auto others = [](const TaskRow* row) {
      int64_t n = row->stats.valid + row->stats.excluded;
      for (const char* plain : {"passed", "failed"}) {
        if (auto it = row->stats.outcomes.find(plain); it != row->stats.outcomes.end()) n -= it->second;
      }
      return n;
    };
    std::vector<const TaskRow*> tasks;
    for (const auto& row : all.tasks) tasks.push_back(&row);
    std::stable_sort(tasks.begin(), tasks.end(), [&](const TaskRow* x, const TaskRow* y) {
      return others(x) != others(y) ? others(x) > others(y) : x->ks[0].pass_at_k < y->ks[0].pass_at_k;
    });
    if (tasks.size() > 1) {
      for (size_t i = 0; i < tasks.size() && i < 2 * kTasksPerSide; ++i) rows.push_back(OutcomeRow(tasks[i]->stats.task_id, tasks[i]->stats));
    }
    const std::string scope = tasks.size() > 2 * kTasksPerSide
                                  ? fmt::format("all tasks, then of {} tasks: those with the most attempts that neither "
                                                "passed nor failed first, then the lowest pass@1,", 2 * kTasksPerSide)
                                  : "all tasks, then of each task,";
    return OutcomesSection(rows, scope);
  }
  TaskStats rest;
  size_t others = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i < kGroupsDrawn) {
      rows.push_back(OutcomeRow(groups[i]->name, groups[i]->report.overall));
      continue;
    }
    ++others;
    for (const auto& [name, n] : groups[i]->report.overall.outcomes) rest.outcomes[name] += n;
    rest.valid += groups[i]->report.overall.valid;
    rest.excluded += groups[i]->report.overall.excluded;
  }
  if (others > 0) rows.push_back(OutcomeRow(fmt::format("{} other groups", others), rest));
  return OutcomesSection(rows, "each " + report.by);
}

std::string GroupTable(const GroupedReport& report, const std::vector<const GroupReport*>& groups) {
  const Report& all = report.all.report;
  std::string t = "<h3>By " + svg::Escape(report.by) + "</h3><div class=\"scroll\"><table>" +
                  StatsHeader(report.by, all.overall_ks, true, true);
  for (size_t i = 0; i < groups.size() && i < kGroupRows; ++i) {
    const GroupReport* g = groups[i];
    t += StatsRow(g->name, g->report.overall, g->report.overall_ks, g->report.overall_mean_reward, g->report.tasks.size(),
                  &g->intervals);
  }
  if (groups.size() > kGroupRows) {
    t += GapRow(fmt::format("{} more groups in the JSON output", groups.size() - kGroupRows), 6 + 3 * all.overall_ks.size());
  }
  t += StatsRow(fmt::format("all ({} groups pooled)", groups.size()), all.overall, all.overall_ks, all.overall_mean_reward,
                all.tasks.size(), &report.all.intervals, true);
  return t + "</table></div>\n";
}

std::string Tables(const GroupedReport& report, const std::vector<const GroupReport*>& groups) {
  std::string tables;
  if (!report.by.empty()) tables += GroupTable(report, groups);
  tables += BehaviourTable(groups);
  if (report.by.empty()) return tables + TaskTable("Per task", report.all.report);
  if (const auto trend = report.Trend(); !trend.empty()) {
    return tables + TaskTable(report.by + " = " + trend.back()->name + " (the latest)", trend.back()->report) +
           Note("The JSON output has every version's tasks.");
  }
  constexpr size_t kTaskTables = 4;
  for (size_t i = 0; i < groups.size() && i < kTaskTables; ++i) {
    tables += TaskTable(report.by + " = " + groups[i]->name, groups[i]->report);
  }
  if (groups.size() > kTaskTables) {
    tables += Note(fmt::format("Per-task tables of the first {} groups; the JSON output has every group's tasks.", kTaskTables));
  }
  return tables;
}

}  // namespace

std::string ReportPage(const GroupedReport& report, const Provenance& made) {
  std::vector<const GroupReport*> groups;
  if (report.by.empty()) groups.push_back(&report.all);
  for (const auto& g : report.groups) groups.push_back(&g);
  const std::vector<const GroupReport*> trend = report.Trend();
  const std::string title = report.by.empty() ? "Pass rates"
                            : trend.empty()   ? "Pass rates by " + report.by
                                              : "Learning curve by " + report.by;
  std::string page = Head("forge-verify report — " + title) +
                     Header("forge-verify report", title, "records: " + Listed(made.inputs, 3));
  page += report.by.empty() ? PlainCards(report) : GroupCards(report, trend);
  if (!trend.empty()) page += LearningSection(report, trend);
  page += CurvesSection(groups, report.by.empty() ? "tasks" : "each group's tasks", !trend.empty());
  if (report.by.empty()) page += TaskHistogramSection(report.all.report);
  // A trend has its rates, turns and tokens beside the curve already.
  page += OutcomesOf(report, groups) + BehaviourSections(groups, trend.empty());
  page += Section("tables", "Tables", "The numbers behind the charts.", Tables(report, groups));
  auto facts = CountingFacts({&report.all.report});
  facts.push_back({"intervals", IntervalsFact(report)});
  return page + Footer(made, facts);
}

}  // namespace forge::verify
