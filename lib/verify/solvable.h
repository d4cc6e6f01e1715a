// The task-construction check. Rollouts of the same tasks by an oracle
// (running solution/solve.sh), a no-op agent and one or more models give
// per-task flags:
//   broken_environment  the oracle did not pass every valid trial
//   trivial             the no-op agent passed at least once
//   unsolved            every model's pass@k is 0
//   saturated           every model's pass^k is 1
// Harnesses are told apart by the rollout record's "harness" field.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "verify/metrics.h"

namespace forge::verify {

struct SolvableOptions {
  std::string oracle_harness = "oracle";
  std::string nop_harness = "nop";
  int64_t k = 1;
};

struct HarnessCounts {
  int64_t valid = 0;
  int64_t passed = 0;
  int64_t excluded = 0;
};

struct SolvableRow {
  std::string task_id;
  HarnessCounts oracle, nop;
  std::map<std::string, HarnessCounts> models;
  std::map<std::string, KValues> model_k;  // per model harness
  std::vector<std::string> flags;
};

// InvalidData naming the tasks when some model harness has fewer than k valid
// trials of a task.
Result<std::vector<SolvableRow>> CheckSolvable(const std::vector<Trial>& trials,
                                               const SolvableOptions& options);

records::Json SolvableToJson(const SolvableRow& row, int64_t k);
std::string SolvableToTable(const std::vector<SolvableRow>& rows, int64_t k);

// Broken or trivial tasks are defects of the task; unsolved and saturated
// ones are facts about the model.
bool HasDefect(const SolvableRow& row);

}  // namespace forge::verify
