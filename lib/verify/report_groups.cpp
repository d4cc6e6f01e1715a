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

std::vector<KIntervals> TaskBootstrap(const Report& report, const BootstrapSettings& settings, uint64_t seed) {
  if (report.tasks.size() < 2) return {};
  const size_t ks = report.overall_ks.size();
  std::vector<std::vector<double>> values(2 * ks);
  for (const auto& row : report.tasks) {
    for (size_t i = 0; i < ks; ++i) {
      values[2 * i].push_back(row.ks[i].pass_at_k);
      values[2 * i + 1].push_back(row.ks[i].pass_hat_k);
    }
  }
  auto iv = BootstrapMeans(values, settings.resamples, seed, settings.confidence);
  std::vector<KIntervals> out;
  for (size_t i = 0; i < ks; ++i) out.push_back({report.overall_ks[i].k, iv[2 * i], iv[2 * i + 1]});
  return out;
}

std::optional<double> NumberOf(const std::string& name) {
  double x = 0;
  if (name.empty() || std::from_chars(name.data(), name.data() + name.size(), x).ptr != name.data() + name.size()) {
    return std::nullopt;
  }
  return x;
}

Result<GroupReport> BuildGroupReport(const std::string& name, const std::vector<const Attempt*>& attempts,
                                     const std::vector<int64_t>& ks, bool with_behaviour) {
  std::vector<Trial> trials;
  for (const Attempt* a : attempts) trials.push_back(a->trial);
  auto report = BuildReport(trials, ks);
  if (!report.ok()) return report.status();
  GroupReport group{name, std::move(*report), {}, std::nullopt, {}};
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
  const auto x = NumberOf(a), y = NumberOf(b);
  if (x && y && *x != *y) return *x < *y;
  if (x.has_value() != y.has_value()) return x.has_value();
  return a < b;
}

}  // namespace

std::vector<const GroupReport*> GroupedReport::Trend() const {
  std::vector<const GroupReport*> points;
  for (const auto& g : groups) {
    if (NumberOf(g.name)) points.push_back(&g);
  }
  if (points.size() < 2) points.clear();
  return points;
}

Result<GroupedReport> BuildGroupedReport(const std::vector<Attempt>& attempts, const std::string& by,
                                         const std::vector<int64_t>& ks, bool with_behaviour,
                                         const BootstrapSettings& bootstrap) {
  if (bootstrap.resamples < 1) return Status::InvalidArgument("--resamples: must be at least 1");
  std::vector<const Attempt*> all;
  std::map<std::string, std::vector<const Attempt*>> groups;
  for (const auto& a : attempts) {
    all.push_back(&a);
    groups[a.group].push_back(&a);
  }
  GroupedReport out;
  out.by = by;
  out.bootstrap = bootstrap;
  auto whole = BuildGroupReport("all", all, ks, with_behaviour);
  if (!whole.ok()) return whole.status();
  out.all = std::move(*whole);
  out.all.intervals = TaskBootstrap(out.all.report, bootstrap, SeedFor(bootstrap.seed, "all"));
  if (by.empty()) return out;
  for (const auto& [name, members] : groups) {
    auto group = BuildGroupReport(name, members, ks, with_behaviour);
    if (!group.ok()) return group.status().Prefixed(by + "=" + name);
    group->intervals = TaskBootstrap(group->report, bootstrap, SeedFor(bootstrap.seed, name));
    out.groups.push_back(std::move(*group));
  }
  std::sort(out.groups.begin(), out.groups.end(),
            [](const GroupReport& x, const GroupReport& y) { return GroupLess(x.name, y.name); });
  return out;
}

namespace {

Json GroupJson(const GroupReport& group) {
  Json j = ReportToJson(group.report);
  Json at = Json::object(), hat = Json::object();
  for (const auto& v : group.intervals) {
    at[std::to_string(v.k)] = {{"low", v.pass_at_k.low}, {"high", v.pass_at_k.high}};
    hat[std::to_string(v.k)] = {{"low", v.pass_hat_k.low}, {"high", v.pass_hat_k.high}};
  }
  j["overall"]["intervals"] =
      group.intervals.empty() ? Json(nullptr) : Json{{"pass_at_k", std::move(at)}, {"pass_hat_k", std::move(hat)}};
  if (group.behaviour) j["behaviour"] = group.behaviour->ToJson();
  return j;
}

std::string PercentOrDash(std::optional<double> v) { return v ? fmt::format("{:.0f}%", *v * 100) : "-"; }

std::string Bracket(const std::vector<KIntervals>& intervals, size_t i) {
  if (i >= intervals.size()) return "[  n/a  ]";
  return fmt::format("[{:.3f}, {:.3f}]", intervals[i].pass_at_k.low, intervals[i].pass_at_k.high);
}

std::string IntervalNote(const GroupedReport& report) {
  const BootstrapSettings& b = report.bootstrap;
  return fmt::format("[interval]: {:.0f}% percentile bootstrap over each group's tasks ({} resamples, seed {}); "
                     "none below 2 tasks\n", b.confidence * 100, b.resamples, b.seed);
}

}  // namespace

