#include "verify/compare.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "verify/commands.h"
#include "verify/html.h"

namespace forge::verify {

using records::Json;

namespace {

// Passes among n draws, with replacement, from n trials of which c passed
// (trial i passed when i < c).
int64_t DrawPasses(SplitMix64& gen, int64_t n, int64_t c) {
  int64_t passes = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<int64_t>(gen.Below(static_cast<uint64_t>(n))) < c) ++passes;
  }
  return passes;
}

}  // namespace

std::vector<KDiff> TaskDifference(const TaskStats& a, const TaskStats& b, const std::vector<int64_t>& ks,
                                  const CompareSettings& settings, uint64_t seed) {
  const auto r_count = static_cast<size_t>(settings.resamples);
  std::vector<std::vector<double>> at(ks.size(), std::vector<double>(r_count));
  std::vector<std::vector<double>> hat = at;
  SplitMix64 gen(seed);
  for (size_t r = 0; r < r_count; ++r) {
    const int64_t ca = DrawPasses(gen, a.valid, a.passed);
    const int64_t cb = DrawPasses(gen, b.valid, b.passed);
    for (size_t i = 0; i < ks.size(); ++i) {
      at[i][r] = PassAtK(b.valid, cb, ks[i]) - PassAtK(a.valid, ca, ks[i]);
      hat[i][r] = PassHatK(b.valid, cb, ks[i]) - PassHatK(a.valid, ca, ks[i]);
    }
  }
  std::vector<KDiff> out;
  for (size_t i = 0; i < ks.size(); ++i) {
    const int64_t k = ks[i];
    out.push_back({k,
                   PercentileInterval(at[i], PassAtK(b.valid, b.passed, k) - PassAtK(a.valid, a.passed, k),
                                      settings.confidence),
                   PercentileInterval(hat[i], PassHatK(b.valid, b.passed, k) - PassHatK(a.valid, a.passed, k),
                                      settings.confidence)});
  }
  return out;
}

namespace {

// A run as a whole, named "A" or "B" on the page.
Result<GroupReport> Side(const std::vector<Attempt>& attempts, const std::string& name, const std::string& label,
                         const CompareSettings& settings, bool with_behaviour) {
  std::vector<const Attempt*> all;
  for (const auto& a : attempts) all.push_back(&a);
  auto side = BuildGroupReport(name, all, settings.ks, with_behaviour);
  if (!side.ok()) return side.status().Prefixed(name + " (" + label + ")");
  return side;
}

}  // namespace

Result<Comparison> Compare(const std::vector<Attempt>& a, const std::vector<Attempt>& b,
                           const std::string& label_a, const std::string& label_b,
                           const CompareSettings& settings, bool with_behaviour) {
  if (settings.resamples < 1) return Status::InvalidArgument("--resamples: must be at least 1");
  if (!(settings.confidence > 0 && settings.confidence < 1)) return Status::InvalidArgument("--confidence: must be in (0, 1)");
  Comparison c{label_a, label_b, settings, {}, {}, {}, {}, {}, {}};
  auto side_a = Side(a, "A", label_a, settings, with_behaviour);
  if (!side_a.ok()) return side_a.status();
  auto side_b = Side(b, "B", label_b, settings, with_behaviour);
  if (!side_b.ok()) return side_b.status();
  c.a = std::move(*side_a);
  c.b = std::move(*side_b);

  std::map<std::string, const TaskRow*> rows_b;
  for (const auto& row : c.b.report.tasks) rows_b[row.stats.task_id] = &row;
  std::vector<std::vector<double>> values(2 * settings.ks.size());
  for (const auto& row : c.a.report.tasks) {
    auto it = rows_b.find(row.stats.task_id);
    if (it == rows_b.end()) {
      c.only_a.push_back(row.stats.task_id);
      continue;
    }
    const TaskRow& rb = *it->second;
    rows_b.erase(it);
    TaskComparison t{row.stats.task_id, row.stats, rb.stats, row.ks, rb.ks, {}, ""};
    t.diffs = TaskDifference(t.a, t.b, settings.ks, settings, SeedFor(settings.seed, t.task_id));
    if (t.a.passed == 0 && t.b.passed > 0) t.flip = "gained";
    if (t.a.passed > 0 && t.b.passed == 0) t.flip = "lost";
    for (size_t i = 0; i < settings.ks.size(); ++i) {
      values[2 * i].push_back(t.diffs[i].pass_at_k.estimate);
      values[2 * i + 1].push_back(t.diffs[i].pass_hat_k.estimate);
    }
    c.tasks.push_back(std::move(t));
  }
  for (const auto& [id, row] : rows_b) c.only_b.push_back(id);
  if (c.tasks.empty()) return Status::InvalidData("the two runs have no task in common");
  auto intervals = BootstrapMeans(values, settings.resamples, settings.seed, settings.confidence);
  for (size_t i = 0; i < settings.ks.size(); ++i) {
    c.overall.push_back({settings.ks[i], intervals[2 * i], intervals[2 * i + 1]});
  }
  return c;
}

