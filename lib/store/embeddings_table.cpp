#include "store/embeddings_table.h"

#include "store/little_endian.h"

namespace forge::store {

Result<std::optional<std::vector<float>>> EmbeddingsTable::Get(const std::string& content_hash,
                                                               const std::string& model) {
  auto read = [](const Statement& s) {
    std::vector<float> vector;
    AssignFromBytes(s.BlobView(0), &vector);
    return vector;
  };
  return db_.ReadRow("SELECT vector FROM embeddings WHERE content_hash = ?1 AND model = ?2", read, content_hash,
                     model);
}

Status EmbeddingsTable::Put(const std::string& model,
                            const std::vector<std::pair<std::string, std::vector<float>>>& items) {
  return db_.WriteTransaction([&]() -> Status {
    auto stmt = db_.connection().Prepare(
        "INSERT OR REPLACE INTO embeddings (content_hash, model, dim, vector) VALUES (?1, ?2, ?3, ?4)");
    if (!stmt.ok()) return stmt.status();
    for (const auto& [hash, vector] : items) {
      stmt->Reset();
      BindAll(*stmt, hash, model, vector.size());
      FORGE_RETURN_IF_ERROR(stmt->BindBlob(4, BytesOf(vector)).Run());
    }
    return Status::Ok();
  });
}

}  // namespace forge::store
