// forge-pack's pipeline: read rollout/verdict records, join each rollout's
// recorded calls from one or more stores, assemble and validate samples,
// and write one output format. Everything counted along the way (breaks,
// drops by reason, packing figures) ends up in one stats object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "pack/advantage.h"
#include "pack/assemble.h"
#include "pack/validate.h"
#include "pack/vision.h"
#include "records/jsonl.h"

namespace forge::pack {

// kSftMessages writes TRL's form when a sample has images (typed image parts
// and an images column); kSftImageTags LLaMA-Factory's ("<image>" tags).
enum class Format { kSftMessages, kSftTokens, kRl, kVerlPrompts, kSftImageTags };
enum class Untrusted { kFail, kDrop };

struct PackOptions {
  Env* env = nullptr;               // required: reports, the stop
  std::vector<std::string> inputs;  // JSONL; "-" is stdin
  std::vector<std::string> stores;  // searched in order; the first holding a rollout's calls wins
  AssemblyMode mode = AssemblyMode::kMerge;
  Format format = Format::kSftMessages;
  bool passed_only = false;
  std::optional<double> min_reward;
  // A rollout whose verdict is neither passed nor failed (tampered,
  // infra_error, ...): kept as a failure (reward 0) or dropped.
  Untrusted untrusted = Untrusted::kFail;
  ValidationOptions validation;
  Estimator estimator = Estimator::kGrpo;
  bool drop_zero_variance = false;
  std::optional<int64_t> max_staleness;
  std::optional<int64_t> policy_version;  // default: the newest policy_version_end seen
  int64_t token_budget = 16384;
  int write_threads = 2;  // rl: files written side by side
  std::string out_dir;
  // Where the samples' images are written, once each, named by hash
  // (default: out_dir/images); and the processor whose placeholders the
  // recorded ids are checked against (none: not checked).
  std::string images_dir;
  std::optional<ProcessorSpec> processor;
  std::string stats_path;
  std::string data_source = "forge";
  bool strict = false;
  bool quiet = false;
};

// Writes records (or the RL index) to out; the summary to options.env unless
// quiet; stats to stats_path when set. Bad input lines are reported with
// file:line, skipped, and make the result InvalidData after all output is written.
Status RunPack(const PackOptions& options, records::JsonlWriter& out);

}  // namespace forge::pack
