// forge-dedup's embedding cache: a vector per content hash and model.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "store/store_database.h"

namespace forge::store {

class EmbeddingsTable {
 public:
  explicit EmbeddingsTable(StoreDatabase& db) : db_(db) {}

  Result<std::optional<std::vector<float>>> Get(const std::string& content_hash, const std::string& model);
  // Stores each (content hash, vector) of model in one transaction, replacing what was there.
  Status Put(const std::string& model, const std::vector<std::pair<std::string, std::vector<float>>>& items);

 private:
  StoreDatabase& db_;
};

}  // namespace forge::store
