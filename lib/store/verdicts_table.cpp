#include "store/verdicts_table.h"

#include "base/json_dump.h"

namespace forge::store {

Status VerdictsTable::Put(const std::string& rollout_id, const std::string& outcome, std::optional<double> reward,
                          const nlohmann::json& record) {
  return db_.Write(
      "INSERT INTO verdicts (rollout_id, outcome, reward, record, created_at) VALUES (?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT (rollout_id) DO UPDATE SET outcome = excluded.outcome, reward = excluded.reward, "
      "record = excluded.record, created_at = excluded.created_at",
      rollout_id, outcome, reward, DumpJson(record), Now());
}

Result<std::optional<nlohmann::json>> VerdictsTable::Get(const std::string& rollout_id) {
  return db_.ReadRow(
      "SELECT record FROM verdicts WHERE rollout_id = ?1",
      [](const Statement& s) { return ParseJsonOrNull(s.Text(0)); }, rollout_id);
}

}  // namespace forge::store
