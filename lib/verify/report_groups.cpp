#include "verify/report_groups.h"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "verify/commands.h"
#include "verify/html.h"

namespace forge::verify {

using records::Json;

std::vector<KValues> PassCurve(const Report& report) {
  int64_t k_max = kMaxCurveK;
  for (const auto& row : report.tasks) k_max = std::min(k_max, row.stats.valid);
  std::vector<KValues> curve;
  if (report.tasks.empty()) return curve;
  for (int64_t k = 1; k <= k_max; ++k) {
    KValues v{k, 0, 0};
    for (const auto& row : report.tasks) {
      v.pass_at_k += PassAtK(row.stats.valid, row.stats.passed, k);
      v.pass_hat_k += PassHatK(row.stats.valid, row.stats.passed, k);
    }
    v.pass_at_k /= static_cast<double>(report.tasks.size());
    v.pass_hat_k /= static_cast<double>(report.tasks.size());
    curve.push_back(v);
  }
  return curve;
}

Result<GroupReport> BuildGroupReport(const std::string& name, const std::vector<const Attempt*>& attempts,
                                     const std::vector<int64_t>& ks, bool with_behaviour) {
  std::vector<Trial> trials;
  for (const Attempt* a : attempts) trials.push_back(a->trial);
  auto report = BuildReport(trials, ks);
  if (!report.ok()) return report.status();
  GroupReport group{name, std::move(*report), {}, std::nullopt};
  group.curve = PassCurve(group.report);
  if (with_behaviour) {
    group.behaviour.emplace();
    for (const Attempt* a : attempts) {
      if (a->behaviour && CountsAsTrial(a->trial.outcome)) {
        group.behaviour->Add(*a->behaviour, a->trial.outcome == Outcome::kPassed);
      }
    }
  }
  return group;
}

namespace {

// Numbers (policy versions) in numeric order, before names.
bool GroupLess(const std::string& a, const std::string& b) {
  double x = 0, y = 0;
  const bool xa = std::from_chars(a.data(), a.data() + a.size(), x).ptr == a.data() + a.size() && !a.empty();
  const bool yb = std::from_chars(b.data(), b.data() + b.size(), y).ptr == b.data() + b.size() && !b.empty();
  if (xa && yb && x != y) return x < y;
  if (xa != yb) return xa;
  return a < b;
}

}  // namespace

Result<GroupedReport> BuildGroupedReport(const std::vector<Attempt>& attempts, const std::string& by,
                                         const std::vector<int64_t>& ks, bool with_behaviour) {
  std::vector<const Attempt*> all;
  std::map<std::string, std::vector<const Attempt*>> groups;
  for (const auto& a : attempts) {
    all.push_back(&a);
    groups[a.group].push_back(&a);
  }
  GroupedReport out;
  out.by = by;
  auto whole = BuildGroupReport("all", all, ks, with_behaviour);
  if (!whole.ok()) return whole.status();
  out.all = std::move(*whole);
  if (by.empty()) return out;
  for (const auto& [name, members] : groups) {
    auto group = BuildGroupReport(name, members, ks, with_behaviour);
    if (!group.ok()) return group.status().Prefixed(by + "=" + name);
    out.groups.push_back(std::move(*group));
  }
  std::sort(out.groups.begin(), out.groups.end(),
            [](const GroupReport& x, const GroupReport& y) { return GroupLess(x.name, y.name); });
  return out;
}

namespace {

Json GroupJson(const GroupReport& group) {
  Json j = ReportToJson(group.report);
  if (group.behaviour) j["behaviour"] = group.behaviour->ToJson();
  return j;
}

std::string PercentOrDash(std::optional<double> v) { return v ? fmt::format("{:.0f}%", *v * 100) : "-"; }

}  // namespace

Json GroupedReportToJson(const GroupedReport& report) {
  if (report.by.empty()) return GroupJson(report.all);
  Json groups = Json::array();
  for (const auto& g : report.groups) {
    Json j = GroupJson(g);
    j["group"] = g.name;
    groups.push_back(std::move(j));
  }
  Json overall = GroupJson(report.all);
  Json j = {{"by", report.by}, {"groups", std::move(groups)}, {"overall", overall["overall"]}};
  if (report.all.behaviour) j["overall"]["behaviour"] = overall["behaviour"];
  return j;
}

std::string GroupedReportToTable(const GroupedReport& report) {
  std::vector<const GroupReport*> rows;
  std::string out;
  if (report.by.empty()) {
    out = ReportToTable(report.all.report);
    rows.push_back(&report.all);
  } else {
    size_t width = std::max<size_t>(report.by.size(), 16);
    for (const auto& g : report.groups) width = std::max(width, g.name.size());
    width = std::min<size_t>(width, 40);
    out = fmt::format("{:<{}}  {:>5} {:>5} {:>5} {:>4}", report.by, width, "tasks", "n", "pass", "excl");
    for (const auto& v : report.all.report.overall_ks) {
      out += fmt::format(" {:>8} {:>8}", fmt::format("pass@{}", v.k), fmt::format("pass^{}", v.k));
    }
    out += fmt::format(" {:>7}  outcomes\n", "reward");
    auto line = [&](const std::string& name, const Report& r) {
      std::string shown = name.size() > width ? name.substr(0, width - 1) + "~" : name;
      out += fmt::format("{:<{}}  {:>5} {:>5} {:>5} {:>4}", shown, width, r.tasks.size(), r.overall.valid,
                         r.overall.passed, r.overall.excluded);
      for (const auto& v : r.overall_ks) out += fmt::format(" {:>8.4f} {:>8.4f}", v.pass_at_k, v.pass_hat_k);
      std::string outcomes;
      for (const auto& [o, n] : r.overall.outcomes) outcomes += fmt::format("{}{}={}", outcomes.empty() ? "" : " ", o, n);
      out += fmt::format(" {:>7.4f}  {}\n", r.overall_mean_reward, outcomes);
    };
    for (const auto& g : report.groups) {
      line(g.name, g.report);
      rows.push_back(&g);
    }
    line(fmt::format("all ({} groups)", report.groups.size()), report.all.report);
  }
  if (report.all.behaviour) out += "\n" + BehaviourTable(report.by.empty() ? "behaviour" : report.by, rows);
  return out;
}

std::string BehaviourTable(const std::string& heading, const std::vector<const GroupReport*>& groups) {
  size_t width = std::max<size_t>(heading.size(), 12);
  for (const auto* g : groups) width = std::max(width, g->name.size());
  width = std::min<size_t>(width, 40);
  std::string out = fmt::format("{:<{}}  {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}  {:>12}  {:>10}  {:>6} {:>9} {:>9}\n",
                                heading, width, "trials", "calls", "shell", "read", "edit", "search", "other",
                                "self-verify", "recovery", "turns", "tok in", "tok out");
  for (const auto* g : groups) {
    const BehaviourSummary& b = *g->behaviour;
    std::string shown = g->name.size() > width ? g->name.substr(0, width - 1) + "~" : g->name;
    out += fmt::format("{:<{}}  {:>6} {:>6}", shown, width, b.trials(), b.tools.tool_calls);
    for (size_t i = 0; i < kToolKinds; ++i) out += fmt::format(" {:>6}", PercentOrDash(b.KindShare(static_cast<ToolKind>(i))));
    out += fmt::format("  {:>12}  {:>10}  {:>6.1f} {:>9.0f} {:>9.0f}\n",
                       fmt::format("{}/{} {}", b.self_verified, b.edited, PercentOrDash(b.SelfVerificationRate())),
                       fmt::format("{}/{} {}", b.tools.recovered, b.tools.rollouts_with_failures, PercentOrDash(b.RecoveryRate())),
                       b.PerTrial(b.turns), b.PerTrial(b.prompt_tokens), b.PerTrial(b.completion_tokens));
  }
  out += "(behaviour of valid trials from the recorded calls; shares of tool calls by kind; self-verify: trials\n"
         " that checked after their last edit / trials that edited; recovery: passed / trials with a failed tool call;\n"
         " turns and tokens per trial)\n";
  return out;
}

Status GroupedReportCommand(const ReportOptions& options) {
  auto calls = CallSource::Open(options.stores);
  if (!calls.ok()) return calls.status();
  std::vector<Attempt> attempts;
  Status read = ReadAttempts(options.inputs, {options.by, &*calls}, *options.env, &attempts);
  if (!read.ok() && read.kind() != Kind::kInvalidData) return read;
  if (!options.by.empty() && !attempts.empty() &&
      std::all_of(attempts.begin(), attempts.end(), [](const Attempt& a) { return a.group == kNoValue; })) {
    const bool from_calls = options.by == "model" || options.by == "policy_version";
    options.env->Warn(fmt::format("--by {}: no record has this field{}", options.by,
                                  from_calls && calls->empty() ? "; give --store to read it from the recorded calls" : ""));
  }
  auto report = BuildGroupedReport(attempts, options.by, options.ks, !calls->empty());
  if (!report.ok()) return report.status();
  if (!options.html.empty()) {
    PageSource source{options.inputs, options.stores};
    FORGE_RETURN_IF_ERROR(WriteFileAtomically(options.html, ReportPage(*report, source)));
  }
  FORGE_RETURN_IF_ERROR(options.format == Format::kTable ? Print(GroupedReportToTable(*report))
                                                         : Print(GroupedReportToJson(*report).dump(2) + "\n"));
  return read;
}

}  // namespace forge::verify
