#include "verify/html.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "verify/svg.h"

namespace forge::verify {

namespace {

using svg::Escape;

constexpr const char* kStyle = R"(
:root{--ink:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--card:#fff;--accent:#0b6bcb}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Liberation Sans",Arial,sans-serif}
main{max-width:1000px;margin:0 auto;padding:32px 24px 48px}
header .eyebrow{margin:0;color:var(--accent);font-weight:600;letter-spacing:.06em;text-transform:uppercase;font-size:12px}
h1{margin:4px 0 6px;font-size:28px;line-height:1.2}
h2{margin:0 0 4px;font-size:18px}
.meta{margin:0;color:var(--muted);font-size:13px;word-break:break-all}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(170px,1fr));gap:12px;margin:22px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 16px}
.card .label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .value{font-size:24px;font-weight:650;font-variant-numeric:tabular-nums}
.card .sub{color:var(--muted);font-size:12px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:18px 20px;margin:16px 0}
.caption{margin:0 0 12px;color:var(--muted);font-size:13px}
.note{color:var(--muted);font-style:italic}
svg.chart{display:block;width:100%;height:auto;font-family:inherit;font-size:12px}
svg .axis-label{font-size:12px;fill:#52606d}
svg .panel-title{font-size:13px;font-weight:600}
svg .in-bar{font-size:11px;font-weight:600}
svg .mono,td.num,.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"Liberation Mono",monospace}
.scroll{overflow-x:auto;margin:8px 0 18px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.03em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fafbfc}
tr.total td{font-weight:600;border-top:2px solid var(--line)}
.pos{color:#1e7b4f}.neg{color:#b83b2e}
h3{font-size:14px;margin:18px 0 4px}
footer{color:var(--muted);font-size:12px;margin-top:24px}
footer dt{font-weight:600;color:var(--ink)}footer dd{margin:0 0 6px}
)";

std::string Color(size_t i) {
  static constexpr std::array<const char*, 8> kPalette = {"#0b6bcb", "#e08a00", "#1b9e77", "#c2185b",
                                                          "#5e35b1", "#00838f", "#8d6e63", "#546e7a"};
  return kPalette[i % kPalette.size()];
}

std::string OutcomeColor(const std::string& outcome) {
  static const std::map<std::string, std::string> kColors = {
      {"passed", "#2f9e6b"},          {"failed", "#d6604d"},       {"agent_timeout", "#f4a259"},
      {"agent_error", "#e07b39"},     {"verifier_error", "#8e7cc3"}, {"verifier_timeout", "#b4a7d6"},
      {"infra_error", "#9aa5b1"},     {"cancelled", "#cbd2d9"},    {"tampered", "#7b1fa2"}};
  auto it = kColors.find(outcome);
  return it != kColors.end() ? it->second : "#52606d";
}

std::string KindColor(ToolKind kind) {
  static constexpr std::array<const char*, kToolKinds> kColors = {"#52606d", "#4c9be8", "#f28e2b", "#59a14f", "#b07aa1"};
  return kColors[static_cast<size_t>(kind)];
}

std::string PercentOrNa(std::optional<double> v) { return v ? fmt::format("{:.0f}%", *v * 100) : "n/a"; }
std::string Fixed(double v, int digits = 4) { return fmt::format("{:.{}f}", v, digits); }

std::string Head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>" + Escape(title) + "</title><style>" + kStyle + "</style></head><body><main>\n";
}

std::string Header(const std::string& eyebrow, const std::string& title, const PageSource& source) {
  std::string inputs, stores;
  for (const auto& i : source.inputs) inputs += (inputs.empty() ? "" : ", ") + i;
  for (const auto& s : source.stores) stores += (stores.empty() ? "" : ", ") + s;
  return fmt::format("<header><p class=\"eyebrow\">{}</p><h1>{}</h1><p class=\"meta\">records: {}{}</p></header>\n",
                     Escape(eyebrow), Escape(title), Escape(inputs), stores.empty() ? "" : " · calls: " + Escape(stores));
}

