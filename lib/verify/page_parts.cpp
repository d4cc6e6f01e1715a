#include "verify/page_parts.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace forge::verify::page {

using svg::Escape;

namespace {

constexpr const char* kStyle = R"(
:root{--ink:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--card:#fff;--accent:#0b6bcb}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Liberation Sans",Arial,sans-serif}
main{max-width:1000px;margin:0 auto;padding:32px 24px 48px}
header .eyebrow{margin:0;color:var(--accent);font-weight:600;letter-spacing:.06em;text-transform:uppercase;font-size:12px}
h1{margin:4px 0 6px;font-size:28px;line-height:1.2}
h2{margin:0 0 4px;font-size:18px}
.meta{margin:0;color:var(--muted);font-size:13px;word-break:break-all}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(128px,1fr));gap:10px;margin:22px 0 8px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px 14px}
.card .label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .value{font-size:22px;font-weight:650;font-variant-numeric:tabular-nums;white-space:nowrap}
.card .sub{color:var(--muted);font-size:12px}
.card.pos .value{color:#1e7b4f}.card.neg .value{color:#b83b2e}
.lede{margin:0 0 16px;color:var(--muted);font-size:13px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:18px 20px;margin:16px 0}
.caption{margin:0 0 12px;color:var(--muted);font-size:13px}
.note{color:var(--muted);font-style:italic;font-size:13px}
svg.chart{display:block;width:100%;height:auto;font-family:inherit;font-size:12px}
svg .axis-label{font-size:12px;fill:#52606d}
svg .panel-title{font-size:13px;font-weight:600}
svg .in-bar{font-size:11px;font-weight:600}
svg .mono,td.num,.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"Liberation Mono",monospace}
.scroll{overflow-x:auto;margin:8px 0 18px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
td:first-child{white-space:nowrap}
th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.03em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fafbfc}
tr.total td{font-weight:600;border-top:2px solid var(--line)}
tr.gap td{color:var(--muted);font-style:italic;text-align:center}
.pos{color:#1e7b4f}.neg{color:#b83b2e}
h3{font-size:14px;margin:18px 0 4px}
footer{color:var(--muted);font-size:12px;margin-top:24px;border-top:1px solid var(--line);padding-top:12px}
footer dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}
footer dt{font-weight:600;color:var(--ink)}footer dd{margin:0;word-break:break-word}
)";

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

std::string NoCalls() {
  return Note("No recorded calls were read: give --store with the forge store(s) holding the rollouts' calls.");
}

// The groups a chart draws, and a line saying how many it left out: the
// first ones, or for ordered groups some spread from the first to the last.
std::vector<const GroupReport*> Drawn(const std::vector<const GroupReport*>& groups, std::string* left_out,
                                      bool ordered = false) {
  if (groups.size() <= kGroupsDrawn) return groups;
  std::vector<const GroupReport*> drawn;
  for (size_t i = 0; i < kGroupsDrawn; ++i) {
    drawn.push_back(groups[ordered ? i * (groups.size() - 1) / (kGroupsDrawn - 1) : i]);
  }
  *left_out = Note(fmt::format("{} {} of {} groups are drawn; the tables and the JSON output have them all.",
                               ordered ? "An even spread of" : "The first", kGroupsDrawn, groups.size()));
  return drawn;
}

}  // namespace

std::string Color(size_t i) {
  static constexpr std::array<const char*, 8> kPalette = {"#0b6bcb", "#e08a00", "#1b9e77", "#c2185b",
                                                          "#5e35b1", "#00838f", "#8d6e63", "#546e7a"};
  return kPalette[i % kPalette.size()];
}

std::string SequentialColor(size_t i, size_t n) {
  // From #9ecae1 to #08306b (ColorBrewer's Blues, light to dark).
  const double t = n > 1 ? static_cast<double>(i) / static_cast<double>(n - 1) : 1.0;
  auto mix = [t](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * t)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0x9e, 0x08), mix(0xca, 0x30), mix(0xe1, 0x6b));
}

std::string Listed(const std::vector<std::string>& items, size_t at_most) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < at_most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > at_most) out += fmt::format(" and {} more", items.size() - at_most);
  return out.empty() ? std::string("none") : out;
}

