// Splits a JSON request or response into content-addressed parts: each
// element of a top-level array (a message, a tool, an input item) and each
// large top-level value becomes a blob stored once under its SHA-256; what is
// left is a small skeleton that names them. Harnesses resend the whole
// conversation on every call, so successive calls share almost all parts.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::store {

struct SplitContent {
  nlohmann::json skeleton;
  std::vector<std::pair<std::string, std::string>> blobs;  // hash, serialized JSON
};

SplitContent Split(const nlohmann::json& value);

// Rebuilds the value from a skeleton, fetching each part by hash.
Result<nlohmann::json> Join(const nlohmann::json& skeleton,
                            const std::function<Result<std::string>(const std::string&)>& fetch);

}  // namespace forge::store
