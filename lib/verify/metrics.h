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
  Outcome outcome = Outcome::kInfraError;
  std::optional<double> reward;
  std::string rollout_id;  // for folding duplicates (fold.h); may be empty
};

// Reads the fields report needs from a verified rollout record. InvalidData
// naming the field when one is missing or not understood.
Result<Trial> TrialFromRecord(const Json& record);

struct TaskStats {
  std::string task_id;
  int64_t valid = 0;     // trials that count (not infra_error, not cancelled)
  int64_t passed = 0;
  int64_t excluded = 0;  // infra_error + cancelled
  int64_t tampered = 0;  // counted in valid, as failures
  double reward_sum = 0; // over valid trials; a valid trial without a reward adds 0
  std::map<std::string, int64_t> outcomes;  // every trial, by outcome name

  void Add(const Trial& trial);
  double MeanReward() const { return valid > 0 ? reward_sum / valid : 0; }
};

struct KValues {
  int64_t k = 1;
  double pass_at_k = 0;
  double pass_hat_k = 0;
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
  int64_t duplicates_folded = 0;   // verdicts of a rollout read again (fold.h)
};

// Groups trials by task and computes every k. A k larger than some task's
// valid trials is refused with InvalidData naming those tasks: a pass@k from
// fewer than k trials is undefined, and reporting 0 or 1 instead would lie.
Result<Report> BuildReport(const std::vector<Trial>& trials, const std::vector<int64_t>& ks);

Json ReportToJson(const Report& report);
// A fixed-width table for a terminal.
std::string ReportToTable(const Report& report);

}  // namespace forge::verify
