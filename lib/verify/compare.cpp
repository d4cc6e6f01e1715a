#include "verify/compare.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "verify/commands.h"
#include "verify/html.h"
#include "verify/posterior.h"
#include "verify/significance.h"

namespace forge::verify {

using records::Json;

double TaskComparison::RateDifference() const {
  return static_cast<double>(b.passed) / static_cast<double>(b.valid) -
         static_cast<double>(a.passed) / static_cast<double>(a.valid);
}

int TaskComparison::Marked(double alpha) const {
  if (p_holm > alpha) return 0;
  const double d = RateDifference();
  return d > 0 ? 1 : d < 0 ? -1 : 0;
}

std::vector<const TaskComparison*> Comparison::ByDifference(size_t at, bool hat) const {
  std::vector<const TaskComparison*> out;
  for (const auto& t : tasks) out.push_back(&t);
  auto of = [&](const TaskComparison* t) { return hat ? t->diffs[at].pass_hat_k.estimate : t->diffs[at].pass_at_k.estimate; };
  std::stable_sort(out.begin(), out.end(), [&](const TaskComparison* x, const TaskComparison* y) { return of(x) > of(y); });
  return out;
}

namespace {

// Posterior intervals, computed once per distinct set of counts: the tasks
// of a run mostly share n, so thousands of tasks need few integrals.
class PosteriorCache {
 public:
  explicit PosteriorCache(double confidence) : confidence_(confidence) {}

  KIntervals Level(const TaskStats& s, int64_t k) {
    const PassCount run{s.valid, s.passed};
    auto key = std::tuple{run.n, run.c, k};
    auto it = levels_.find(key);
    if (it == levels_.end()) {
      KIntervals v{k, LevelInterval(run, Measure::kPassAtK, k, confidence_), {}};
      v.pass_hat_k = k == 1 ? v.pass_at_k : LevelInterval(run, Measure::kPassHatK, k, confidence_);
      it = levels_.emplace(key, v).first;
    }
    return it->second;
  }

  KIntervals Difference(const TaskStats& a, const TaskStats& b, int64_t k) {
    const PassCount x{a.valid, a.passed}, y{b.valid, b.passed};
    auto key = std::tuple{x.n, x.c, y.n, y.c, k};
    auto it = diffs_.find(key);
    if (it == diffs_.end()) {
      KIntervals v{k, DifferenceInterval(x, y, Measure::kPassAtK, k, confidence_), {}};
      // At k = 1 both measures are the pass rate.
      v.pass_hat_k = k == 1 ? v.pass_at_k : DifferenceInterval(x, y, Measure::kPassHatK, k, confidence_);
      it = diffs_.emplace(key, v).first;
    }
    return it->second;
  }

