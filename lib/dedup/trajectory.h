// The text of a rollout's trajectory, rendered from the calls the proxy
// recorded in the store, for deduplicating rollouts by what the agent did
// rather than by fields of their records.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "store/store.h"

namespace forge::dedup {

// One line per message, "role: text", in the order the conversation grew:
// each main call adds the messages its request has beyond the previous call's
// (so a prompt resent with every call counts once, and a context the harness
// compacted adds its summary), then the assistant's reply. Tool calls render as
// "name(arguments)"; content parts keep their text. Side calls (titles, token
// counting) are left out. Empty when the rollout has no main calls.
std::string RenderTrajectory(const std::vector<store::CallRecord>& calls);

Result<std::string> TrajectoryText(store::Store& store, const std::string& rollout_id);

}  // namespace forge::dedup
