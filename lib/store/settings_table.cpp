#include "store/settings_table.h"

#include "base/json_dump.h"

namespace forge::store {

Status TasksTable::Put(const nlohmann::json& task) {
  if (!task.contains("id") || !task["id"].is_string()) return Status::InvalidData("task has no string id");
  return db_.Write(
      "INSERT INTO tasks (id, record, created_at) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (id) DO UPDATE SET record = excluded.record",
      task["id"].get<std::string>(), DumpJson(task), Now());
}

Result<std::optional<nlohmann::json>> TasksTable::Get(const std::string& id) {
  return db_.ReadRow(
      "SELECT record FROM tasks WHERE id = ?1", [](const Statement& s) { return ParseJsonOrNull(s.Text(0)); }, id);
}

Status MetaTable::Set(const std::string& key, const std::string& value) {
  return db_.Write("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", key, value);
}

Result<std::optional<std::string>> MetaTable::Get(const std::string& key) {
  return db_.ReadRow("SELECT value FROM meta WHERE key = ?1", [](const Statement& s) { return s.Text(0); }, key);
}

Status MetaTable::Delete(const std::string& key) {
  return db_.Write("DELETE FROM meta WHERE key = ?1", key);
}

}  // namespace forge::store
