// What the proxy recorded, as JSON Lines on stdout: `forge-proxy
// --dump-rollout ID` (one rollout) and `--export` (every call in the store).
// Each line is a recorded call ("schema": "forge.call/1"); a file of them is
// a recorded-exchange file that `--replay FILE` serves.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "store/store.h"

namespace forge::proxy {

nlohmann::json CallToJson(const store::CallRecord& call);
Status DumpRolloutCalls(const std::string& store_path, const std::string& rollout_id);
// Every rollout's calls, rollouts in the order their first call was recorded.
Status ExportCalls(const std::string& store_path);
// One JSON line per call log beside the store (a running proxy's, or one a
// crash left): calls, request records, the offsets of records that fail
// their checksum, and whether the last one was cut short. Moves nothing
// into the store. InvalidData when a record fails.
Status CheckCallLogs(const std::string& store_path);
// The rollouts that have calls, in the order their first call was recorded.
Result<std::vector<std::string>> RolloutsWithCalls(const std::string& store_path);

}  // namespace forge::proxy
