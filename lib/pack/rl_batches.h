// RL export: rollouts grouped by task (veRL's uid), outcome advantages per
// group broadcast to every trainable token, and samples packed best-fit
// decreasing into micro-batches of at most token_budget tokens. Each
// micro-batch is one safetensors file of flat, unpadded tensors with
// cu_seqlens (flash-attention varlen layout); one JSON index entry per file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/stop_token.h"
#include "pack/advantage.h"
#include "pack/assemble.h"
#include "pack/bin_packing.h"

namespace forge::pack {

struct RlRollout {
  std::string rollout_id;
  std::string task_id;
  double reward = 0;
  // Already validated, all with token ids. May be empty: the rollout's
  // reward still counts in its group's baseline.
  std::vector<Sample> samples;
};

struct RlOptions {
  Estimator estimator = Estimator::kGrpo;
  double epsilon = 1e-6;
  bool drop_zero_variance = false;
  int64_t token_budget = 16384;
  std::string out_dir;
  std::string file_prefix = "batch";
  std::map<std::string, std::string> metadata;  // run metadata copied into every file
  int write_threads = 2;                          // files written side by side
};

struct RlFigures {
  int64_t groups = 0;
  int64_t zero_variance_groups = 0;
  int64_t dropped_zero_variance_rollouts = 0;
  int64_t dropped_over_budget = 0;  // samples longer than the token budget
  int64_t rows = 0;
  PackingFigures packing;
};

// One row of a micro-batch, as written.
struct RlRow {
  const Sample* sample;
  float reward;
  float advantage;
};

// Computes advantages and packs; fills rows_per_bin (parallel to the bins).
std::vector<std::vector<RlRow>> PlanRlBatches(const std::vector<RlRollout>& rollouts,
                                              const RlOptions& options, RlFigures* figures);

// Writes one micro-batch file; returns its index entry.
Result<nlohmann::json> WriteRlBatch(const std::vector<RlRow>& rows, size_t batch_index,
                                    const RlOptions& options);

// Writes every micro-batch (file i from batches[i]) on options.write_threads
// threads; returns the index entries in batch order. Stops early when
// `stop` (may be null) is requested (Cancelled) or a write fails (that error).
Result<std::vector<nlohmann::json>> WriteRlBatches(const std::vector<std::vector<RlRow>>& batches,
                                                   const RlOptions& options, const StopToken* stop = nullptr);

}  // namespace forge::pack