Json GroupedReportToJson(const GroupedReport& report) {
  const BootstrapSettings& b = report.bootstrap;
  const Json bootstrap = {{"resamples", b.resamples}, {"seed", b.seed}, {"confidence", b.confidence},
                          {"over", "tasks of the group"}};
  if (report.by.empty()) {
    Json j = GroupJson(report.all);
    j["bootstrap"] = bootstrap;
    return j;
  }
  Json groups = Json::array();
  for (const auto& g : report.groups) {
    Json j = GroupJson(g);
    j["group"] = g.name;
    groups.push_back(std::move(j));
  }
  Json overall = GroupJson(report.all);
  Json j = {{"by", report.by}, {"groups", std::move(groups)}, {"overall", overall["overall"]}, {"bootstrap", bootstrap}};
  if (report.all.behaviour) j["overall"]["behaviour"] = overall["behaviour"];
  return j;
}

std::string GroupedReportToTable(const GroupedReport& report) {
  std::vector<const GroupReport*> rows;
  std::string out;
  if (report.by.empty()) {
    out = ReportToTable(report.all.report);
    const Report& r = report.all.report;
    for (size_t i = 0; i < report.all.intervals.size(); ++i) {
      out += fmt::format("overall pass@{} {:.4f} {}\n", r.overall_ks[i].k, r.overall_ks[i].pass_at_k,
                         Bracket(report.all.intervals, i));
    }
    if (!report.all.intervals.empty()) out += IntervalNote(report);
    rows.push_back(&report.all);
  } else {
    const std::string all = fmt::format("all ({} groups pooled)", report.groups.size());
    size_t width = std::max(report.by.size(), all.size());
    for (const auto& g : report.groups) width = std::max(width, g.name.size());
    width = std::min<size_t>(width, 40);
    out = fmt::format("{:<{}}  {:>5} {:>5} {:>5} {:>4}", report.by, width, "tasks", "n", "pass", "excl");
    for (const auto& v : report.all.report.overall_ks) {
      out += fmt::format(" {:>8} {:<16} {:>8}", fmt::format("pass@{}", v.k), "[interval]", fmt::format("pass^{}", v.k));
    }
    out += fmt::format(" {:>7}  outcomes\n", "reward");
    auto line = [&](const std::string& name, const GroupReport& g) {
      const Report& r = g.report;
      std::string shown = name.size() > width ? name.substr(0, width - 1) + "~" : name;
      out += fmt::format("{:<{}}  {:>5} {:>5} {:>5} {:>4}", shown, width, r.tasks.size(), r.overall.valid,
                         r.overall.passed, r.overall.excluded);
      for (size_t i = 0; i < r.overall_ks.size(); ++i) {
        out += fmt::format(" {:>8.4f} {:<16} {:>8.4f}", r.overall_ks[i].pass_at_k, Bracket(g.intervals, i),
                           r.overall_ks[i].pass_hat_k);
      }
      std::string outcomes;
      for (const auto& [o, n] : r.overall.outcomes) outcomes += fmt::format("{}{}={}", outcomes.empty() ? "" : " ", o, n);
      out += fmt::format(" {:>7.4f}  {}\n", r.overall_mean_reward, outcomes);
    };
    for (const auto& g : report.groups) {
      line(g.name, g);
      rows.push_back(&g);
    }
    line(all, report.all);
    out += IntervalNote(report) + CountingNotes(report.all.report);
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

Status ReportCommand(const ReportOptions& options) {
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
  auto report = BuildGroupedReport(attempts, options.by, options.ks, !calls->empty(), options.bootstrap);
  if (!report.ok()) return report.status();
  if (!options.html.empty()) {
    const Provenance made{options.inputs, options.stores, MadeAt(*options.env)};
    FORGE_RETURN_IF_ERROR(WriteFileAtomically(options.html, ReportPage(*report, made)));
  }
  FORGE_RETURN_IF_ERROR(options.format == Format::kTable ? Print(GroupedReportToTable(*report))
                                                         : Print(GroupedReportToJson(*report).dump(2) + "\n"));
  return read;
}

}  // namespace forge::verify
