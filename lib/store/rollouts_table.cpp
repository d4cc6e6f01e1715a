#include "store/rollouts_table.h"

namespace forge::store {
namespace {

// A query of the columns ReadRolloutRow reads, where is its WHERE clause and what follows.
std::string SelectRollouts(std::string_view where) {
  std::string sql = "SELECT id, run_id, task_id, attempt, harness, secret_hash, status, outcome, record "
                    "FROM rollouts WHERE ";
  sql.append(where);
  return sql;
}

RolloutRow ReadRolloutRow(const Statement& s) {
  RolloutRow row;
  row.id = s.Text(0);
  row.run_id = s.Text(1);
  row.task_id = s.Text(2);
  row.attempt = s.Int(3);
  row.harness = s.Text(4);
  row.secret_hash = s.Text(5);
  row.status = s.Text(6);
  row.outcome = s.Text(7);
  row.record = ParseJsonOrNull(s.Text(8));
  return row;
}

}  // namespace

Status RolloutsTable::Register(const RolloutRow& row) {
  return db_.Write(
      "INSERT INTO rollouts (id, run_id, task_id, attempt, harness, secret_hash, status, outcome, "
      "record, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10) "
      "ON CONFLICT (id) DO UPDATE SET secret_hash = excluded.secret_hash, status = excluded.status, "
      "harness = excluded.harness, updated_at = excluded.updated_at",
      row.id, row.run_id, row.task_id, row.attempt, row.harness, TextOrNull(row.secret_hash),
      row.status.empty() ? std::string("registered") : row.status, TextOrNull(row.outcome), JsonOrNull(row.record),
      Now());
}

Status RolloutsTable::Update(const std::string& id, const std::string& status, const std::string& outcome,
                             const nlohmann::json& record) {
  return db_.WriteTransaction([&]() -> Status {
    FORGE_RETURN_IF_ERROR(
        db_.Run("UPDATE rollouts SET status = ?2, outcome = ?3, record = ?4, updated_at = ?5 WHERE id = ?1", id,
                status, TextOrNull(outcome), JsonOrNull(record), Now()));
    if (db_.connection().Changes() == 0) return Status::InvalidData("no rollout " + id + " in " + db_.path());
    return Status::Ok();
  });
}

Result<std::optional<RolloutRow>> RolloutsTable::Get(const std::string& id) {
  return db_.ReadRow(SelectRollouts("id = ?1"), ReadRolloutRow, id);
}

Result<std::vector<RolloutRow>> RolloutsTable::OfRun(const std::string& run_id) {
  std::vector<RolloutRow> rows;
  Status s = db_.ForEachRow(
      SelectRollouts("run_id = ?1 ORDER BY task_id, attempt"),
      [&](const Statement& row) { rows.push_back(ReadRolloutRow(row)); }, run_id);
  if (!s.ok()) return s;
  return rows;
}

Result<std::optional<RolloutRow>> RolloutsTable::BySecretHash(const std::string& secret_hash) {
  return db_.ReadRow(SelectRollouts("secret_hash = ?1"), ReadRolloutRow, secret_hash);
}

}  // namespace forge::store