std::string Card(const std::string& label, const std::string& value, const std::string& sub) {
  return fmt::format("<div class=\"card\"><div class=\"label\">{}</div><div class=\"value\">{}</div>"
                     "<div class=\"sub\">{}</div></div>",
                     Escape(label), Escape(value), Escape(sub));
}

std::string Section(const std::string& id, const std::string& title, const std::string& caption,
                    const std::string& body) {
  return fmt::format("<section id=\"{}\"><h2>{}</h2><p class=\"caption\">{}</p>\n{}\n</section>\n", id,
                     Escape(title), Escape(caption), body);
}

std::string CurvesSection(const std::vector<const GroupReport*>& groups) {
  std::vector<svg::Series> series;
  for (size_t i = 0; i < groups.size(); ++i) {
    svg::Series at{groups[i]->name + " pass@k", Color(i), false, {}};
    svg::Series hat{groups[i]->name + " pass^k", Color(i), true, {}};
    for (const auto& v : groups[i]->curve) {
      at.points.emplace_back(static_cast<double>(v.k), v.pass_at_k);
      hat.points.emplace_back(static_cast<double>(v.k), v.pass_hat_k);
    }
    series.push_back(std::move(at));
    series.push_back(std::move(hat));
  }
  return Section("pass-curves", "pass@k and pass^k",
                 "Mean over tasks for every k up to the fewest valid trials of a task. Solid: pass@k (at least one "
                 "of k attempts passes); dashed: pass^k (all k pass).",
                 svg::LineChart("chart-pass-curves", "k (attempts)", "share of tasks", series));
}

svg::StackRow OutcomeRow(const std::string& label, const TaskStats& stats) {
  static const std::vector<std::string> kOrder = {"passed", "failed", "agent_timeout", "agent_error", "tampered",
                                                  "verifier_error", "verifier_timeout", "infra_error", "cancelled"};
  svg::StackRow row{label, {}, fmt::format("n = {}", stats.valid + stats.excluded)};
  for (const auto& name : kOrder) {
    auto it = stats.outcomes.find(name);
    if (it != stats.outcomes.end()) row.segments.push_back({name, OutcomeColor(name), double(it->second)});
  }
  for (const auto& [name, count] : stats.outcomes) {  // outcomes this page does not know, as they come
    if (std::find(kOrder.begin(), kOrder.end(), name) == kOrder.end()) {
      row.segments.push_back({name, OutcomeColor(name), double(count)});
    }
  }
  return row;
}

std::string OutcomesSection(const std::vector<svg::StackRow>& rows) {
  return Section("outcomes", "Outcomes", "Every attempt by verdict outcome; hover a segment for its count.",
                 svg::StackedBars("chart-outcomes", rows));
}

std::string NoCalls() {
  return "<p class=\"note\">No recorded calls were read: give --store with the forge store(s) holding the "
         "rollouts' calls.</p>";
}

std::string ToolUseSection(const std::vector<const GroupReport*>& groups) {
  std::vector<svg::StackRow> rows;
  for (const auto* g : groups) {
    if (!g->behaviour) return Section("tool-use", "Tool use", "", NoCalls());
    svg::StackRow row{g->name, {}, fmt::format("{} calls", g->behaviour->tools.tool_calls)};
    for (size_t i = 0; i < kToolKinds; ++i) {
      const auto kind = static_cast<ToolKind>(i);
      row.segments.push_back({std::string(ToolKindName(kind)), KindColor(kind), double(g->behaviour->calls_by_kind[i])});
    }
    rows.push_back(std::move(row));
  }
  return Section("tool-use", "Tool use",
                 "Share of tool calls by kind: the generic shell against the harness's dedicated read, edit and "
                 "search tools (each harness's own tool names; see forge-verify(1)).",
                 svg::StackedBars("chart-tool-use", rows));
}