namespace {

Json IntervalJson(const Interval& v) { return {{"difference", v.estimate}, {"low", v.low}, {"high", v.high}}; }

Json DiffsJson(const std::vector<KDiff>& diffs) {
  Json at = Json::object(), hat = Json::object();
  for (const auto& d : diffs) {
    at[std::to_string(d.k)] = IntervalJson(d.pass_at_k);
    hat[std::to_string(d.k)] = IntervalJson(d.pass_hat_k);
  }
  return {{"pass_at_k", std::move(at)}, {"pass_hat_k", std::move(hat)}};
}

Json BehaviourDifference(const BehaviourSummary& a, const BehaviourSummary& b) {
  auto diff = [](std::optional<double> x, std::optional<double> y) { return x && y ? Json(*y - *x) : Json(nullptr); };
  Json shares = Json::object();
  for (size_t i = 0; i < kToolKinds; ++i) {
    const auto kind = static_cast<ToolKind>(i);
    shares[std::string(ToolKindName(kind))] = b.KindShare(kind) - a.KindShare(kind);
  }
  return {{"share_by_kind", std::move(shares)},
          {"self_verification_rate", diff(a.SelfVerificationRate(), b.SelfVerificationRate())},
          {"error_recovery_rate", diff(a.RecoveryRate(), b.RecoveryRate())},
          {"turns_per_trial", b.PerTrial(b.turns) - a.PerTrial(a.turns)},
          {"prompt_tokens_per_trial", b.PerTrial(b.prompt_tokens) - a.PerTrial(a.prompt_tokens)},
          {"completion_tokens_per_trial", b.PerTrial(b.completion_tokens) - a.PerTrial(a.completion_tokens)}};
}

}  // namespace

Json ComparisonToJson(const Comparison& c) {
  Json tasks = Json::array();
  for (const auto& t : c.tasks) {
    Json j = DiffsJson(t.diffs);
    j["task_id"] = t.task_id;
    j["a"] = {{"valid", t.a.valid}, {"passed", t.a.passed}};
    j["b"] = {{"valid", t.b.valid}, {"passed", t.b.passed}};
    j["flip"] = t.flip.empty() ? Json(nullptr) : Json(t.flip);
    tasks.push_back(std::move(j));
  }
  Json overall = DiffsJson(c.overall);
  overall["tasks"] = c.tasks.size();
  Json gained = Json::array(), lost = Json::array();
  for (const auto& t : c.tasks) {
    if (t.flip == "gained") gained.push_back(t.task_id);
    if (t.flip == "lost") lost.push_back(t.task_id);
  }
  Json j = {{"a", {{"label", c.label_a}, {"report", ReportToJson(c.a.report)}}},
            {"b", {{"label", c.label_b}, {"report", ReportToJson(c.b.report)}}},
            {"bootstrap", {{"resamples", c.settings.resamples}, {"seed", c.settings.seed},
                           {"confidence", c.settings.confidence}}},
            {"tasks", std::move(tasks)},
            {"overall", std::move(overall)},
            {"flipped", {{"gained", std::move(gained)}, {"lost", std::move(lost)}}},
            {"only_in_a", c.only_a},
            {"only_in_b", c.only_b}};
  if (c.a.behaviour && c.b.behaviour) {
    j["a"]["behaviour"] = c.a.behaviour->ToJson();
    j["b"]["behaviour"] = c.b.behaviour->ToJson();
    j["behaviour_difference"] = BehaviourDifference(*c.a.behaviour, *c.b.behaviour);
  }
  return j;
}

