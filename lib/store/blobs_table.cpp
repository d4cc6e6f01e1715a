#include "store/blobs_table.h"

#include <xxhash.h>
#if defined(__x86_64__)
// XXH3 with the widest vectors this CPU has, as for the call log's checksums.
#include <xxh_x86dispatch.h>
#endif

#include "base/json_dump.h"
#include "store/blob_codec.h"
#include "store/content.h"

namespace forge::store {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

BlobsTable::BlobsTable(StoreDatabase& db) : db_(db) { db_.AddObserver(this); }

Result<std::string> BlobsTable::PutContent(const nlohmann::json& value) {
  if (value.is_null()) return std::string();
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  auto skeleton = Split(value, [this](std::string_view part) { return PutPart(part); });
  if (!skeleton.ok()) return skeleton.status();
  return DumpJson(*skeleton);
}

Result<std::string> BlobsTable::PutContentText(std::string_view text) {
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  return SplitText(text, [this](std::string_view part) { return PutPart(part); });
}

Result<nlohmann::json> BlobsTable::GetContent(const std::string& skeleton_text) {
  if (skeleton_text.empty()) return nlohmann::json(nullptr);
  nlohmann::json skeleton = nlohmann::json::parse(skeleton_text, nullptr, false);
  if (skeleton.is_discarded()) return Status::InvalidData(db_.path() + ": corrupt call content");
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  auto value = Join(skeleton, [this](int64_t id) { return GetBlob(id); });
  if (!value.ok()) return value.status().Prefixed(db_.path());
  return value;
}

BlobsTable::Fingerprint BlobsTable::FingerprintOf(std::string_view data) const {
  XXH128_hash_t digest = XXH3_128bits_withSeed(data.data(), data.size(), blob_seed_);
  return {digest.low64, digest.high64};
}

Result<std::string> BlobsTable::PutPart(std::string_view part) {
  Fingerprint seen = FingerprintOf(part);
  if (auto known = committed_blobs_.find(seen); known != committed_blobs_.end()) return std::to_string(known->second);
  if (auto known = committed_parts_.find(seen); known != committed_parts_.end()) return known->second;
  // The part itself (no images in it) is fingerprinted already.
  auto ref = StorePart(part, [&](std::string_view data) {
    return data.data() == part.data() && data.size() == part.size() ? PutBlob(data, seen) : PutBlob(data);
  });
  if (ref.ok() && !ref->empty() && ref->front() == '{') pending_parts_.emplace_back(seen, *ref);
  return ref;
}

Result<std::string> BlobsTable::HashOf(int64_t id) {
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  auto stmt = db_.connection().PrepareCached("SELECT hash FROM blobs WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, id);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::InvalidData(db_.path() + ": missing blob " + std::to_string(id));
  return std::string(stmt->BlobView(0));
}

Result<std::string> BlobsTable::BlobByHash(std::string_view hex) {
  std::string digest;
  for (size_t at = 0; hex.size() == 64 && at < hex.size(); at += 2) {
    int high = HexDigit(hex[at]), low = HexDigit(hex[at + 1]);
    if (high < 0 || low < 0) break;
    digest += static_cast<char>(high * 16 + low);
  }
  if (digest.size() != 32) return Status::InvalidArgument("not a SHA-256 in hex: " + std::string(hex));
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  auto stmt = db_.connection().PrepareCached("SELECT data FROM blobs WHERE hash = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindBlob(1, digest);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound(db_.path() + ": no blob " + std::string(hex));
  auto data = UnpackBlob(stmt->Blob(0));
  if (!data.ok()) return data.status().Prefixed(db_.path() + ": blob " + std::string(hex));
  return data;
}

Result<int64_t> BlobsTable::PutBlob(std::string_view data) { return PutBlob(data, FingerprintOf(data)); }

Result<int64_t> BlobsTable::PutBlob(std::string_view data, Fingerprint seen) {
  if (auto known = committed_blobs_.find(seen); known != committed_blobs_.end()) return known->second;
  auto id = InsertBlob(Sha256(data), data);
  if (id.ok()) pending_blobs_.emplace_back(seen, *id);
  return id;
}

Result<int64_t> BlobsTable::InsertBlob(const std::string& hash, std::string_view data) {
  Database& db = db_.connection();
  auto insert = db.PrepareCached("INSERT OR IGNORE INTO blobs (hash, data) VALUES (?1, ?2)");
  if (!insert.ok()) return insert.status();
  std::string stored = PackBlob(data);
  FORGE_RETURN_IF_ERROR(insert->BindBlobUnowned(1, hash).BindBlobUnowned(2, stored).Run());
  if (db.Changes() == 1) return db.LastInsertRowId();
  auto select = db.PrepareCached("SELECT id FROM blobs WHERE hash = ?1");
  if (!select.ok()) return select.status();
  select->BindBlob(1, hash);
  auto row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(db_.path() + ": blob " + Hex(hash) + " vanished");
  return select->Int(0);
}

Result<std::string> BlobsTable::GetBlob(int64_t id) {
  auto stmt = db_.connection().PrepareCached("SELECT data FROM blobs WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, id);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::InvalidData(db_.path() + ": missing blob " + std::to_string(id));
  auto text = UnpackBlob(stmt->Blob(0));
  if (!text.ok()) return text.status().Prefixed(db_.path() + ": blob " + std::to_string(id));
  return text;
}

void BlobsTable::Committed() {
  // A bound on memory, not an eviction policy: past it the cache starts over.
  constexpr size_t kMaxCachedBlobs = 1 << 16;
  if (committed_blobs_.size() + pending_blobs_.size() > kMaxCachedBlobs) committed_blobs_.clear();
  for (auto& [seen, id] : pending_blobs_) committed_blobs_.emplace(seen, id);
  pending_blobs_.clear();
  if (committed_parts_.size() + pending_parts_.size() > kMaxCachedBlobs) committed_parts_.clear();
  for (auto& [seen, ref] : pending_parts_) committed_parts_.emplace(seen, std::move(ref));
  pending_parts_.clear();
}

}  // namespace forge::store