std::string Fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }
std::string PercentOrNa(std::optional<double> v) { return v ? fmt::format("{:.0f}%", *v * 100) : "n/a"; }

std::string Count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string Head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>" + Escape(title) + "</title><style>" + kStyle + "</style></head><body><main>\n";
}

std::string Header(const std::string& eyebrow, const std::string& title, const std::string& subtitle) {
  return fmt::format("<header><p class=\"eyebrow\">{}</p><h1>{}</h1><p class=\"meta\">{}</p></header>\n",
                     Escape(eyebrow), Escape(title), Escape(subtitle));
}

std::string Card(const std::string& label, const std::string& value, const std::string& sub, const std::string& cls) {
  return fmt::format("<div class=\"card{}\"><div class=\"label\">{}</div><div class=\"value\">{}</div>"
                     "<div class=\"sub\">{}</div></div>",
                     cls.empty() ? "" : " " + cls, Escape(label), Escape(value), Escape(sub));
}

std::string Section(const std::string& id, const std::string& title, const std::string& caption,
                    const std::string& body) {
  return fmt::format("<section id=\"{}\"><h2>{}</h2><p class=\"caption\">{}</p>\n{}\n</section>\n", id,
                     Escape(title), Escape(caption), body);
}

std::string Note(const std::string& text) { return "<p class=\"note\">" + Escape(text) + "</p>"; }

std::string CurvesSection(const std::vector<const GroupReport*>& groups, const std::string& scope, bool ordered) {
  std::string left_out;
  const auto drawn = Drawn(groups, &left_out, ordered);
  std::vector<svg::Series> series;
  std::vector<svg::LegendEntry> legend;
  for (size_t i = 0; i < drawn.size(); ++i) {
    const std::string color = ordered ? SequentialColor(i, drawn.size()) : Color(i);
    svg::Series at{drawn[i]->name + " pass@k", color, false, {}};
    svg::Series hat{drawn[i]->name + " pass^k", color, true, {}};
    for (const auto& v : drawn[i]->curve) {
      at.points.emplace_back(static_cast<double>(v.k), v.pass_at_k);
      hat.points.emplace_back(static_cast<double>(v.k), v.pass_hat_k);
    }
    series.push_back(std::move(at));
    series.push_back(std::move(hat));
    legend.push_back({drawn[i]->name, color, false});
  }
  legend.push_back({"pass@k", "#52606d", false});
  legend.push_back({"pass^k", "#52606d", true});
  return Section("pass-curves", "pass@k and pass^k",
                 "Mean over " + scope + " for every k up to the fewest valid trials of a task. Solid: pass@k (at "
                 "least one of k attempts passes); dashed: pass^k (all k pass).",
                 svg::LineChart("chart-pass-curves", "k (attempts)", "share of tasks", series, legend) + left_out);
}

svg::StackRow OutcomeRow(const std::string& label, const TaskStats& stats) {
  static const std::vector<std::string> kOrder = {"passed", "failed", "agent_timeout", "agent_error", "tampered",
                                                  "verifier_error", "verifier_timeout", "infra_error", "cancelled"};
  svg::StackRow row{label, {}, fmt::format("n = {}", Count(stats.valid + stats.excluded))};
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

std::string OutcomesSection(const std::vector<svg::StackRow>& rows, const std::string& scope) {
  return Section("outcomes", "Outcomes",
                 "Every attempt of " + scope + " by verdict outcome, pooled over tasks and excluded ones included: "
                 "shares of attempts, not pass@1 (a mean over tasks of each task's share among its valid trials). "
                 "tampered counts as a failure; hover a segment for its count.",
                 svg::StackedBars("chart-outcomes", rows));
}

namespace {

std::string ToolUseSection(const std::vector<const GroupReport*>& groups) {
  std::vector<svg::StackRow> rows;
  for (const auto* g : groups) {
    if (!g->behaviour) return Section("tool-use", "Tool use", "", NoCalls());
    svg::StackRow row{g->name, {}, fmt::format("{} calls", Count(g->behaviour->tools.tool_calls))};
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
                 svg::BarPanels("chart-rates", {verify, recover}, groups.size() <= 4));
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
                 svg::BarPanels("chart-effort", {turns, in, out}, groups.size() <= 4));
}

}  // namespace