std::string RatesSection(const std::vector<const GroupReport*>& groups) {
  svg::BarPanel verify{"Self-verification: a check after the last edit", 1, {}};
  svg::BarPanel recover{"Error recovery: passed after a failed tool call", 1, {}};
  for (size_t i = 0; i < groups.size(); ++i) {
    if (!groups[i]->behaviour) return Section("rates", "Self-verification and error recovery", "", NoCalls());
    const BehaviourSummary& b = *groups[i]->behaviour;
    verify.bars.push_back({groups[i]->name, Color(i), b.SelfVerificationRate(),
                           b.edited > 0 ? fmt::format("{} · {} of {}", PercentOrNa(b.SelfVerificationRate()), b.self_verified, b.edited)
                                        : "no trial edited"});
    recover.bars.push_back({groups[i]->name, Color(i), b.RecoveryRate(),
                            b.tools.rollouts_with_failures > 0
                                ? fmt::format("{} · {} of {}", PercentOrNa(b.RecoveryRate()), b.tools.recovered,
                                              b.tools.rollouts_with_failures)
                                : "no failed tool call"});
  }
  return Section("rates", "Self-verification and error recovery",
                 "Among valid trials that edited a file, the share that ran a check (tests, a build, reading back "
                 "what was written) after the last edit; among valid trials with a failed tool call, the share that "
                 "still passed.",
                 svg::BarPanels("chart-rates", {verify, recover}));
}

std::string EffortSection(const std::vector<const GroupReport*>& groups) {
  svg::BarPanel turns{"Turns per trial", 0, {}}, in{"Prompt tokens per trial", 0, {}},
      out{"Completion tokens per trial", 0, {}};
  for (size_t i = 0; i < groups.size(); ++i) {
    if (!groups[i]->behaviour) return Section("effort", "Turns and tokens", "", NoCalls());
    const BehaviourSummary& b = *groups[i]->behaviour;
    for (auto [panel, total, digits] : {std::tuple{&turns, b.turns, 1}, std::tuple{&in, b.prompt_tokens, 0},
                                        std::tuple{&out, b.completion_tokens, 0}}) {
      const double v = b.PerTrial(total);
      panel->max = std::max(panel->max, v * 1.15);
      panel->bars.push_back({groups[i]->name, Color(i), v, fmt::format("{:.{}f}", v, digits)});
    }
  }
  return Section("effort", "Turns and tokens",
                 "Per valid trial: model calls (side calls and failed calls left out), prompt tokens summed over "
                 "the calls, completion tokens.",
                 svg::BarPanels("chart-effort", {turns, in, out}));
}

std::string BehaviourSections(const std::vector<const GroupReport*>& groups) {
  return ToolUseSection(groups) + RatesSection(groups) + EffortSection(groups);
}

std::string StatsHeader(const std::string& first, const std::vector<KValues>& ks, bool tasks_column) {
  std::string h = "<tr><th>" + Escape(first) + "</th>" + (tasks_column ? "<th class=\"num\">tasks</th>" : "") +
                  "<th class=\"num\">n</th><th class=\"num\">passed</th><th class=\"num\">excluded</th>";
  for (const auto& v : ks) h += fmt::format("<th class=\"num\">pass@{0}</th><th class=\"num\">pass^{0}</th>", v.k);
  return h + "<th class=\"num\">reward</th><th>outcomes</th></tr>\n";
}

std::string StatsRow(const std::string& name, const TaskStats& s, const std::vector<KValues>& ks, double reward,
                     std::optional<size_t> tasks, bool total = false) {
  std::string r = std::string(total ? "<tr class=\"total\">" : "<tr>") + "<td>" + Escape(name) + "</td>";
  if (tasks) r += fmt::format("<td class=\"num\">{}</td>", *tasks);
  r += fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>", s.valid, s.passed, s.excluded);
  for (const auto& v : ks) r += "<td class=\"num\">" + Fixed(v.pass_at_k) + "</td><td class=\"num\">" + Fixed(v.pass_hat_k) + "</td>";
  std::string outcomes;
  for (const auto& [o, n] : s.outcomes) outcomes += fmt::format("{}{}={}", outcomes.empty() ? "" : " ", o, n);
  return r + "<td class=\"num\">" + Fixed(reward) + "</td><td>" + Escape(outcomes) + "</td></tr>\n";
}

