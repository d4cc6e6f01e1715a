// What a forge-pack run counts and how long each stage takes, for its summary
// on stderr and --stats: input lines, filters, assembly, samples dropped by
// reason, the RL packing figures, and wall and CPU seconds per stage.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "base/env.h"
#include "base/status.h"
#include "pack/assemble.h"
#include "pack/rl_batches.h"

namespace forge::pack {

// Where a run's time goes, per stage, for --stats: wall seconds, and process
// CPU seconds (all threads; what a loaded machine does not inflate).
struct StageTime {
  double wall = 0, cpu = 0;
};
struct StageTimes {
  StageTime read;      // input records, calls from the stores, prompt delta decoding
  StageTime assemble;  // merge or per-call, boundary classes, validation
  StageTime plan;      // rl: advantages and best-fit-decreasing packing
  StageTime write;     // rl: safetensors files and the index; other formats: the records
  StageTime total;
  Json ToJson(double StageTime::*field) const {
    return {{"read", read.*field}, {"assemble", assemble.*field}, {"plan", plan.*field},
            {"write", write.*field}, {"total", total.*field}};
  }
};

// CPU time by the process's clock (all threads), or by the calling thread's
// alone where two threads work on different stages at once.
class Stopwatch {
 public:
  explicit Stopwatch(clockid_t cpu_clock = CLOCK_PROCESS_CPUTIME_ID);
  // Adds the time since the start (or the last AddTo) to `stage`, and restarts.
  void AddTo(StageTime& stage);

 private:
  using Clock = std::chrono::steady_clock;
  clockid_t cpu_clock_;
  Clock::time_point wall_;
  double cpu_;
};

struct PackStats {
  int64_t records = 0;
  int64_t malformed_lines = 0;  // not JSON objects: never became records
  int64_t bad_records = 0;      // records without a field packing needs
  int64_t duplicate_rollouts = 0;
  int64_t filtered_not_passed = 0;
  int64_t filtered_below_min_reward = 0;
  int64_t rollouts_without_calls = 0;
  int64_t rollouts_without_reward = 0;
  AssemblyCounts assembly;
  std::map<std::string, int64_t> dropped;  // reason → samples
  int64_t written = 0;
  int64_t written_rollouts = 0;
  std::optional<RlFigures> rl;

  Json ToJson() const;
};

// InvalidData naming every input line that was skipped, of both kinds, so the
// count says what the file:line messages said.
Status SkippedInput(const PackStats& stats);

// The summary's lines on stderr.
void PrintSummary(const Json& summary, Env& env);

}  // namespace forge::pack
