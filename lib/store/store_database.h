// The store's connection to its SQLite file (WAL mode), which several forge
// processes (proxy, launcher, verifier) read and write at once: the schema's
// migrations, write transactions (short, IMMEDIATE, retried while another
// process holds the lock), read snapshots, checkpoints, and small helpers
// that run the tables' statements. Safe to share between threads: one
// recursive mutex orders everything done on the connection.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "store/rows.h"
#include "store/sqlite.h"

namespace forge::store {

// Told how each attempt of a write transaction ends, so that a cache of what
// the transaction wrote (blob ids, prompts) keeps only what committed: ids
// SQLite gave out in an attempt that rolled back are given out again.
class TransactionObserver {
 public:
  virtual ~TransactionObserver() = default;
  virtual void Committed() = 0;
  // After an attempt fails, and before each attempt begins: nothing pending
  // from before it is to join what committed.
  virtual void RolledBack() = 0;
};

class StoreDatabase {
 public:
  StoreDatabase(Database db, int busy_timeout_ms);
  StoreDatabase(const StoreDatabase&) = delete;
  StoreDatabase& operator=(const StoreDatabase&) = delete;

  const std::string& path() const { return db_.path(); }
  int schema_version();

  // Readies a read-write connection: WAL, then the schema migrated forward
  // to target_version (the latest: LatestSchemaVersion()); cache_kib 0:
  // the call writer's page cache.
  Status SetUpWriter(int target_version, int cache_kib = 0);
  // Readies a read-only connection, which needs the latest schema.
  Status SetUpReader();

  // A read transaction held across many reads (BEGIN ... COMMIT): every read
  // sees one snapshot, and the lock is taken once rather than per query.
  // For batch readers such as forge-pack; writers are not blocked (WAL).
  Status BeginRead();
  Status EndRead();

  // Runs fn inside BEGIN IMMEDIATE ... COMMIT, retrying the whole thing while
  // another process holds the write lock. fn may run more than once.
  Status WriteTransaction(const std::function<Status()>& fn);
  // The same for a caller that holds mutex() already.
  Status WriteTransactionLocked(const std::function<Status()>& fn);
  // observer (which outlives this) hears how every write transaction ends.
  void AddObserver(TransactionObserver* observer) { observers_.push_back(observer); }

  // SQLite checkpoints the WAL inside whichever COMMIT makes it 1,000 pages
  // long: milliseconds and an fsync on that commit's caller. After this call
  // this connection's commits never do; instead due() is called (on the
  // committing thread) once the WAL is `pages` long, and another connection
  // is expected to run Checkpoint. A null due() restores SQLite's default.
  void HandOffCheckpoints(int pages, std::function<void()> due);
  // A passive checkpoint: copies what it can and never waits for a writer.
  Status Checkpoint();

  // For the tables: whoever uses connection() or a statement of it holds mutex().
  std::recursive_mutex& mutex() { return mutex_; }
  Database& connection() { return db_; }

  // Statement helpers for the tables' occasional statements (prepared on each
  // call; a hot path prepares its own with PrepareCached). Values bind to
  // ?1, ?2, ... (BindAll).
  //
  // Runs sql in a write transaction of its own.
  template <typename... Values>
  Status Write(std::string_view sql, const Values&... values) {
    return WriteTransaction([&] { return Run(sql, values...); });
  }
  // Runs sql that returns no rows; the caller holds mutex() or is in a transaction.
  template <typename... Values>
  Status Run(std::string_view sql, const Values&... values) {
    auto stmt = Query(sql, values...);
    return stmt.ok() ? stmt->Run() : stmt.status();
  }
  // The first row sql returns, as read(statement) makes it; nothing for no row.
  template <typename Read, typename... Values>
  auto ReadRow(std::string_view sql, Read read, const Values&... values)
      -> Result<std::optional<std::invoke_result_t<Read, const Statement&>>> {
    using Row = std::invoke_result_t<Read, const Statement&>;
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    auto stmt = Query(sql, values...);
    if (!stmt.ok()) return stmt.status();
    auto row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return std::optional<Row>();
    return std::optional<Row>(read(static_cast<const Statement&>(*stmt)));
  }
  // Calls each(statement) for every row sql returns.
  template <typename Each, typename... Values>
  Status ForEachRow(std::string_view sql, Each each, const Values&... values) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    auto stmt = Query(sql, values...);
    if (!stmt.ok()) return stmt.status();
    for (;;) {
      auto row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return Status::Ok();
      each(static_cast<const Statement&>(*stmt));
    }
  }
  // sql prepared, with values bound.
  template <typename... Values>
  Result<Statement> Query(std::string_view sql, const Values&... values) {
    auto stmt = db_.Prepare(sql);
    if (stmt.ok()) BindAll(*stmt, values...);
    return stmt;
  }

 private:
  Status Migrate(int target_version);
  // BEGIN IMMEDIATE, fn, COMMIT once; observers hear how it ended.
  Status TryWriteTransaction(const std::function<Status()>& fn);

  std::recursive_mutex mutex_;
  Database db_;
  int busy_timeout_ms_;
  std::vector<TransactionObserver*> observers_;
  int checkpoint_pages_ = 0;
  std::function<void()> checkpoint_due_;
};

}  // namespace forge::store
