#include "verify/metrics.h"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>

#include "verify/rollout_fields.h"

namespace forge::verify {

double PassAtK(int64_t n, int64_t c, int64_t k) {
  // 1 - C(n-c,k)/C(n,k) = 1 - prod_{i=n-c+1..n} (1 - k/i); when fewer than k
  // trials failed, every k-subset holds a pass.
  if (n - c < k) return 1.0;
  long double keep = 1.0L;
  for (int64_t i = n - c + 1; i <= n; ++i) keep *= 1.0L - static_cast<long double>(k) / i;
  return static_cast<double>(1.0L - keep);
}

double PassHatK(int64_t n, int64_t c, int64_t k) {
  // C(c,k)/C(n,k) = prod_{i=0..k-1} (c-i)/(n-i).
  if (c < k) return 0.0;
  long double all = 1.0L;
  for (int64_t i = 0; i < k; ++i) all *= static_cast<long double>(c - i) / (n - i);
  return static_cast<double>(all);
}

double Trial::TrustedReward() const {
  if (outcome != Outcome::kPassed && outcome != Outcome::kFailed) return 0;
  if (!known_outcome) return 0;
  return reward.value_or(0);
}

Result<Trial> TrialFromRecord(const Json& record) {
  Trial trial;
  trial.task_id = TaskIdOf(record);
  if (trial.task_id.empty()) return Status::InvalidData("task_id: missing");
  trial.harness = HarnessOf(record);
  trial.rollout_id = RolloutIdOf(record);
  auto verdict = record.find("verdict");
  if (verdict == record.end() || !verdict->is_object()) {
    return Status::InvalidData("verdict: missing (run `forge-verify run` first)");
  }
  auto outcome = verdict->find("outcome");
  if (outcome == verdict->end() || !outcome->is_string() || outcome->get<std::string>().empty()) {
    return Status::InvalidData("verdict.outcome: missing");
  }
  trial.outcome_name = outcome->get<std::string>();
  if (auto parsed = ParseOutcome(trial.outcome_name)) {
    trial.outcome = *parsed;
  } else {
    // A newer forge's outcome: a trial the agent had, which did not pass.
    trial.outcome = Outcome::kFailed;
    trial.known_outcome = false;
  }
  auto reward = verdict->find("reward");
  if (reward != verdict->end() && !reward->is_null()) {
    if (!reward->is_number()) return Status::InvalidData("verdict.reward: expected a number");
    trial.reward = reward->get<double>();
  }
  auto threshold = verdict->find("threshold");
  if (threshold != verdict->end() && threshold->is_number()) trial.threshold = threshold->get<double>();
  return trial;
}

void TaskStats::Add(const Trial& trial) {
  ++outcomes[trial.Name()];
  if (!CountsAsTrial(trial.outcome)) {
    ++excluded;
    return;
  }
  ++valid;
  if (trial.outcome == Outcome::kPassed) ++passed;
  if (trial.outcome == Outcome::kTampered) ++tampered;
  if (!trial.known_outcome) ++unknown;
  reward_sum += trial.TrustedReward();
}

Result<Report> BuildReport(const std::vector<Trial>& trials, const std::vector<int64_t>& ks) {
  for (int64_t k : ks) {
    if (k < 1) return Status::InvalidArgument("-k: " + std::to_string(k) + " is not a positive integer");
  }
  std::map<std::string, TaskStats> by_task;
  Report report;
  for (const auto& trial : trials) {
    auto& stats = by_task[trial.task_id];
    stats.task_id = trial.task_id;
    stats.Add(trial);
    report.duplicates_folded += trial.folded;
    if (trial.threshold) {
      ++report.thresholds[*trial.threshold];
    } else {
      ++report.without_threshold;
    }
  }
  if (by_task.empty()) return Status::NotFound("no verdicts to report on");

  const int64_t k_max = ks.empty() ? 0 : *std::max_element(ks.begin(), ks.end());
  std::vector<std::string> short_tasks;
  for (const auto& [id, stats] : by_task) {
    if (stats.valid < k_max) {
      short_tasks.push_back(id + " (" + std::to_string(stats.valid) + " valid)");
    }
  }
  if (!short_tasks.empty()) {
    std::string list;
    for (size_t i = 0; i < short_tasks.size() && i < 10; ++i) list += (i ? ", " : "") + short_tasks[i];
    if (short_tasks.size() > 10) list += fmt::format(" and {} more", short_tasks.size() - 10);
    return Status::InvalidData(fmt::format("k={} is larger than the valid trials of {} task(s): {}",
                                           k_max, short_tasks.size(), list));
  }

  report.overall.task_id = "(all)";
  std::vector<double> at_sum(ks.size(), 0), hat_sum(ks.size(), 0);
  double mean_sum = 0;
  for (auto& [id, stats] : by_task) {
    TaskRow row{stats, {}};
    for (size_t i = 0; i < ks.size(); ++i) {
      KValues v{ks[i], PassAtK(stats.valid, stats.passed, ks[i]),
                PassHatK(stats.valid, stats.passed, ks[i])};
      at_sum[i] += v.pass_at_k;
      hat_sum[i] += v.pass_hat_k;
      row.ks.push_back(v);
    }
    mean_sum += stats.MeanReward();
    report.overall.valid += stats.valid;
    report.overall.passed += stats.passed;
    report.overall.excluded += stats.excluded;
    report.overall.tampered += stats.tampered;
    report.overall.unknown += stats.unknown;
    report.overall.reward_sum += stats.reward_sum;
    for (const auto& [name, count] : stats.outcomes) report.overall.outcomes[name] += count;
    report.tasks.push_back(std::move(row));
  }
  const double tasks = static_cast<double>(report.tasks.size());
  for (size_t i = 0; i < ks.size(); ++i) {
    report.overall_ks.push_back({ks[i], at_sum[i] / tasks, hat_sum[i] / tasks});
  }
  report.overall_mean_reward = mean_sum / tasks;
  return report;
}

namespace {

Json StatsJson(const TaskStats& stats, const std::vector<KValues>& ks, double mean_reward) {
  Json j = {{"valid", stats.valid},
            {"passed", stats.passed},
            {"excluded", stats.excluded},
            {"tampered", stats.tampered},
            {"unknown_outcomes", stats.unknown},
            {"mean_reward", mean_reward},
            {"outcomes", stats.outcomes}};
  Json at = Json::object(), hat = Json::object();
  for (const auto& v : ks) {
    at[std::to_string(v.k)] = v.pass_at_k;
    hat[std::to_string(v.k)] = v.pass_hat_k;
  }
  j["pass_at_k"] = std::move(at);
  j["pass_hat_k"] = std::move(hat);
  return j;
}

}  // namespace

Json ReportToJson(const Report& report) {
  Json tasks = Json::array();
  for (const auto& row : report.tasks) {
    Json j = StatsJson(row.stats, row.ks, row.stats.MeanReward());
    j["task_id"] = row.stats.task_id;
    tasks.push_back(std::move(j));
  }
  Json overall = StatsJson(report.overall, report.overall_ks, report.overall_mean_reward);
  overall["tasks"] = report.tasks.size();
  overall["duplicates_folded"] = report.duplicates_folded;
  Json thresholds = Json::array();
  for (const auto& [threshold, count] : report.thresholds) thresholds.push_back({{"threshold", threshold}, {"verdicts", count}});
  overall["thresholds"] = std::move(thresholds);
  return {{"tasks", std::move(tasks)}, {"overall", std::move(overall)}};
}

namespace {

std::string OutcomeSummary(const TaskStats& stats) {
  std::string out;
  for (const auto& [name, count] : stats.outcomes) {
    if (!out.empty()) out += " ";
    out += fmt::format("{}={}", name, count);
  }
  return out;
}

}  // namespace

std::string ReportToTable(const Report& report) {
  size_t width = 20;  // "overall (N tasks)"
  for (const auto& row : report.tasks) width = std::max(width, row.stats.task_id.size());
  width = std::min<size_t>(width, 48);
  std::string out = fmt::format("{:<{}}  {:>5} {:>5} {:>4}", "task", width, "n", "pass", "excl");
  for (const auto& v : report.overall_ks) {
    out += fmt::format(" {:>8} {:>8}", fmt::format("pass@{}", v.k), fmt::format("pass^{}", v.k));
  }
  out += fmt::format(" {:>7}  outcomes\n", "reward");
  auto line = [&](const std::string& name, const TaskStats& stats, const std::vector<KValues>& ks,
                  double mean) {
    std::string shown = name.size() > width ? name.substr(0, width - 1) + "~" : name;
    std::string s = fmt::format("{:<{}}  {:>5} {:>5} {:>4}", shown, width, stats.valid,
                                stats.passed, stats.excluded);
    for (const auto& v : ks) s += fmt::format(" {:>8.4f} {:>8.4f}", v.pass_at_k, v.pass_hat_k);
    s += fmt::format(" {:>7.4f}  {}\n", mean, OutcomeSummary(stats));
    return s;
  };
  for (const auto& row : report.tasks) out += line(row.stats.task_id, row.stats, row.ks, row.stats.MeanReward());
  out += line(fmt::format("overall ({} tasks)", report.tasks.size()), report.overall,
              report.overall_ks, report.overall_mean_reward);
  return out + CountingNotes(report);
}

std::string CountingNotes(const Report& report) {
  std::string out;
  if (report.overall.excluded > 0) {
    out += fmt::format("{} trial(s) excluded as infra_error or cancelled\n", report.overall.excluded);
  }
  if (report.overall.tampered > 0) {
    out += fmt::format("{} trial(s) tampered with the verifier: counted as failed trials, reward 0\n",
                       report.overall.tampered);
  }
  if (report.overall.unknown > 0) {
    std::string names;
    for (const auto& [name, count] : report.overall.outcomes) {
      if (!ParseOutcome(name)) names += (names.empty() ? "" : ", ") + name;
    }
    out += fmt::format("{} trial(s) with an outcome this forge does not know ({}): counted as failed trials, reward 0\n",
                       report.overall.unknown, names);
  }
  if (report.duplicates_folded > 0) {
    out += fmt::format("{} duplicate verdict(s) folded: the last verdict of each rollout counts\n",
                       report.duplicates_folded);
  }
  return out;
}

std::string ThresholdsText(const Report& report) {
  if (report.thresholds.empty()) return "not recorded";
  auto number = [](double v) { return fmt::format("{:g}", v); };
  if (report.thresholds.size() == 1 && report.without_threshold == 0) {
    return number(report.thresholds.begin()->first) + " (every verdict)";
  }
  std::string out;
  for (const auto& [threshold, count] : report.thresholds) {
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", number(threshold), count);
  }
  if (report.without_threshold > 0) out += fmt::format(", none recorded ({})", report.without_threshold);
  return out;
}

}  // namespace forge::verify