std::string TaskTable(const std::string& title, const Report& report) {
  std::string t = "<h3>" + Escape(title) + "</h3><div class=\"scroll\"><table>" + StatsHeader("task", report.overall_ks, false);
  for (const auto& row : report.tasks) t += StatsRow(row.stats.task_id, row.stats, row.ks, row.stats.MeanReward(), std::nullopt);
  t += StatsRow(fmt::format("overall ({} tasks)", report.tasks.size()), report.overall, report.overall_ks,
                report.overall_mean_reward, std::nullopt, true);
  return t + "</table></div>\n";
}

std::string BehaviourHtmlTable(const std::vector<const GroupReport*>& groups) {
  if (groups.empty() || !groups[0]->behaviour) return "";
  std::string t = "<h3>Behaviour (valid trials)</h3><div class=\"scroll\"><table><tr><th>group</th><th class=\"num\">trials</th>"
                  "<th class=\"num\">tool calls</th>";
  for (size_t i = 0; i < kToolKinds; ++i) t += "<th class=\"num\">" + std::string(ToolKindName(static_cast<ToolKind>(i))) + "</th>";
  t += "<th class=\"num\">self-verify</th><th class=\"num\">recovery</th><th class=\"num\">turns</th>"
       "<th class=\"num\">prompt tok</th><th class=\"num\">completion tok</th><th>tools by name</th></tr>\n";
  for (const auto* g : groups) {
    const BehaviourSummary& b = *g->behaviour;
    t += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>", Escape(g->name), b.trials(),
                     b.tools.tool_calls);
    for (size_t i = 0; i < kToolKinds; ++i) t += "<td class=\"num\">" + PercentOrNa(b.KindShare(static_cast<ToolKind>(i))) + "</td>";
    std::string names;
    for (const auto& [name, n] : b.tools.calls_by_tool) names += fmt::format("{}{} {}", names.empty() ? "" : ", ", name, n);
    t += fmt::format("<td class=\"num\">{} ({}/{})</td><td class=\"num\">{} ({}/{})</td><td class=\"num\">{:.1f}</td>"
                     "<td class=\"num\">{:.0f}</td><td class=\"num\">{:.0f}</td><td>{}</td></tr>\n",
                     PercentOrNa(b.SelfVerificationRate()), b.self_verified, b.edited, PercentOrNa(b.RecoveryRate()),
                     b.tools.recovered, b.tools.rollouts_with_failures, b.PerTrial(b.turns), b.PerTrial(b.prompt_tokens),
                     b.PerTrial(b.completion_tokens), Escape(names));
  }
  return t + "</table></div>\n";
}

std::string Footer() {
  return "<footer><dl>"
         "<dt>pass@k, pass^k</dt><dd>Unbiased estimates from a task's n valid trials with c passes: 1 − C(n−c,k)/C(n,k) "
         "and C(c,k)/C(n,k); overall values are means over tasks. infra_error and cancelled attempts are excluded.</dd>"
         "<dt>Behaviour</dt><dd>From the calls forge-proxy recorded, over valid trials; the definitions are in "
         "forge-verify(1).</dd></dl><p>Made by forge-verify.</p></footer></main></body></html>\n";
}

}  // namespace