std::string BehaviourSections(const std::vector<const GroupReport*>& groups, bool rates) {
  if (groups.empty() || !groups[0]->behaviour) {
    return Section("behaviour", "Tool use, self-verification, turns and tokens", "", NoCalls());
  }
  std::string left_out;
  const auto drawn = Drawn(groups, &left_out);
  return ToolUseSection(drawn) + (rates ? RatesSection(drawn) + EffortSection(drawn) : "") + left_out;
}

std::string BehaviourTable(const std::vector<const GroupReport*>& groups) {
  if (groups.empty() || !groups[0]->behaviour) return "";
  std::string t = "<h3>Behaviour (valid trials)</h3><div class=\"scroll\"><table><tr><th>group</th><th class=\"num\">trials</th>"
                  "<th class=\"num\">tool calls</th>";
  for (size_t i = 0; i < kToolKinds; ++i) t += "<th class=\"num\">" + std::string(ToolKindName(static_cast<ToolKind>(i))) + "</th>";
  t += "<th class=\"num\">self-verify</th><th class=\"num\">recovery</th><th class=\"num\">turns</th>"
       "<th class=\"num\">prompt tok</th><th class=\"num\">completion tok</th><th>tools by name</th></tr>\n";
  for (size_t r = 0; r < groups.size() && r < kGroupRows; ++r) {
    const GroupReport* g = groups[r];
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
  if (groups.size() > kGroupRows) {
    t += GapRow(fmt::format("{} more groups in the JSON output", groups.size() - kGroupRows), 14);
  }
  return t + "</table></div>\n";
}

std::vector<size_t> Ends(size_t n, size_t per_side) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (i < per_side || i + per_side >= n) out.push_back(i);
  }
  return out;
}

std::string StatsHeader(const std::string& first, const std::vector<KValues>& ks, bool tasks_column, bool intervals) {
  std::string h = "<tr><th>" + Escape(first) + "</th>" + (tasks_column ? "<th class=\"num\">tasks</th>" : "") +
                  "<th class=\"num\">n</th><th class=\"num\">passed</th><th class=\"num\">excluded</th>";
  for (const auto& v : ks) {
    h += fmt::format("<th class=\"num\">pass@{0}</th>{1}<th class=\"num\">pass^{0}</th>", v.k,
                     intervals ? "<th class=\"num\">[interval]</th>" : "");
  }
  return h + "<th class=\"num\">reward</th><th>outcomes</th></tr>\n";
}

std::string StatsRow(const std::string& name, const TaskStats& s, const std::vector<KValues>& ks, double reward,
                     std::optional<size_t> tasks, const std::vector<KIntervals>* intervals, bool total) {
  std::string r = std::string(total ? "<tr class=\"total\">" : "<tr>") + "<td>" + Escape(name) + "</td>";
  if (tasks) r += fmt::format("<td class=\"num\">{}</td>", Count(static_cast<int64_t>(*tasks)));
  r += fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>", Count(s.valid),
                   Count(s.passed), Count(s.excluded));
  for (size_t i = 0; i < ks.size(); ++i) {
    r += "<td class=\"num\">" + Fixed(ks[i].pass_at_k) + "</td>";
    if (intervals != nullptr) {
      r += "<td class=\"num\">" +
           (i < intervals->size() ? fmt::format("[{:.3f}, {:.3f}]", (*intervals)[i].pass_at_k.low, (*intervals)[i].pass_at_k.high)
                                  : std::string("—")) +
           "</td>";
    }
    r += "<td class=\"num\">" + Fixed(ks[i].pass_hat_k) + "</td>";
  }
  std::string outcomes;
  for (const auto& [o, n] : s.outcomes) outcomes += fmt::format("{}{}={}", outcomes.empty() ? "" : " ", o, n);
  return r + "<td class=\"num\">" + Fixed(reward) + "</td><td>" + Escape(outcomes) + "</td></tr>\n";
}

std::string GapRow(const std::string& text, size_t columns) {
  return fmt::format("<tr class=\"gap\"><td colspan=\"{}\">{}</td></tr>\n", columns, Escape(text));
}

