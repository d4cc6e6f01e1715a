// `forge-verify compare A B`: run B against run A (two checkpoints, two
// harnesses, two settings) on the tasks both ran. Per task and overall, the
// difference B - A in pass@k and pass^k with a bootstrap confidence interval
// (bootstrap.h), the tasks that flipped, and the behaviour of each run.
//
// - Overall: the mean over paired tasks of each task's difference; its
//   interval is a paired bootstrap over tasks (a resample draws tasks, each
//   bringing both runs' values), so it says how much the difference depends
//   on which tasks were drawn.
// - Per task: each run's valid trials are resampled on their own (the
//   attempts of two runs are not paired); the interval says how much the
//   task's difference depends on the attempts' luck. Its generator is seeded
//   from the seed and the task id.
// - Flipped: `gained` when A never passed the task and B did at least once,
//   `lost` the other way round.
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
  int64_t resamples = 10000;
  uint64_t seed = 1;
  double confidence = 0.95;
};

// B - A at one k.
struct KDiff {
  int64_t k = 1;
  Interval pass_at_k;
  Interval pass_hat_k;
};

struct TaskComparison {
  std::string task_id;
  TaskStats a, b;
  std::vector<KValues> ka, kb;
  std::vector<KDiff> diffs;
  std::string flip;  // "gained", "lost" or empty
};

struct Comparison {
  std::string label_a, label_b;
  CompareSettings settings;
  GroupReport a, b;                   // each run whole: reports, curves, behaviour
  std::vector<TaskComparison> tasks;  // the tasks both ran, by id
  std::vector<std::string> only_a, only_b;
  std::vector<KDiff> overall;
};

// The per-task interval of B - A from resampling each run's trials.
std::vector<KDiff> TaskDifference(const TaskStats& a, const TaskStats& b, const std::vector<int64_t>& ks,
                                  const CompareSettings& settings, uint64_t seed);

Result<Comparison> Compare(const std::vector<Attempt>& a, const std::vector<Attempt>& b,
                           const std::string& label_a, const std::string& label_b,
                           const CompareSettings& settings, bool with_behaviour);

records::Json ComparisonToJson(const Comparison& c);
std::string ComparisonToTable(const Comparison& c);

}  // namespace forge::verify
