// Replay: serve a past run's recorded responses, matched by the client's
// request (its JSON with "stream" removed, hashed), so a harness can be
// re-run offline against a past rollout without a policy server.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::proxy {

class ReplayIndex {
 public:
  static Result<std::unique_ptr<ReplayIndex>> Load(const std::string& store_path);
  static std::string RequestKey(const std::string& client_format, const nlohmann::json& request);

  // The recorded chat-form response for this request, or nullptr.
  const nlohmann::json* Find(const std::string& key) const;
  size_t size() const { return responses_.size(); }
  const std::vector<std::string>& models() const { return models_; }

 private:
  std::unordered_map<std::string, nlohmann::json> responses_;
  std::vector<std::string> models_;
};

// The chunks a stream of this whole chat response would have carried, for
// replaying a recorded response to a streaming client.
std::vector<nlohmann::json> ChatResponseToChunks(const nlohmann::json& response);

}  // namespace forge::proxy
