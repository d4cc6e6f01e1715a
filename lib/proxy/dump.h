// `forge-proxy --dump-rollout ID`: the calls recorded for a rollout as JSON
// Lines on stdout, for inspecting what the proxy captured.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "store/store.h"

namespace forge::proxy {

nlohmann::json CallToJson(const store::CallRecord& call);
Status DumpRolloutCalls(const std::string& store_path, const std::string& rollout_id);

}  // namespace forge::proxy
