// Where the fields forge-verify needs live in a rollout record. forge-launch
// writes `rollout_id` and `task_id`; records built by hand or by older tools
// may carry `id` and an embedded `task` object instead, so both are read.
#pragma once

#include <string>

#include "records/jsonl.h"

namespace forge::verify {

using records::Json;

inline constexpr const char* kRolloutSchema = "forge.rollout/1";
inline constexpr const char* kVerdictSchema = "forge.verdict/1";

// Empty when the record has none.
std::string RolloutIdOf(const Json& record);
std::string TaskIdOf(const Json& record);
std::string HarnessOf(const Json& record);

}  // namespace forge::verify
