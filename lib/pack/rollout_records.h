// forge-pack's records: a rollout record as it reads one (launcher or
// verifier output: ids, reward, pass flag; the filters that keep or skip
// it), and the record each output format writes for a sample or a task.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "base/status.h"
#include "pack/assemble.h"
#include "pack/pack.h"
#include "records/jsonl.h"

namespace forge::pack {

struct RolloutInput {
  std::string rollout_id;
  std::string task_id;
  std::optional<double> reward;
  std::optional<bool> passed;
  // The verdict's outcome when it is neither passed nor failed (tampered,
  // infra_error, ...): its reward is 0 whatever the record says, and the
  // rollout is kept as a failure or dropped (PackOptions::untrusted).
  std::string untrusted;
  Json record;
  std::string where;
};

enum class Filter { kKept, kNotPassed, kBelowMinReward, kUntrusted };
Filter FilterOf(const RolloutInput& in, const PackOptions& o);

// Reads the fields forge-pack needs; a record without a rollout id is bad input.
Result<RolloutInput> ParseRollout(records::Record& r);

// sft-messages: the conversation, tools and the rollout's reward; with
// images, TRL's form (vl_messages.h) or, tagged, LLaMA-Factory's, and the
// images column (their files, in placeholder order).
Json SftMessagesRecord(const Sample& s, const RolloutInput& in, bool tagged = false);
// sft-tokens: ids, labels (-100 outside the loss mask) and mask; with
// images, their files and their placeholders' [offset, length].
Json SftTokensRecord(const Sample& s);
// verl-prompts: one row a task, veRL's RL dataset fields; index is the row's.
Json VerlPromptRecord(const RolloutInput& in, std::span<const store::CallRecord> calls, size_t index,
                      const PackOptions& o);

}  // namespace forge::pack
