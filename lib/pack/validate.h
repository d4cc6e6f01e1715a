// Checks every sample before it is written: the failures each stack reports
// most (an all-zero mask that trains on nothing, a stop token the model never
// learns to emit, rows the trainer would truncate) are caught here and
// counted by reason instead of surfacing as a silent training bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "pack/assemble.h"

namespace forge::pack {

struct ValidationOptions {
  size_t min_tokens = 0;  // 0: no lower bound
  size_t max_tokens = 0;  // 0: no upper bound
  std::set<int32_t> stop_ids;  // when set, the last trainable token must be one of these
  bool require_logprobs = false;
};

// Empty when the sample is good, else the reason it is dropped:
//   no_trainable_tokens, last_token_not_trainable, not_stopped (the last call
//   ended for a reason other than stop/tool_calls, e.g. length),
//   not_stop_token, too_short, too_long, logprobs_missing,
//   no_assistant_message (message-built samples).
std::string InvalidReason(const Sample& sample, const ValidationOptions& options);

// finish_reason values that mean the model sampled its own stop token.
bool IsStopFinish(const std::string& finish_reason);

}  // namespace forge::pack
