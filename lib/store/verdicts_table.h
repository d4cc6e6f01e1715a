// forge-verify's verdicts: one per rollout, its outcome, reward and record.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "store/store_database.h"

namespace forge::store {

class VerdictsTable {
 public:
  explicit VerdictsTable(StoreDatabase& db) : db_(db) {}

  // Stores the rollout's verdict, replacing the one stored before.
  Status Put(const std::string& rollout_id, const std::string& outcome, std::optional<double> reward,
             const nlohmann::json& record);
  // The verdict's record.
  Result<std::optional<nlohmann::json>> Get(const std::string& rollout_id);

 private:
  StoreDatabase& db_;
};

}  // namespace forge::store
