// pass@k and pass^k from n valid trials of which c passed, and the per-task
// and overall tables `forge-verify report` prints.
//
// pass@k = 1 - C(n-c, k) / C(n, k): the unbiased estimate of "at least one of
// k attempts passes" (Chen et al. 2021). pass^k = C(c, k) / C(n, k): the
// unbiased estimate of "all k attempts pass" (tau-bench). Both are computed
// as running products of ratios in [0, 1], never as binomials, so they stay
// exact enough for n in the thousands.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "verify/interval.h"
#include "verify/outcome.h"

namespace forge::verify {

using records::Json;

// Preconditions: 0 <= c <= n, 1 <= k <= n (callers refuse k > n first).
double PassAtK(int64_t n, int64_t c, int64_t k);
double PassHatK(int64_t n, int64_t c, int64_t k);

// What one verdict contributes to the tables.
struct Trial {
  std::string task_id;
  std::string harness;
  // How the metrics count it. An outcome this forge does not know (a newer
  // forge's) counts as kFailed: a valid trial that did not pass.
  Outcome outcome = Outcome::kInfraError;
  std::optional<double> reward;  // the verdict's reward, as recorded
  std::string rollout_id;        // for folding duplicates (fold.h); may be empty
  std::string outcome_name;      // as the verdict names it; empty: OutcomeName(outcome)
  bool known_outcome = true;     // false: outcome_name is not one this forge knows
  std::optional<double> threshold;  // the verdict's threshold, when recorded
  int64_t folded = 0;  // earlier verdicts of the same rollout this one replaced (fold.h)

  std::string Name() const { return outcome_name.empty() ? std::string(OutcomeName(outcome)) : outcome_name; }
  // The reward the mean counts: the verifier's, for a passed or failed trial;
  // 0 for every other valid trial. A tampered trial's reward is the agent's
  // forgery, whatever number the verdict carries (older verdicts keep the
  // verifier's 1; newer ones 0, with the claim in claimed_reward).
  double TrustedReward() const;
};

// Reads the fields report needs from a verified rollout record. InvalidData
// naming the field when one is missing or not understood. An unknown outcome
// is read (known_outcome false), not refused.
Result<Trial> TrialFromRecord(const Json& record);

struct TaskStats {
  std::string task_id;
  int64_t valid = 0;     // trials that count (not infra_error, not cancelled)
  int64_t passed = 0;
  int64_t excluded = 0;  // infra_error + cancelled
  int64_t tampered = 0;  // counted in valid, as failures
  int64_t unknown = 0;   // outcomes this forge does not know: counted in valid, as failures
  double reward_sum = 0; // over valid trials, of Trial::TrustedReward
  std::map<std::string, int64_t> outcomes;  // every trial, by outcome name

  void Add(const Trial& trial);
  double MeanReward() const { return valid > 0 ? reward_sum / valid : 0; }
};

struct KValues {
  int64_t k = 1;
  double pass_at_k = 0;
  double pass_hat_k = 0;
};

// pass@k and pass^k at one k, each with an interval around it.
struct KIntervals {
  int64_t k = 1;
  Interval pass_at_k;
  Interval pass_hat_k;
};

struct TaskRow {
  TaskStats stats;
  std::vector<KValues> ks;
};

struct Report {
  std::vector<TaskRow> tasks;  // sorted by task id
  // Overall: pass@k and pass^k are means over tasks; counts are sums.
  TaskStats overall;
  std::vector<KValues> overall_ks;
  double overall_mean_reward = 0;  // mean over tasks of each task's mean reward
  int64_t duplicates_folded = 0;   // verdicts of a rollout read again (fold.h): the trials' sum
  std::map<double, int64_t> thresholds;  // the verdicts' recorded thresholds, with how many carry each
  int64_t without_threshold = 0;         // verdicts that record none
};

// Groups trials by task and computes every k. A k larger than some task's
// valid trials is refused with InvalidData naming those tasks: a pass@k from
// fewer than k trials is undefined, and reporting 0 or 1 instead would lie.
Result<Report> BuildReport(const std::vector<Trial>& trials, const std::vector<int64_t>& ks);

Json ReportToJson(const Report& report);
// A fixed-width table for a terminal.
std::string ReportToTable(const Report& report);
// The lines under a table that say how trials were counted: excluded,
// tampered, unknown outcomes, duplicates folded (empty when none).
std::string CountingNotes(const Report& report);
// "1 (every verdict)", "0.5 (3), 1 (10)", "not recorded": the thresholds the
// verdicts were judged by.
std::string ThresholdsText(const Report& report);

}  // namespace forge::verify
