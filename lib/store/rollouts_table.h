// The rollouts forge-launch registers: each one's run, task, attempt,
// harness, the hash of its secret (what the proxy authenticates a call by),
// status and, once it ends, outcome and record.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "store/store_database.h"
#include "store/store_types.h"

namespace forge::store {

class RolloutsTable {
 public:
  explicit RolloutsTable(StoreDatabase& db) : db_(db) {}

  // Registers row (status "registered" when empty); a rollout registered
  // again (run again under its id) takes row's secret, status and harness.
  Status Register(const RolloutRow& row);
  // A registered rollout's status, outcome and record; InvalidData when no rollout has that id.
  Status Update(const std::string& id, const std::string& status, const std::string& outcome,
                const nlohmann::json& record);
  Result<std::optional<RolloutRow>> Get(const std::string& id);
  // The run's rollouts by task and attempt.
  Result<std::vector<RolloutRow>> OfRun(const std::string& run_id);
  // The rollout whose secret hashes to secret_hash (what a proxy checks per call).
  Result<std::optional<RolloutRow>> BySecretHash(const std::string& secret_hash);

 private:
  StoreDatabase& db_;
};

}  // namespace forge::store
