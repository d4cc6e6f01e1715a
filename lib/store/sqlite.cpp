#include "store/sqlite.h"

namespace forge::store {
namespace {

// A busy database is Busy (75) so that callers can tell "try again" from
// "broken"; the message keeps SQLite's own words.
Status FromSqlite(sqlite3* db, int rc, std::string_view what) {
  std::string message = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::Busy(message);
  if (primary == SQLITE_CANTOPEN) return Status::NotFound(message);
  if (primary == SQLITE_IOERR || primary == SQLITE_FULL) return Status::IoError(message);
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) return Status::InvalidData(message);
  return Status::Internal(message);
}

}  // namespace

bool IsBusy(const Status& status) { return status.kind() == Kind::kBusy; }

Statement::~Statement() {
  if (!stmt_) return;
  if (cached_) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  } else {
    sqlite3_finalize(stmt_);
  }
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::Bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement& Statement::Bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::BindBlob(int index, std::string_view bytes) {
  sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::BindUnowned(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  return *this;
}
Statement& Statement::BindBlobUnowned(int index, std::string_view bytes) {
  sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
  return *this;
}
Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status s = FromSqlite(db_, rc, sqlite3_sql(stmt_) ? std::string_view(sqlite3_sql(stmt_)).substr(0, 60) : "step");
  sqlite3_reset(stmt_);
  return s;
}

Status Statement::Run() {
  for (;;) {
    auto more = Step();
    if (!more.ok()) return more.status();
    if (!*more) return Status::Ok();
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::Text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p), n) : std::string();
}

std::string Statement::Blob(int column) const {
  const void* p = sqlite3_column_blob(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string(static_cast<const char*>(p), n) : std::string();
}

std::string_view Statement::BlobView(int column) const {
  const void* p = sqlite3_column_blob(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string_view();
}

std::string_view Statement::TextView(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  return p ? std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string_view();
}

Result<Database> Database::Open(const std::string& path, bool read_only) {
  // SQLite's allocation statistics take a global mutex on every malloc and
  // free, a lock and an unlock for each value a statement binds; nothing
  // here reads them. (Only possible before SQLite initializes: once, before
  // the first connection.)
  static const bool kNoMemoryStatistics = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
  (void)kNoMemoryStatistics;
  sqlite3* db = nullptr;
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  flags |= SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status s = FromSqlite(db, rc, path);
    sqlite3_close(db);
    return s;
  }
  sqlite3_extended_result_codes(db, 1);
  return Database(db, path);
}

Database::~Database() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Result<Statement> Database::PrepareCached(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt,
                                nullptr);
    if (rc != SQLITE_OK) return FromSqlite(db_, rc, path_);
    it = cache_.emplace(std::string(sql), stmt).first;
  }
  return Statement(db_, it->second, true);
}

Result<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return FromSqlite(db_, rc, path_);
  return Statement(db_, stmt);
}

Status Database::Execute(std::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::Busy(path_ + ": " + message);
    return Status::Internal(path_ + ": " + message);
  }
  return Status::Ok();
}

}  // namespace forge::store
