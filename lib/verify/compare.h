// `forge-verify compare A B`: run B against run A (two checkpoints, two
// harnesses, two settings) on the tasks both ran. Every figure shown beside
// a difference is over the same tasks as the difference.
//
// - Overall: A's and B's means over the paired tasks and their difference
//   B - A (the mean of the tasks' differences), with one paired bootstrap
//   over tasks (bootstrap.h: a resample draws tasks, each bringing both runs'
//   values) giving all three intervals from the same resamples.
// - Per task: each run's level and B - A with posterior intervals
//   (posterior.h: Jeffreys' prior, right at small n), and Fisher's exact test
//   with Holm's adjustment over the tasks compared (significance.h), which
//   alone decides whether a task is marked as a gain or a loss.
// - Flipped: `gained` when A never passed the task and B did at least once,
//   `lost` the other way round.
// Each run's whole report (all its tasks) is kept too, labelled as such.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "verify/attempts.h"
#include "verify/bootstrap.h"
#include "verify/report_groups.h"

namespace forge::verify {

struct CompareSettings {
  std::vector<int64_t> ks = {1};
  BootstrapSettings bootstrap;
};

struct TaskComparison {
  std::string task_id;
  TaskStats a, b;
  std::vector<KIntervals> level_a, level_b;  // each run's pass@k and pass^k, posterior intervals
  std::vector<KIntervals> diffs;             // B - A, posterior intervals
  double p_value = 1;  // Fisher's exact test of equal pass rates
  double p_holm = 1;   // Holm-adjusted over the tasks compared
  std::string flip;    // "gained", "lost" or empty

  // B's pass rate minus A's (pass@1's difference).
  double RateDifference() const;
  // +1 (a gain) or -1 (a loss) when the Holm-adjusted p-value is at most
  // alpha; 0 otherwise.
  int Marked(double alpha) const;
};

struct Comparison {
  std::string label_a, label_b;
  CompareSettings settings;
  GroupReport a, b;                // each run whole, all its tasks
  GroupReport paired_a, paired_b;  // each run over the tasks both ran
  std::vector<TaskComparison> tasks;  // the tasks both ran, by id
  std::vector<std::string> only_a, only_b;
  // Over the paired tasks, from one paired bootstrap: A, B and B - A.
  std::vector<KIntervals> overall_a, overall_b, overall;

  double alpha() const { return 1 - settings.bootstrap.confidence; }
  // The tasks by B - A, largest gain first (ties by id): in pass@k, or
  // pass^k when `hat`, at the k of index `at`.
  std::vector<const TaskComparison*> ByDifference(size_t at = 0, bool hat = false) const;
};

Result<Comparison> Compare(const std::vector<Attempt>& a, const std::vector<Attempt>& b,
                           const std::string& label_a, const std::string& label_b,
                           const CompareSettings& settings, bool with_behaviour);

records::Json ComparisonToJson(const Comparison& c);
std::string ComparisonToTable(const Comparison& c);

}  // namespace forge::verify