std::string ReportPage(const GroupedReport& report, const PageSource& source) {
  std::vector<const GroupReport*> groups;
  if (report.by.empty()) groups.push_back(&report.all);
  for (const auto& g : report.groups) groups.push_back(&g);
  const Report& all = report.all.report;
  const std::string title = report.by.empty() ? "Pass rates" : "Pass rates by " + report.by;
  std::string page = Head("forge-verify report — " + title) + Header("forge-verify report", title, source);
  page += "<div class=\"cards\">" + Card("tasks", std::to_string(all.tasks.size()), "") +
          Card("valid trials", std::to_string(all.overall.valid), fmt::format("{} excluded", all.overall.excluded));
  for (const auto& v : all.overall_ks) {
    page += Card(fmt::format("pass@{}", v.k), Fixed(v.pass_at_k, 3), fmt::format("pass^{} {:.3f}", v.k, v.pass_hat_k));
  }
  if (report.all.behaviour) {
    page += Card("self-verification", PercentOrNa(report.all.behaviour->SelfVerificationRate()), "of trials that edited");
  }
  page += "</div>\n" + CurvesSection(groups);
  std::vector<svg::StackRow> outcome_rows;
  if (report.by.empty()) {
    for (const auto& row : all.tasks) outcome_rows.push_back(OutcomeRow(row.stats.task_id, row.stats));
    outcome_rows.push_back(OutcomeRow("all tasks", all.overall));
  } else {
    for (const auto* g : groups) outcome_rows.push_back(OutcomeRow(g->name, g->report.overall));
  }
  page += OutcomesSection(outcome_rows) + BehaviourSections(groups);
  std::string tables;
  if (!report.by.empty()) {
    tables += "<h3>By " + Escape(report.by) + "</h3><div class=\"scroll\"><table>" + StatsHeader(report.by, all.overall_ks, true);
    for (const auto* g : groups) {
      tables += StatsRow(g->name, g->report.overall, g->report.overall_ks, g->report.overall_mean_reward, g->report.tasks.size());
    }
    tables += StatsRow("all", all.overall, all.overall_ks, all.overall_mean_reward, all.tasks.size(), true) + "</table></div>\n";
  }
  tables += BehaviourHtmlTable(groups);
  for (const auto* g : groups) tables += TaskTable(report.by.empty() ? "Per task" : report.by + " = " + g->name, g->report);
  return page + Section("tables", "Tables", "The numbers behind the charts.", tables) + Footer();
}

namespace {

// pass@k at the first k; pass^k at the last (at k = 1 both are the plain success rate).
std::string DifferenceSection(const Comparison& c, bool hat) {
  const size_t at = hat ? c.overall.size() - 1 : 0;
  const KDiff& first = c.overall[at];
  std::vector<svg::Estimate> rows;
  for (const auto& t : c.tasks) {
    const Interval& v = hat ? t.diffs[at].pass_hat_k : t.diffs[at].pass_at_k;
    rows.push_back({t.task_id + (t.flip.empty() ? "" : " (" + t.flip + ")"), v.estimate, v.low, v.high, IntervalText(v)});
  }
  const Interval& o = hat ? first.pass_hat_k : first.pass_at_k;
  const std::string metric = fmt::format("{}{}", hat ? "pass^" : "pass@", first.k);
  svg::Estimate overall{fmt::format("overall ({} tasks)", c.tasks.size()), o.estimate, o.low, o.high, IntervalText(o)};
  return Section(hat ? "differences-hat" : "differences", "Difference in " + metric + ", B − A",
                 fmt::format("Per task: B − A with a {:.0f}% interval from resampling each run's attempts. Overall: the "
                             "mean over tasks with a paired bootstrap interval over tasks ({} resamples, seed {}). Green: "
                             "the interval is above zero; red: below.",
                             c.settings.confidence * 100, c.settings.resamples, c.settings.seed),
                 svg::ForestPlot(hat ? "chart-differences-hat" : "chart-differences", metric + " difference (B − A)",
                                 rows, overall));
}

std::string CompareTable(const Comparison& c) {
  std::string t = "<h3>Per task, B − A</h3><div class=\"scroll\"><table><tr><th>task</th><th class=\"num\">A c/n</th><th class=\"num\">B c/n</th>";
  for (int64_t k : c.settings.ks) t += fmt::format("<th class=\"num\">pass@{0} A → B</th><th class=\"num\">Δ pass@{0} [interval]</th><th class=\"num\">Δ pass^{0} [interval]</th>", k);
  t += "<th>flip</th></tr>\n";
  auto cls = [](const Interval& v) { return v.low > 0 ? " pos" : v.high < 0 ? " neg" : ""; };
  for (const auto& task : c.tasks) {
    t += fmt::format("<tr><td>{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}/{}</td>", Escape(task.task_id),
                     task.a.passed, task.a.valid, task.b.passed, task.b.valid);
    for (size_t i = 0; i < task.diffs.size(); ++i) {
      t += fmt::format("<td class=\"num\">{:.3f} → {:.3f}</td><td class=\"num{}\">{}</td><td class=\"num{}\">{}</td>",
                       task.ka[i].pass_at_k, task.kb[i].pass_at_k, cls(task.diffs[i].pass_at_k), IntervalText(task.diffs[i].pass_at_k),
                       cls(task.diffs[i].pass_hat_k), IntervalText(task.diffs[i].pass_hat_k));
    }
    t += "<td>" + Escape(task.flip) + "</td></tr>\n";
  }
  t += "<tr class=\"total\"><td>overall (mean over tasks)</td><td></td><td></td>";
  for (size_t i = 0; i < c.overall.size(); ++i) {
    t += fmt::format("<td class=\"num\">{:.3f} → {:.3f}</td><td class=\"num{}\">{}</td><td class=\"num{}\">{}</td>",
                     c.a.report.overall_ks[i].pass_at_k, c.b.report.overall_ks[i].pass_at_k, cls(c.overall[i].pass_at_k),
                     IntervalText(c.overall[i].pass_at_k), cls(c.overall[i].pass_hat_k), IntervalText(c.overall[i].pass_hat_k));
  }
  t += "<td></td></tr></table></div>\n";
  auto list = [](const std::vector<std::string>& ids) {
    std::string s;
    for (const auto& id : ids) s += (s.empty() ? "" : ", ") + Escape(id);
    return s.empty() ? std::string("none") : s;
  };
  std::vector<std::string> gained, lost;
  for (const auto& task : c.tasks) {
    if (task.flip == "gained") gained.push_back(task.task_id);
    if (task.flip == "lost") lost.push_back(task.task_id);
  }
  t += "<p><b>Gained</b> (A never passed, B did): " + list(gained) + "<br><b>Lost</b> (A passed, B never did): " +
       list(lost) + "</p>";
  if (!c.only_a.empty() || !c.only_b.empty()) {
    t += "<p class=\"note\">Not compared — only in A: " + list(c.only_a) + "; only in B: " + list(c.only_b) + "</p>";
  }
  return t;
}

}  // namespace

