// A thin RAII layer over SQLite's C API: a connection and prepared
// statements, with errors as Status. Nothing forge-specific lives here.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace forge::store {

class Statement {
 public:
  // A cached statement (Database::PrepareCached) is reset, not finalized, when done.
  Statement(sqlite3* db, sqlite3_stmt* stmt, bool cached = false) : db_(db), stmt_(stmt), cached_(cached) {}
  ~Statement();
  Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_), cached_(other.cached_) {
    other.stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds are 1-based like SQLite's; chainable.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view text);
  Statement& BindBlob(int index, std::string_view bytes);
  // The same without SQLite's copy: the caller keeps the bytes alive and
  // unchanged until this statement is done (Run, or its destruction).
  Statement& BindUnowned(int index, std::string_view text);
  Statement& BindBlobUnowned(int index, std::string_view bytes);
  Statement& BindNull(int index);

  // Advances; true while a row is available. Errors (including BUSY) come back as Status.
  Result<bool> Step();
  // Steps to completion, for statements that return no rows.
  Status Run();
  void Reset();

  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string Text(int column) const;
  std::string Blob(int column) const;
  // The column's bytes without a copy; valid until the next Step or Reset.
  std::string_view BlobView(int column) const;
  std::string_view TextView(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool cached_ = false;
};

class Database {
 public:
  static Result<Database> Open(const std::string& path, bool read_only);
  Database(Database&& other) noexcept
      : db_(other.db_), path_(std::move(other.path_)), cache_(std::move(other.cache_)) {
    other.db_ = nullptr;
    other.cache_.clear();
  }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  Result<Statement> Prepare(std::string_view sql);
  // The same, compiled once per connection and reused: for statements on a
  // hot path. One use at a time per SQL text (the store's mutex ensures it).
  Result<Statement> PrepareCached(std::string_view sql);
  // Runs one or more statements that return no rows.
  Status Execute(std::string_view sql);
  int64_t LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  const std::string& path() const { return path_; }
  sqlite3* raw() { return db_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  // Looked up by the caller's view of the SQL, with no copy of it made.
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>{}(sql); }
  };
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> cache_;
};

// BUSY and LOCKED are worth retrying; everything else is not.
bool IsBusy(const Status& status);

}  // namespace forge::store