 private:
  double confidence_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, KIntervals> levels_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, KIntervals> diffs_;
};

// A run over the attempts given, named "A" or "B".
Result<GroupReport> RunReport(const std::vector<const Attempt*>& attempts, const std::string& name,
                              const std::string& label, const CompareSettings& settings, bool with_behaviour) {
  auto side = BuildGroupReport(name, attempts, settings.ks, with_behaviour);
  if (!side.ok()) return side.status().Prefixed(name + " (" + label + ")");
  return side;
}

std::vector<const Attempt*> Pointers(const std::vector<Attempt>& attempts, const std::set<std::string>* only) {
  std::vector<const Attempt*> out;
  for (const auto& a : attempts) {
    if (only == nullptr || only->count(a.trial.task_id) > 0) out.push_back(&a);
  }
  return out;
}

// The paired bootstrap over tasks: per k, B - A, A and B, at pass@k and
// pass^k, all from the same resamples.
void OverallIntervals(Comparison* c) {
  const size_t ks = c->settings.ks.size();
  std::vector<std::vector<double>> values(6 * ks);
  for (const auto& t : c->tasks) {
    for (size_t i = 0; i < ks; ++i) {
      values[6 * i + 0].push_back(t.diffs[i].pass_at_k.estimate);
      values[6 * i + 1].push_back(t.diffs[i].pass_hat_k.estimate);
      values[6 * i + 2].push_back(t.level_a[i].pass_at_k.estimate);
      values[6 * i + 3].push_back(t.level_a[i].pass_hat_k.estimate);
      values[6 * i + 4].push_back(t.level_b[i].pass_at_k.estimate);
      values[6 * i + 5].push_back(t.level_b[i].pass_hat_k.estimate);
    }
  }
  const BootstrapSettings& b = c->settings.bootstrap;
  auto iv = BootstrapMeans(values, b.resamples, b.seed, b.confidence);
  for (size_t i = 0; i < ks; ++i) {
    const int64_t k = c->settings.ks[i];
    c->overall.push_back({k, iv[6 * i + 0], iv[6 * i + 1]});
    c->overall_a.push_back({k, iv[6 * i + 2], iv[6 * i + 3]});
    c->overall_b.push_back({k, iv[6 * i + 4], iv[6 * i + 5]});
  }
}

}  // namespace

Result<Comparison> Compare(const std::vector<Attempt>& a, const std::vector<Attempt>& b,
                           const std::string& label_a, const std::string& label_b,
                           const CompareSettings& settings, bool with_behaviour) {
  const BootstrapSettings& boot = settings.bootstrap;
  if (boot.resamples < 1) return Status::InvalidArgument("--resamples: must be at least 1");
  if (!(boot.confidence > 0 && boot.confidence < 1)) return Status::InvalidArgument("--confidence: must be in (0, 1)");
  Comparison c;
  c.label_a = label_a;
  c.label_b = label_b;
  c.settings = settings;
  auto whole_a = RunReport(Pointers(a, nullptr), "A", label_a, settings, with_behaviour);
  if (!whole_a.ok()) return whole_a.status();
  auto whole_b = RunReport(Pointers(b, nullptr), "B", label_b, settings, with_behaviour);
  if (!whole_b.ok()) return whole_b.status();
  c.a = std::move(*whole_a);
  c.b = std::move(*whole_b);

  std::map<std::string, const TaskRow*> rows_b;
  for (const auto& row : c.b.report.tasks) rows_b[row.stats.task_id] = &row;
  std::set<std::string> paired;
  PosteriorCache posterior(boot.confidence);
  for (const auto& row : c.a.report.tasks) {
    auto it = rows_b.find(row.stats.task_id);
    if (it == rows_b.end()) {
      c.only_a.push_back(row.stats.task_id);
      continue;
    }
    TaskComparison t;
    t.task_id = row.stats.task_id;
    t.a = row.stats;
    t.b = it->second->stats;
    rows_b.erase(it);
    for (int64_t k : settings.ks) {
      t.level_a.push_back(posterior.Level(t.a, k));
      t.level_b.push_back(posterior.Level(t.b, k));
      t.diffs.push_back(posterior.Difference(t.a, t.b, k));
    }
    t.p_value = FisherExactP(t.a.valid, t.a.passed, t.b.valid, t.b.passed);
    if (t.a.passed == 0 && t.b.passed > 0) t.flip = "gained";
    if (t.a.passed > 0 && t.b.passed == 0) t.flip = "lost";
    paired.insert(t.task_id);
    c.tasks.push_back(std::move(t));
  }
  for (const auto& [id, row] : rows_b) c.only_b.push_back(id);
  if (c.tasks.empty()) return Status::InvalidData("the two runs have no task in common");
  std::vector<double> p_values;
  for (const auto& t : c.tasks) p_values.push_back(t.p_value);
  const std::vector<double> holm = HolmAdjusted(p_values);
  for (size_t i = 0; i < c.tasks.size(); ++i) c.tasks[i].p_holm = holm[i];

  auto paired_a = RunReport(Pointers(a, &paired), "A", label_a, settings, with_behaviour);
  if (!paired_a.ok()) return paired_a.status();
  auto paired_b = RunReport(Pointers(b, &paired), "B", label_b, settings, with_behaviour);
  if (!paired_b.ok()) return paired_b.status();
  c.paired_a = std::move(*paired_a);
  c.paired_b = std::move(*paired_b);
  OverallIntervals(&c);
  return c;
}

namespace {

Json DifferenceJson(const Interval& v) { return {{"difference", v.estimate}, {"low", v.low}, {"high", v.high}}; }
Json LevelJson(const Interval& v) { return {{"value", v.estimate}, {"low", v.low}, {"high", v.high}}; }

Json KJson(const std::vector<KIntervals>& ks, Json (*one)(const Interval&)) {
  Json at = Json::object(), hat = Json::object();
  for (const auto& v : ks) {
    at[std::to_string(v.k)] = one(v.pass_at_k);
    hat[std::to_string(v.k)] = one(v.pass_hat_k);
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

Json RunJson(const TaskStats& s, const std::vector<KIntervals>& levels) {
  Json j = KJson(levels, LevelJson);
  j["valid"] = s.valid;
  j["passed"] = s.passed;
  return j;
}

}  // namespace

Json ComparisonToJson(const Comparison& c) {
  Json tasks = Json::array();
  Json gained = Json::array(), lost = Json::array();
  for (const auto& t : c.tasks) {
    Json j = KJson(t.diffs, DifferenceJson);
    j["task_id"] = t.task_id;
    j["a"] = RunJson(t.a, t.level_a);
    j["b"] = RunJson(t.b, t.level_b);
    j["p_value"] = t.p_value;
    j["p_holm"] = t.p_holm;
    const int marked = t.Marked(c.alpha());
    j["marked"] = marked > 0 ? Json("gain") : marked < 0 ? Json("loss") : Json(nullptr);
    j["flip"] = t.flip.empty() ? Json(nullptr) : Json(t.flip);
    if (t.flip == "gained") gained.push_back(t.task_id);
    if (t.flip == "lost") lost.push_back(t.task_id);
    tasks.push_back(std::move(j));
  }
  Json overall = KJson(c.overall, DifferenceJson);
  overall["tasks"] = c.tasks.size();
  overall["a"] = KJson(c.overall_a, LevelJson);
  overall["b"] = KJson(c.overall_b, LevelJson);
  const BootstrapSettings& boot = c.settings.bootstrap;
  Json j = {{"a", {{"label", c.label_a}, {"report", ReportToJson(c.a.report)}}},
            {"b", {{"label", c.label_b}, {"report", ReportToJson(c.b.report)}}},
            {"bootstrap", {{"resamples", boot.resamples}, {"seed", boot.seed}, {"confidence", boot.confidence}}},
            {"intervals", {{"overall", "paired percentile bootstrap over the tasks both ran"},
                           {"task", "equal-tailed posterior interval under Jeffreys' prior Beta(1/2, 1/2)"},
                           {"marked", "Fisher's exact test, Holm-adjusted over the tasks compared, p <= 1 - confidence"}}},
            {"tasks", std::move(tasks)},
            {"overall", std::move(overall)},
            {"flipped", {{"gained", std::move(gained)}, {"lost", std::move(lost)}}},
            {"only_in_a", c.only_a},
            {"only_in_b", c.only_b}};
  if (c.paired_a.behaviour && c.paired_b.behaviour) {
    j["a"]["behaviour"] = c.paired_a.behaviour->ToJson();
    j["b"]["behaviour"] = c.paired_b.behaviour->ToJson();
    j["behaviour_difference"] = BehaviourDifference(*c.paired_a.behaviour, *c.paired_b.behaviour);
  }
  return j;
}

std::string ComparisonToTable(const Comparison& c) {
  size_t width = 20;
  for (const auto& t : c.tasks) width = std::max(width, t.task_id.size());
  width = std::min<size_t>(width, 40);
  const BootstrapSettings& boot = c.settings.bootstrap;
  const double percent = boot.confidence * 100;
  std::string out = fmt::format("A: {}  B: {}  ({} task(s) in both)\n", c.label_a, c.label_b, c.tasks.size());
  out += fmt::format("{:<{}}  {:>7} {:>7}", "task", width, "A c/n", "B c/n");
  for (int64_t k : c.settings.ks) {
    out += fmt::format("  {:>14} {:<26}", fmt::format("pass@{} A->B", k), "B-A [posterior]");
  }
  out += fmt::format("  {:>8}  flip\n", "p (Holm)");
  for (const TaskComparison* t : c.ByDifference()) {
    std::string shown = t->task_id.size() > width ? t->task_id.substr(0, width - 1) + "~" : t->task_id;
    out += fmt::format("{:<{}}  {:>7} {:>7}", shown, width, fmt::format("{}/{}", t->a.passed, t->a.valid),
                       fmt::format("{}/{}", t->b.passed, t->b.valid));
    for (size_t i = 0; i < t->diffs.size(); ++i) {
      out += fmt::format("  {:>14} {:<26}",
                         fmt::format("{:.3f}->{:.3f}", t->level_a[i].pass_at_k.estimate, t->level_b[i].pass_at_k.estimate),
                         IntervalText(t->diffs[i].pass_at_k));
    }
    const int marked = t->Marked(c.alpha());
    out += fmt::format("  {:>8.3g}{}  {}\n", t->p_holm, marked > 0 ? "+" : marked < 0 ? "-" : " ", t->flip);
  }
  out += fmt::format("(per task: {:.0f}% posterior intervals under Jeffreys' prior; p: Fisher's exact test, Holm-adjusted over "
                     "{} tasks; + or - marks p <= {:g})\n",
                     percent, c.tasks.size(), c.alpha());
  out += fmt::format("\noverall: means over the {} task(s) in both; {:.0f}% paired bootstrap over tasks ({} resamples, seed {})\n",
                     c.tasks.size(), percent, boot.resamples, boot.seed);
  for (size_t i = 0; i < c.overall.size(); ++i) {
    const int64_t k = c.overall[i].k;
    out += fmt::format("  pass@{}  A {:.4f} [{:.3f}, {:.3f}]  B {:.4f} [{:.3f}, {:.3f}]  B-A {}\n", k,
                       c.overall_a[i].pass_at_k.estimate, c.overall_a[i].pass_at_k.low, c.overall_a[i].pass_at_k.high,
                       c.overall_b[i].pass_at_k.estimate, c.overall_b[i].pass_at_k.low, c.overall_b[i].pass_at_k.high,
                       IntervalText(c.overall[i].pass_at_k));
    out += fmt::format("  pass^{}  A {:.4f} [{:.3f}, {:.3f}]  B {:.4f} [{:.3f}, {:.3f}]  B-A {}\n", k,
                       c.overall_a[i].pass_hat_k.estimate, c.overall_a[i].pass_hat_k.low, c.overall_a[i].pass_hat_k.high,
                       c.overall_b[i].pass_hat_k.estimate, c.overall_b[i].pass_hat_k.low, c.overall_b[i].pass_hat_k.high,
                       IntervalText(c.overall[i].pass_hat_k));
  }
  std::string gained, lost;
  for (const auto& t : c.tasks) {
    if (t.flip == "gained") gained += " " + t.task_id;
    if (t.flip == "lost") lost += " " + t.task_id;
  }
  out += fmt::format("flipped: gained (A never passed, B did):{}\n", gained.empty() ? " none" : gained);
  out += fmt::format("         lost (A passed, B never did):{}\n", lost.empty() ? " none" : lost);
  if (!c.only_a.empty() || !c.only_b.empty()) {
    const KValues& wa = c.a.report.overall_ks[0];
    const KValues& wb = c.b.report.overall_ks[0];
    out += fmt::format("not compared: {} task(s) only in A, {} only in B; whole runs, all their tasks: A pass@{} {:.4f} "
                       "over {} tasks, B pass@{} {:.4f} over {} tasks\n",
                       c.only_a.size(), c.only_b.size(), wa.k, wa.pass_at_k, c.a.report.tasks.size(), wb.k, wb.pass_at_k,
                       c.b.report.tasks.size());
  }
  const std::string notes_a = CountingNotes(c.a.report), notes_b = CountingNotes(c.b.report);
  if (!notes_a.empty()) out += "A: " + notes_a;
  if (!notes_b.empty()) out += "B: " + notes_b;
  if (c.paired_a.behaviour && c.paired_b.behaviour) {
    out += "\n" + BehaviourTable("run (tasks in both)", {&c.paired_a, &c.paired_b});
  }
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
  CompareSettings settings{options.ks, options.bootstrap};
  auto c = Compare(a, b, options.a, options.b, settings, !calls->empty());
  if (!c.ok()) return c.status();
  if (!options.html.empty()) {
    const Provenance made{{options.a, options.b}, options.stores, MadeAt(*options.env)};
    FORGE_RETURN_IF_ERROR(WriteFileAtomically(options.html, ComparePage(*c, made)));
  }
  FORGE_RETURN_IF_ERROR(options.format == Format::kTable ? Print(ComparisonToTable(*c))
                                                         : Print(ComparisonToJson(*c).dump(2) + "\n"));
  return !read_a.ok() ? read_a : read_b;
}

}  // namespace forge::verify