std::string ComparePage(const Comparison& c, const PageSource& source) {
  std::vector<const GroupReport*> groups = {&c.a, &c.b};
  auto base = [](const std::string& path) { return path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1); };
  const std::string title = "A: " + base(c.label_a) + "  ·  B: " + base(c.label_b);  // whole paths in the meta line
  std::string page = Head("forge-verify compare — " + title) + Header("forge-verify compare", title, source);
  size_t gained = 0, lost = 0;
  for (const auto& t : c.tasks) {
    gained += t.flip == "gained";
    lost += t.flip == "lost";
  }
  page += "<div class=\"cards\">" + Card("tasks in both", std::to_string(c.tasks.size()),
                                         fmt::format("{} only in A, {} only in B", c.only_a.size(), c.only_b.size()));
  for (size_t i = 0; i < c.overall.size() && i < 2; ++i) {
    const Interval& v = c.overall[i].pass_at_k;
    page += Card(fmt::format("Δ pass@{}", c.overall[i].k), SignedText(v.estimate),
                 fmt::format("{:.0f}% interval [{}, {}]", c.settings.confidence * 100, SignedText(v.low), SignedText(v.high)));
  }
  page += Card("flipped", fmt::format("+{} / −{}", gained, lost), "gained / lost tasks") + "</div>\n";
  page += DifferenceSection(c, false) + DifferenceSection(c, true) + CurvesSection(groups);
  page += OutcomesSection({OutcomeRow("A", c.a.report.overall), OutcomeRow("B", c.b.report.overall)});
  page += BehaviourSections(groups);
  std::string tables = CompareTable(c) + BehaviourHtmlTable(groups) + TaskTable("A: " + c.label_a, c.a.report) +
                       TaskTable("B: " + c.label_b, c.b.report);
  return page + Section("tables", "Tables", "The numbers behind the charts.", tables) + Footer();
}

}  // namespace forge::verify
