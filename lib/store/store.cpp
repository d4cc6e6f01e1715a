#include "store/store.h"

#include <sys/stat.h>

#include "store/call_log.h"
#include "store/schema.h"

namespace forge::store {
namespace {

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

}  // namespace

Store::Store(Database db, int busy_timeout_ms) : db_(std::move(db), busy_timeout_ms) {}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, OpenOptions options) {
  if (options.read_only && HasOrphanCallLogs(path)) {
    OpenOptions writable = options;
    writable.read_only = false;
    auto recovered = Open(path, writable);
    if (!recovered.ok()) return recovered.status();
  }
  auto db = Database::Open(path, options.read_only);
  if (!db.ok()) return db.status();
  std::unique_ptr<Store> store(new Store(std::move(*db), options.busy_timeout_ms));
  if (!options.read_only) {
    int target = options.target_version < 0 ? LatestSchemaVersion() : options.target_version;
    FORGE_RETURN_IF_ERROR(store->db_.SetUpWriter(target, options.cache_kib));
    if (target >= 2) {  // the meta table
      FORGE_RETURN_IF_ERROR(RecoverCallLogs(*store).Prefixed(path));
    }
  } else {
    FORGE_RETURN_IF_ERROR(store->db_.SetUpReader());
  }
  if (store->schema_version() >= 2) {
    constexpr double kCatchUpSeconds = 5;
    FORGE_RETURN_IF_ERROR(WaitForLiveCallLogs(*store, kCatchUpSeconds).Prefixed(path));
  }
  return store;
}

Result<StoreStats> Store::Stats() {
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  StoreStats stats;
  (void)db_.connection().Execute("PRAGMA wal_checkpoint(TRUNCATE)");
  stats.file_bytes = FileSize(path()) + FileSize(path() + "-wal");
  auto stmt = db_.connection().Prepare(
      "SELECT (SELECT COUNT(*) FROM blobs), (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM blobs), "
      "(SELECT COUNT(*) FROM calls), (SELECT COALESCE(SUM(LENGTH(prompt_suffix) + LENGTH(completion_ids) + "
      "LENGTH(logprobs)), 0) FROM calls)");
  if (!stmt.ok()) return stmt.status();
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  stats.blob_count = stmt->Int(0);
  stats.blob_bytes = stmt->Int(1);
  stats.call_count = stmt->Int(2);
  stats.token_bytes = stmt->Int(3);
  return stats;
}

}  // namespace forge::store