std::string TaskTable(const std::string& title, const Report& report) {
  std::vector<const TaskRow*> rows;
  for (const auto& row : report.tasks) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const TaskRow* x, const TaskRow* y) { return x->ks[0].pass_at_k < y->ks[0].pass_at_k; });
  const std::vector<size_t> shown = Ends(rows.size(), kTasksPerSide);
  const size_t columns = 5 + 2 * report.overall_ks.size() + 2;
  std::string t = "<h3>" + Escape(title) + "</h3><div class=\"scroll\"><table>" + StatsHeader("task", report.overall_ks, false, false);
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i > 0 && shown[i] != shown[i - 1] + 1) {
      const double from = rows[shown[i - 1] + 1]->ks[0].pass_at_k, to = rows[shown[i] - 1]->ks[0].pass_at_k;
      t += GapRow(fmt::format("{} more tasks, pass@{} from {:.3f} to {:.3f} (the JSON output has every task)",
                              Count(static_cast<int64_t>(shown[i] - shown[i - 1] - 1)), report.overall_ks[0].k, from, to),
                  columns);
    }
    const TaskRow& row = *rows[shown[i]];
    t += StatsRow(row.stats.task_id, row.stats, row.ks, row.stats.MeanReward(), std::nullopt, nullptr);
  }
  t += StatsRow(fmt::format("overall ({} tasks)", Count(static_cast<int64_t>(report.tasks.size()))), report.overall,
                report.overall_ks, report.overall_mean_reward, std::nullopt, nullptr, true);
  return t + "</table></div>\n";
}

std::vector<std::pair<std::string, std::string>> CountingFacts(const std::vector<const Report*>& reports) {
  std::vector<std::pair<std::string, std::string>> facts;
  std::string thresholds;
  int64_t tampered = 0, unknown = 0, excluded = 0, folded = 0;
  for (const Report* r : reports) {
    const std::string t = ThresholdsText(*r);
    if (thresholds.find(t) == std::string::npos) thresholds += (thresholds.empty() ? "" : "; ") + t;
    tampered += r->overall.tampered;
    unknown += r->overall.unknown;
    excluded += r->overall.excluded;
    folded += r->duplicates_folded;
  }
  facts.push_back({"threshold", "a reward at or above it passes: " + thresholds});
  facts.push_back({"pass@k, pass^k",
                   "unbiased estimates from a task's n valid trials with c passes: 1 − C(n−c,k)/C(n,k) and C(c,k)/C(n,k); "
                   "overall values are means over tasks"});
  facts.push_back({"counted", fmt::format("infra_error and cancelled attempts are excluded ({} here); tampered attempts "
                                          "are failed trials with reward 0 ({} here); an outcome this forge does not "
                                          "know is a failed trial with reward 0 ({} here); {} duplicate verdict(s) folded "
                                          "(the last verdict of a rollout counts)",
                                          Count(excluded), Count(tampered), Count(unknown), Count(folded))});
  facts.push_back({"mean reward", "over valid trials, the verifier's reward of passed and failed trials; every other "
                                  "valid trial counts 0"});
  return facts;
}

std::string Footer(const Provenance& made, const std::vector<std::pair<std::string, std::string>>& facts) {
  std::string out = "<footer><dl>";
  for (const auto& [term, text] : facts) out += "<dt>" + Escape(term) + "</dt><dd>" + Escape(text) + "</dd>";
  out += "<dt>behaviour</dt><dd>From the calls forge-proxy recorded, over valid trials; the definitions are in "
         "forge-verify(1).</dd>";
  out += "<dt>made</dt><dd>" + Escape((made.made_at.empty() ? std::string("") : made.made_at + " by ") + "forge-verify " +
                                      FORGE_VERSION) + "</dd>";
  out += "<dt>records</dt><dd class=\"mono\">" + Escape(Listed(made.inputs, 20)) + "</dd>";
  out += "<dt>calls</dt><dd class=\"mono\">" + Escape(Listed(made.stores, 20)) + "</dd>";
  return out + "</dl></footer></main></body></html>\n";
}

}  // namespace forge::verify::page
