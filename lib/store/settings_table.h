// The store's two small keyed tables: tasks (each task's record by its id)
// and meta (small key/value settings, e.g. the proxy's policy version, and
// how far each call log has been taken into the database).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "store/store_database.h"

namespace forge::store {

class TasksTable {
 public:
  explicit TasksTable(StoreDatabase& db) : db_(db) {}

  // Stores task under its string "id", replacing the record stored before.
  Status Put(const nlohmann::json& task);
  Result<std::optional<nlohmann::json>> Get(const std::string& id);

 private:
  StoreDatabase& db_;
};

class MetaTable {
 public:
  explicit MetaTable(StoreDatabase& db) : db_(db) {}

  Status Set(const std::string& key, const std::string& value);
  Result<std::optional<std::string>> Get(const std::string& key);
  Status Delete(const std::string& key);

 private:
  StoreDatabase& db_;
};

}  // namespace forge::store