std::string ComparisonToTable(const Comparison& c) {
  size_t width = 20;
  for (const auto& t : c.tasks) width = std::max(width, t.task_id.size());
  width = std::min<size_t>(width, 40);
  std::string out = fmt::format("A: {}  B: {}  ({} task(s) in both; {:.0f}% intervals, {} resamples, seed {})\n",
                                c.label_a, c.label_b, c.tasks.size(), c.settings.confidence * 100,
                                c.settings.resamples, c.settings.seed);
  out += fmt::format("{:<{}}  {:>7} {:>7}", "task", width, "A c/n", "B c/n");
  for (int64_t k : c.settings.ks) {
    out += fmt::format("  {:>14} {:<26}", fmt::format("pass@{} A->B", k), fmt::format("B-A [interval]"));
  }
  out += "  flip\n";
  for (const auto& t : c.tasks) {
    std::string shown = t.task_id.size() > width ? t.task_id.substr(0, width - 1) + "~" : t.task_id;
    out += fmt::format("{:<{}}  {:>7} {:>7}", shown, width, fmt::format("{}/{}", t.a.passed, t.a.valid),
                       fmt::format("{}/{}", t.b.passed, t.b.valid));
    for (size_t i = 0; i < t.diffs.size(); ++i) {
      out += fmt::format("  {:>14} {:<26}", fmt::format("{:.3f}->{:.3f}", t.ka[i].pass_at_k, t.kb[i].pass_at_k),
                         IntervalText(t.diffs[i].pass_at_k));
    }
    out += "  " + t.flip + "\n";
  }
  out += fmt::format("\noverall (mean over {} tasks; paired bootstrap over tasks)\n", c.tasks.size());
  for (size_t i = 0; i < c.overall.size(); ++i) {
    const KDiff& d = c.overall[i];
    out += fmt::format("  pass@{}  A {:.4f}  B {:.4f}  B-A {}\n", d.k, c.a.report.overall_ks[i].pass_at_k,
                       c.b.report.overall_ks[i].pass_at_k, IntervalText(d.pass_at_k));
    out += fmt::format("  pass^{}  A {:.4f}  B {:.4f}  B-A {}\n", d.k, c.a.report.overall_ks[i].pass_hat_k,
                       c.b.report.overall_ks[i].pass_hat_k, IntervalText(d.pass_hat_k));
  }
  std::string gained, lost;
  for (const auto& t : c.tasks) {
    if (t.flip == "gained") gained += " " + t.task_id;
    if (t.flip == "lost") lost += " " + t.task_id;
  }
  out += fmt::format("flipped: gained (A never passed, B did):{}\n", gained.empty() ? " none" : gained);
  out += fmt::format("         lost (A passed, B never did):{}\n", lost.empty() ? " none" : lost);
  if (!c.only_a.empty() || !c.only_b.empty()) {
    out += fmt::format("not compared: {} task(s) only in A, {} only in B\n", c.only_a.size(), c.only_b.size());
  }
  if (c.a.behaviour && c.b.behaviour) out += "\n" + BehaviourTable("run", {&c.a, &c.b});
  return out;
}

Status CompareCommand(const CompareOptions& options) {
  if (options.a == "-" && options.b == "-") return Status::InvalidArgument("compare: only one of A and B can be stdin");
  auto calls = CallSource::Open(options.stores);
  if (!calls.ok()) return calls.status();
  std::vector<Attempt> a, b;
  Status read_a = ReadAttempts({options.a}, {"", &*calls}, *options.env, &a);
  if (!read_a.ok() && read_a.kind() != Kind::kInvalidData) return read_a;
  Status read_b = ReadAttempts({options.b}, {"", &*calls}, *options.env, &b);
  if (!read_b.ok() && read_b.kind() != Kind::kInvalidData) return read_b;
  CompareSettings settings{options.ks, options.resamples, options.seed, options.confidence};
  auto c = Compare(a, b, options.a, options.b, settings, !calls->empty());
  if (!c.ok()) return c.status();
  if (!options.html.empty()) {
    PageSource source{{options.a, options.b}, options.stores};
    FORGE_RETURN_IF_ERROR(WriteFileAtomically(options.html, ComparePage(*c, source)));
  }
  FORGE_RETURN_IF_ERROR(options.format == Format::kTable ? Print(ComparisonToTable(*c))
                                                         : Print(ComparisonToJson(*c).dump(2) + "\n"));
  return !read_a.ok() ? read_a : read_b;
}

}  // namespace forge::verify
