#include "store/store_database.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "store/schema.h"

namespace forge::store {
namespace {

// A writer's page cache (SQLite's default is 2 MiB). Every new blob goes into
// the blobs' hash index at a random place, so once that index outgrows the
// cache each call reads a page back through pread(2): bench-store_append's
// 1 KB calls cost the writer 46 µs each after 200,000 calls with 2 MiB
// against 33 with this (21 after 5,000 either way). The pages are allocated
// as they are read, so a small store never holds this much.
constexpr int kWriterCacheKiB = 16 << 10;

}  // namespace

StoreDatabase::StoreDatabase(Database db, int busy_timeout_ms)
    : db_(std::move(db)), busy_timeout_ms_(busy_timeout_ms) {
  sqlite3_busy_timeout(db_.raw(), busy_timeout_ms);
}

int StoreDatabase::schema_version() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare("PRAGMA user_version");
  if (!stmt.ok()) return -1;
  auto row = stmt->Step();
  return row.ok() && *row ? static_cast<int>(stmt->Int(0)) : -1;
}

Status StoreDatabase::SetUpWriter(int target_version, int cache_kib) {
  // WAL lets readers run beside the one writer; NORMAL sync in WAL mode
  // is durable against a process crash, which is what the proxy promises.
  Status s = db_.Execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=" +
                         std::to_string(-(cache_kib > 0 ? cache_kib : kWriterCacheKiB)));
  if (!s.ok()) return s.Prefixed("opening store");
  return Migrate(target_version);
}

Status StoreDatabase::SetUpReader() {
  // Readers (forge-pack, forge-dedup) scan much of the file: map it
  // rather than copy every page through read(2).
  (void)db_.Execute("PRAGMA mmap_size=17179869184");
  int version = schema_version();
  if (version != LatestSchemaVersion()) {
    return Status::InvalidData(path() + ": store schema version " + std::to_string(version) +
                               " (expected " + std::to_string(LatestSchemaVersion()) +
                               "); open it read-write once to migrate");
  }
  return Status::Ok();
}

Status StoreDatabase::Migrate(int target_version) {
  const auto& migrations = Migrations();
  if (target_version > static_cast<int>(migrations.size())) {
    return Status::Internal("no schema version " + std::to_string(target_version));
  }
  for (;;) {
    int current = schema_version();
    if (current < 0) return Status::InvalidData(path() + ": not a forge store (cannot read user_version)");
    if (current > LatestSchemaVersion()) {
      return Status::InvalidData(path() + ": store schema version " + std::to_string(current) +
                                 " is newer than this forge (" + std::to_string(LatestSchemaVersion()) + ")");
    }
    if (current >= target_version) return Status::Ok();
    // Another process may migrate at the same moment: re-check the version
    // inside the write transaction so each step is applied exactly once.
    Status s = WriteTransaction([&]() -> Status {
      if (schema_version() != current) return Status::Ok();
      FORGE_RETURN_IF_ERROR(db_.Execute(migrations[current]));
      return db_.Execute("PRAGMA user_version = " + std::to_string(current + 1));
    });
    if (!s.ok()) return s.Prefixed("migrating " + path() + " to schema " + std::to_string(current + 1));
  }
}

Status StoreDatabase::BeginRead() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return db_.Execute("BEGIN");
}

Status StoreDatabase::EndRead() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return db_.Execute("COMMIT");
}

Status StoreDatabase::WriteTransaction(const std::function<Status()>& fn) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return WriteTransactionLocked(fn);
}

Status StoreDatabase::WriteTransactionLocked(const std::function<Status()>& fn) {
  // busy_timeout already waits inside SQLite; this loop covers the cases it
  // does not (a BUSY on COMMIT, or a deadlock-avoidance BUSY) with backoff.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_ * 3);
  int delay_ms = 1;
  for (;;) {
    Status s = TryWriteTransaction(fn);
    if (s.ok() || !IsBusy(s) || std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 100);
  }
}

Status StoreDatabase::TryWriteTransaction(const std::function<Status()>& fn) {
  // Compiled once: the proxy commits a transaction per call.
  auto run = [this](std::string_view sql) -> Status {
    auto stmt = db_.PrepareCached(sql);
    return stmt.ok() ? stmt->Run() : stmt.status();
  };
  // Whatever an earlier attempt (or a write outside any) left pending is void.
  for (TransactionObserver* observer : observers_) observer->RolledBack();
  Status s = run("BEGIN IMMEDIATE");
  if (s.ok()) {
    s = fn();
    if (s.ok()) s = run("COMMIT");
    if (s.ok()) {
      for (TransactionObserver* observer : observers_) observer->Committed();
      return s;
    }
    (void)run("ROLLBACK");
  }
  for (TransactionObserver* observer : observers_) observer->RolledBack();
  return s;
}

void StoreDatabase::HandOffCheckpoints(int pages, std::function<void()> due) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  checkpoint_pages_ = pages;
  checkpoint_due_ = std::move(due);
  if (!checkpoint_due_) {
    sqlite3_wal_autocheckpoint(db_.raw(), 1000);  // back to SQLite's default
    return;
  }
  // A WAL hook replaces SQLite's automatic checkpoint (which is one itself).
  sqlite3_wal_hook(
      db_.raw(),
      [](void* self, sqlite3*, const char*, int frames) {
        auto* db = static_cast<StoreDatabase*>(self);
        if (frames >= db->checkpoint_pages_) db->checkpoint_due_();
        return SQLITE_OK;
      },
      this);
}

Status StoreDatabase::Checkpoint() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  int rc = sqlite3_wal_checkpoint_v2(db_.raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  if (rc == SQLITE_OK || rc == SQLITE_BUSY) return Status::Ok();  // busy: the next one catches up
  return Status::Unavailable(path() + ": checkpoint: " + sqlite3_errmsg(db_.raw()));
}

}  // namespace forge::store
