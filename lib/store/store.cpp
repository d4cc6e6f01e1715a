#include "store/store.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include <xxhash.h>
#if defined(__x86_64__)
// XXH3 with the widest vectors this CPU has, as for the call log's checksums.
#include <xxh_x86dispatch.h>
#endif

#include "base/hash.h"
#include "base/json_dump.h"
#include "base/json_scan.h"
#include "store/blob_codec.h"
#include "store/call_log.h"
#include "store/content.h"
#include "store/little_endian.h"
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

double Now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

Json ParseJsonOrNull(const std::string& text) {
  if (text.empty()) return nullptr;
  auto value = ReadStoredJson(text, "");
  return value.ok() && !value->is_discarded() ? std::move(*value) : Json(nullptr);
}

// The text without surrounding space if it is one JSON value; else empty.
std::string_view ValidJsonOrEmpty(std::string_view text) {
  if (text.empty() || JsonSyntaxError(text)) return {};
  return TrimJson(text);
}

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
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

// Empties what a token read does not fill, keeping the buffers for reuse.
void ClearForTokens(CallRecord& c) {
  c.started_at = c.first_token_at = c.ended_at = 0;
  for (std::string* text : {&c.client_format, &c.upstream, &c.model, &c.retry_key, &c.request_text,
                            &c.request_skeleton, &c.response_text, &c.upstream_response_text,
                            &c.upstream_request_patch_text, &c.upstream_request_text, &c.usage_text}) {
    text->clear();
  }
  for (Json* value : {&c.request, &c.response, &c.upstream_request, &c.upstream_response, &c.usage,
                      &c.upstream_request_patch}) {
    if (!value->is_null()) *value = nullptr;
  }
}

constexpr const char* kRolloutColumns =
    "id, run_id, task_id, attempt, harness, secret_hash, status, outcome, record";

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, OpenOptions options) {
  if (options.read_only && HasOrphanCallLogs(path)) {
    OpenOptions writable = options;
    writable.read_only = false;
    auto recovered = Open(path, writable);
    if (!recovered.ok()) return recovered.status();
  }
  auto db = Database::Open(path, options.read_only);
  if (!db.ok()) return db.status();
  std::unique_ptr<Store> store(new Store(std::move(*db)));
  store->busy_timeout_ms_ = options.busy_timeout_ms;
  sqlite3_busy_timeout(store->db_.raw(), options.busy_timeout_ms);
  if (!options.read_only) {
    // WAL lets readers run beside the one writer; NORMAL sync in WAL mode
    // is durable against a process crash, which is what the proxy promises.
    Status s = store->db_.Execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=" +
                                  std::to_string(-kWriterCacheKiB));
    if (!s.ok()) return s.Prefixed("opening store");
    int target = options.target_version < 0 ? LatestSchemaVersion() : options.target_version;
    FORGE_RETURN_IF_ERROR(store->Migrate(target));
    if (target >= 2) {  // the meta table
      FORGE_RETURN_IF_ERROR(RecoverCallLogs(*store).Prefixed(path));
    }
  } else {
    // Readers (forge-pack, forge-dedup) scan much of the file: map it
    // rather than copy every page through read(2).
    (void)store->db_.Execute("PRAGMA mmap_size=17179869184");
    int version = store->schema_version();
    if (version != LatestSchemaVersion()) {
      return Status::InvalidData(path + ": store schema version " + std::to_string(version) +
                             " (expected " + std::to_string(LatestSchemaVersion()) +
                             "); open it read-write once to migrate");
    }
  }
  if (store->schema_version() >= 2) {
    constexpr double kCatchUpSeconds = 5;
    FORGE_RETURN_IF_ERROR(WaitForLiveCallLogs(*store, kCatchUpSeconds).Prefixed(path));
  }
  return store;
}

int Store::schema_version() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare("PRAGMA user_version");
  if (!stmt.ok()) return -1;
  auto row = stmt->Step();
  return row.ok() && *row ? static_cast<int>(stmt->Int(0)) : -1;
}

Status Store::Migrate(int target_version) {
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

Status Store::BeginRead() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return db_.Execute("BEGIN");
}

Status Store::EndRead() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return db_.Execute("COMMIT");
}

Status Store::WriteTransaction(const std::function<Status()>& fn) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return WriteTransactionLocked(fn);
}

void Store::HandOffCheckpoints(int pages, std::function<void()> due) {
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
        auto* store = static_cast<Store*>(self);
        if (frames >= store->checkpoint_pages_) store->checkpoint_due_();
        return SQLITE_OK;
      },
      this);
}

Status Store::Checkpoint() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  int rc = sqlite3_wal_checkpoint_v2(db_.raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  if (rc == SQLITE_OK || rc == SQLITE_BUSY) return Status::Ok();  // busy: the next one catches up
  return Status::Unavailable(path() + ": checkpoint: " + sqlite3_errmsg(db_.raw()));
}

Status Store::WriteTransactionLocked(const std::function<Status()>& fn) {
  // busy_timeout already waits inside SQLite; this loop covers the cases it
  // does not (a BUSY on COMMIT, or a deadlock-avoidance BUSY) with backoff.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_ * 3);
  int delay_ms = 1;
  // Compiled once: the proxy commits a transaction per call.
  auto run = [this](std::string_view sql) -> Status {
    auto stmt = db_.PrepareCached(sql);
    return stmt.ok() ? stmt->Run() : stmt.status();
  };
  for (;;) {
    // Ids of an attempt that rolled back never join: SQLite hands them out again.
    pending_blobs_.clear();
    recent_prompts_.DiscardPending();
    Status s = run("BEGIN IMMEDIATE");
    if (s.ok()) {
      s = fn();
      if (s.ok()) s = run("COMMIT");
      if (s.ok()) {
        RememberCommittedBlobs();
        recent_prompts_.Commit();
        return s;
      }
      (void)run("ROLLBACK");
    }
    if (!IsBusy(s) || std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 100);
  }
}

Status Store::PutTask(const Json& task) {
  if (!task.contains("id") || !task["id"].is_string()) return Status::InvalidData("task has no string id");
  return WriteTransaction([&]() -> Status {
    auto stmt = db_.Prepare(
        "INSERT INTO tasks (id, record, created_at) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (id) DO UPDATE SET record = excluded.record");
    if (!stmt.ok()) return stmt.status();
    return stmt->Bind(1, task["id"].get<std::string>()).Bind(2, DumpJson(task)).Bind(3, Now()).Run();
  });
}

Result<std::optional<Json>> Store::GetTask(const std::string& id) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare("SELECT record FROM tasks WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, id);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<Json>();
  return std::optional<Json>(ParseJsonOrNull(stmt->Text(0)));
}

Status Store::RegisterRollout(const RolloutRow& row) {
  return WriteTransaction([&]() -> Status {
    auto stmt = db_.Prepare(
        "INSERT INTO rollouts (id, run_id, task_id, attempt, harness, secret_hash, status, outcome, "
        "record, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10) "
        "ON CONFLICT (id) DO UPDATE SET secret_hash = excluded.secret_hash, status = excluded.status, "
        "harness = excluded.harness, updated_at = excluded.updated_at");
    if (!stmt.ok()) return stmt.status();
    stmt->Bind(1, row.id).Bind(2, row.run_id).Bind(3, row.task_id).Bind(4, row.attempt).Bind(5, row.harness);
    if (row.secret_hash.empty()) stmt->BindNull(6); else stmt->Bind(6, row.secret_hash);
    stmt->Bind(7, row.status.empty() ? std::string("registered") : row.status);
    if (row.outcome.empty()) stmt->BindNull(8); else stmt->Bind(8, row.outcome);
    if (row.record.is_null()) stmt->BindNull(9); else stmt->Bind(9, DumpJson(row.record));
    stmt->Bind(10, Now());
    return stmt->Run();
  });
}

Status Store::UpdateRollout(const std::string& id, const std::string& status, const std::string& outcome,
                            const Json& record) {
  return WriteTransaction([&]() -> Status {
    auto stmt = db_.Prepare(
        "UPDATE rollouts SET status = ?2, outcome = ?3, record = ?4, updated_at = ?5 WHERE id = ?1");
    if (!stmt.ok()) return stmt.status();
    stmt->Bind(1, id).Bind(2, status);
    if (outcome.empty()) stmt->BindNull(3); else stmt->Bind(3, outcome);
    if (record.is_null()) stmt->BindNull(4); else stmt->Bind(4, DumpJson(record));
    FORGE_RETURN_IF_ERROR(stmt->Bind(5, Now()).Run());
    if (db_.Changes() == 0) return Status::InvalidData("no rollout " + id + " in " + path());
    return Status::Ok();
  });
}

Result<std::optional<RolloutRow>> Store::GetRollout(const std::string& id) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare(std::string("SELECT ") + kRolloutColumns + " FROM rollouts WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, id);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<RolloutRow>();
  return std::optional<RolloutRow>(ReadRolloutRow(*stmt));
}

Result<std::vector<RolloutRow>> Store::RolloutsOfRun(const std::string& run_id) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare(std::string("SELECT ") + kRolloutColumns +
                          " FROM rollouts WHERE run_id = ?1 ORDER BY task_id, attempt");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, run_id);
  std::vector<RolloutRow> rows;
  for (;;) {
    auto row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return rows;
    rows.push_back(ReadRolloutRow(*stmt));
  }
}

Result<std::optional<RolloutRow>> Store::RolloutBySecretHash(const std::string& secret_hash) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare(std::string("SELECT ") + kRolloutColumns + " FROM rollouts WHERE secret_hash = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, secret_hash);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<RolloutRow>();
  return std::optional<RolloutRow>(ReadRolloutRow(*stmt));
}

void Store::RememberCommittedBlobs() {
  // A bound on memory, not an eviction policy: past it the cache starts over.
  constexpr size_t kMaxCachedBlobs = 1 << 16;
  if (committed_blobs_.size() + pending_blobs_.size() > kMaxCachedBlobs) committed_blobs_.clear();
  for (auto& [seen, id] : pending_blobs_) committed_blobs_.emplace(seen, id);
  pending_blobs_.clear();
}

Result<Store::SetAside> Store::SetAsideCalls(const std::string& rollout_id, std::optional<double> started_before,
                                            const std::string& into) {
  SetAside moved;
  Status s = WriteTransaction([&]() -> Status {
    moved = {};
    auto count = db_.Prepare("SELECT COUNT(*), COALESCE(MAX(seq) + 1, 0) FROM calls WHERE rollout_id = ?1 "
                             "AND (?2 IS NULL OR started_at < ?2)");
    if (!count.ok()) return count.status();
    // How many calls rollout has (that started before `before`), and the seq after its last.
    auto calls_of = [&](const std::string& rollout, std::optional<double> before) -> Result<std::pair<int64_t, int64_t>> {
      count->Reset();
      count->Bind(1, rollout);
      if (before) count->Bind(2, *before); else count->BindNull(2);
      auto row = count->Step();
      if (!row.ok()) return row.status();
      return std::pair{count->Int(0), count->Int(1)};
    };
    auto n = calls_of(rollout_id, started_before);
    if (!n.ok()) return n.status();
    if (n->first == 0) return Status::Ok();
    moved = {into, n->first};
    for (int k = 1; moved.rollout_id.empty(); ++k) {
      auto taken = calls_of(rollout_id + "~" + std::to_string(k), std::nullopt);
      if (!taken.ok()) return taken.status();
      if (taken->first == 0) moved.rollout_id = rollout_id + "~" + std::to_string(k);
    }
    // Numbered past the calls already there: (rollout_id, seq) is unique.
    auto there = calls_of(moved.rollout_id, std::nullopt);
    if (!there.ok()) return there.status();
    auto update = db_.Prepare("UPDATE calls SET rollout_id = ?2, seq = seq + ?3 WHERE rollout_id = ?1 "
                              "AND (?4 IS NULL OR started_at < ?4)");
    if (!update.ok()) return update.status();
    update->Bind(1, rollout_id).Bind(2, moved.rollout_id).Bind(3, there->second);
    if (started_before) update->Bind(4, *started_before); else update->BindNull(4);
    return update->Run();
  });
  if (!s.ok()) return s;
  return moved;
}

Result<std::vector<int32_t>> Store::PromptIdsOfCall(int64_t id) {
  // The chain of bases down to a call stored whole; a base is always an
  // earlier call (a smaller id), which also ends a loop in a damaged store.
  struct Link {
    size_t prefix;
    std::string suffix;
  };
  std::vector<Link> chain;
  for (int64_t at = id;;) {
    auto stmt = db_.PrepareCached("SELECT prompt_base_call, prompt_prefix_len, prompt_suffix FROM calls WHERE id = ?1");
    if (!stmt.ok()) return stmt.status();
    stmt->Bind(1, at);
    auto row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::InvalidData("its base call " + std::to_string(at) + " is missing");
    int64_t base = stmt->IsNull(0) ? 0 : stmt->Int(0);
    chain.push_back({base ? static_cast<size_t>(stmt->Int(1)) : 0, stmt->Blob(2)});
    if (base == 0) break;
    if (base >= at) return Status::InvalidData("its base call " + std::to_string(at) + " refers to a later call");
    at = base;
  }
  std::vector<int32_t> ids;
  for (auto link = chain.rbegin(); link != chain.rend(); ++link) {
    if (ids.size() < link->prefix) return Status::InvalidData("its base's ids are too few");
    ids.resize(link->prefix);
    std::vector<int32_t> suffix;
    AssignFromBytes(link->suffix, &suffix);
    ids.insert(ids.end(), suffix.begin(), suffix.end());
  }
  return ids;
}

Result<const std::vector<int32_t>*> Store::PromptBase(int64_t call, int64_t base_id, size_t prefix,
                                                     const std::vector<int32_t>* found,
                                                     std::vector<int32_t>& elsewhere) {
  auto broken = [&](const Status& why) {
    if (why.kind() != Kind::kInvalidData) return why;  // the database failed, not the data
    return Status::InvalidData(path() + ": call " + std::to_string(call) + " has a broken prompt delta: " + why.message());
  };
  if (!found) {
    auto ids = PromptIdsOfCall(base_id);
    if (!ids.ok()) return broken(ids.status());
    elsewhere = std::move(*ids);
    found = &elsewhere;
  }
  if (found->size() < prefix) return broken(Status::InvalidData("its base's ids are too few"));
  return found;
}

Result<int64_t> Store::PutBlob(std::string_view data) {
  XXH128_hash_t digest = XXH3_128bits_withSeed(data.data(), data.size(), blob_seed_);
  Fingerprint seen{digest.low64, digest.high64};
  if (auto known = committed_blobs_.find(seen); known != committed_blobs_.end()) return known->second;
  auto id = InsertBlob(Sha256(data), data);
  if (id.ok()) pending_blobs_.emplace_back(seen, *id);
  return id;
}

Result<int64_t> Store::InsertBlob(const std::string& hash, std::string_view data) {
  auto insert = db_.PrepareCached("INSERT OR IGNORE INTO blobs (hash, data) VALUES (?1, ?2)");
  if (!insert.ok()) return insert.status();
  std::string stored = PackBlob(data);
  FORGE_RETURN_IF_ERROR(insert->BindBlobUnowned(1, hash).BindBlobUnowned(2, stored).Run());
  if (db_.Changes() == 1) return db_.LastInsertRowId();
  auto select = db_.PrepareCached("SELECT id FROM blobs WHERE hash = ?1");
  if (!select.ok()) return select.status();
  select->BindBlob(1, hash);
  auto row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(path() + ": blob " + Hex(hash) + " vanished");
  return select->Int(0);
}

Result<std::string> Store::GetBlob(int64_t id) {
  auto stmt = db_.PrepareCached("SELECT data FROM blobs WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, id);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::InvalidData(path() + ": missing blob " + std::to_string(id));
  auto text = UnpackBlob(stmt->Blob(0));
  if (!text.ok()) return text.status().Prefixed(path() + ": blob " + std::to_string(id));
  return text;
}

Result<std::string> Store::PutContent(const Json& value) {
  if (value.is_null()) return std::string();
  auto skeleton = Split(value, [this](std::string_view data) { return PutBlob(data); });
  if (!skeleton.ok()) return skeleton.status();
  return DumpJson(*skeleton);
}

Result<std::string> Store::PutContentText(std::string_view text) {
  return SplitText(text, [this](std::string_view data) { return PutBlob(data); });
}

Result<std::string> Store::PutRequestText(std::string_view text) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return PutContentText(text);
}

Result<Json> Store::GetContent(const std::string& skeleton_text) {
  if (skeleton_text.empty()) return Json(nullptr);
  Json skeleton = Json::parse(skeleton_text, nullptr, false);
  if (skeleton.is_discarded()) return Status::InvalidData(path() + ": corrupt call content");
  auto value = Join(skeleton, [this](int64_t id) { return GetBlob(id); });
  if (!value.ok()) return value.status().Prefixed(path());
  return value;
}

Status Store::AppendCalls(std::vector<CallRecord>& calls, const LogMark* mark) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return WriteTransactionLocked([&]() -> Status {
    for (CallRecord& call : calls) FORGE_RETURN_IF_ERROR(AppendCallLocked(call));
    if (!mark) return Status::Ok();
    auto stmt = db_.PrepareCached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
    if (!stmt.ok()) return stmt.status();
    return stmt->Bind(1, mark->key).Bind(2, mark->value).Run();
  });
}

Status Store::AppendCallLocked(CallRecord& call) {
  call.id = 0;
  // Documents that came as text (the proxy's cheaper forms) are stored as
  // their text, checked but not parsed: what a reader parses is what a parse
  // here would have given. Text that is not JSON is stored as absent.
  std::string_view usage_text = ValidJsonOrEmpty(call.usage_text);
  std::string_view patch_text = ValidJsonOrEmpty(call.upstream_request_patch_text);
  if (!call.retry_key.empty()) {
    auto seen = db_.PrepareCached("SELECT 1 FROM calls WHERE rollout_id = ?1 AND retry_key = ?2");
    if (!seen.ok()) return seen.status();
    seen->Bind(1, call.rollout_id).Bind(2, call.retry_key);
    auto row = seen->Step();
    if (!row.ok()) return row.status();
    if (*row) return Status::Ok();
  }
  if (call.seq < 0) {
    auto next = db_.PrepareCached("SELECT COALESCE(MAX(seq) + 1, 0) FROM calls WHERE rollout_id = ?1");
    if (!next.ok()) return next.status();
    next->Bind(1, call.rollout_id);
    auto row = next->Step();
    if (!row.ok()) return row.status();
    call.seq = next->Int(0);
  }

  // Delta-encode the prompt against the recent call sharing the longest prefix.
  auto [base_call, prefix] = recent_prompts_.LongestShared(call.rollout_id, call.prompt_ids);
  std::vector<int32_t> suffix(call.prompt_ids.begin() + static_cast<ptrdiff_t>(prefix), call.prompt_ids.end());

  auto content = [this](const Json& value, const std::string& text) {
    return value.is_null() && !text.empty() ? PutContentText(text) : PutContent(value);
  };
  auto request = !call.request_skeleton.empty() ? Result<std::string>(call.request_skeleton)
                                                : content(call.request, call.request_text);
  auto response = content(call.response, call.response_text);
  // The upstream request repeats the client's request; keep only the difference.
  bool diff_upstream = call.request.is_object() && call.upstream_request.is_object();
  bool no_upstream_request = call.upstream_request.is_null() && call.upstream_request_text.empty();
  bool patch_text_upstream = no_upstream_request && call.upstream_request_patch.is_null() && IsJsonObject(patch_text);
  bool patch_upstream = no_upstream_request && (call.upstream_request_patch.is_object() || patch_text_upstream);
  auto upstream_request = patch_text_upstream ? PutContentText(patch_text)
                          : patch_upstream    ? PutContent(call.upstream_request_patch)
                          : diff_upstream ? PutContent(TopLevelDiff(call.request, call.upstream_request))
                                          : content(call.upstream_request, call.upstream_request_text);
  if ((patch_upstream || diff_upstream) && upstream_request.ok()) *upstream_request = "D" + *upstream_request;
  bool same_response = call.upstream_response.is_null() && call.response.is_null() &&
                       !call.response_text.empty() && call.upstream_response_text == call.response_text;
  auto upstream_response = same_response ? response : content(call.upstream_response, call.upstream_response_text);
  for (auto* r : {&request, &response, &upstream_request, &upstream_response}) {
    if (!r->ok()) return r->status();
  }

  auto stmt = db_.PrepareCached(
      "INSERT INTO calls (rollout_id, seq, started_at, first_token_at, ended_at, client_format, upstream, "
      "model, policy_version_start, policy_version_end, request, response, upstream_request, "
      "upstream_response, prompt_base_call, prompt_prefix_len, prompt_suffix, completion_ids, logprobs, "
      "finish_reason, usage, http_status, error, side_call, retry_key) VALUES "
      "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
      "?22, ?23, ?24, ?25)");
  if (!stmt.ok()) return stmt.status();
  // (Every text and array bound unowned lives until Run below.)
  stmt->BindUnowned(1, call.rollout_id).Bind(2, call.seq).Bind(3, call.started_at).Bind(4, call.first_token_at);
  stmt->Bind(5, call.ended_at).BindUnowned(6, call.client_format).BindUnowned(7, call.upstream);
  stmt->BindUnowned(8, call.model).Bind(9, call.policy_version_start).Bind(10, call.policy_version_end);
  stmt->BindUnowned(11, *request).BindUnowned(12, *response);
  stmt->BindUnowned(13, *upstream_request).BindUnowned(14, *upstream_response);
  if (base_call == 0) stmt->BindNull(15); else stmt->Bind(15, base_call);
  stmt->Bind(16, static_cast<int64_t>(prefix));
  stmt->BindBlobUnowned(17, BytesOf(suffix)).BindBlobUnowned(18, BytesOf(call.completion_ids));
  stmt->BindBlobUnowned(19, BytesOf(call.logprobs)).BindUnowned(20, call.finish_reason);
  if (!call.usage.is_null()) {
    stmt->Bind(21, DumpJson(call.usage));
  } else if (!usage_text.empty() && !IsJsonNull(usage_text)) {
    stmt->BindUnowned(21, usage_text);
  } else {
    stmt->BindNull(21);
  }
  stmt->Bind(22, static_cast<int64_t>(call.http_status)).BindUnowned(23, call.error);
  stmt->Bind(24, static_cast<int64_t>(call.side_call ? 1 : 0));
  if (call.retry_key.empty()) stmt->BindNull(25); else stmt->BindUnowned(25, call.retry_key);
  FORGE_RETURN_IF_ERROR(stmt->Run());
  call.id = db_.LastInsertRowId();

  recent_prompts_.AddPending(call.rollout_id, call.id, call.prompt_ids);
  return Status::Ok();
}

Store::~Store() = default;

Result<std::vector<CallRecord>> Store::CallsOfRollout(const std::string& rollout_id) {
  return CallsOfRollout(rollout_id, CallFields::kAll);
}

Result<std::vector<CallRecord>> Store::CallsOfRollout(const std::string& rollout_id, CallFields fields) {
  if (fields == CallFields::kTokens) {
    std::vector<CallRecord> calls;
    auto n = ReadTokenCalls(rollout_id, &calls);
    if (!n.ok()) return n.status();
    calls.resize(*n);
    return calls;
  }
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const bool all = fields == CallFields::kAll;
  std::optional<Statement>& query = calls_query_[all ? 0 : 1];
  if (!query) {
    // Both select the same columns so they are read by the same code; the
    // tokens-only one reads NULL in place of the content.
    const char* content = all ? "request, response, upstream_request, upstream_response"
                              : "NULL, NULL, NULL, NULL";
    auto prepared = db_.Prepare(
        std::string("SELECT id, seq, started_at, first_token_at, ended_at, client_format, upstream, model, "
                    "policy_version_start, policy_version_end, ") +
        content +
        ", prompt_base_call, prompt_prefix_len, prompt_suffix, completion_ids, logprobs, finish_reason, " +
        (all ? "usage" : "NULL") + ", http_status, error, side_call, retry_key FROM calls WHERE rollout_id = ?1 " +
        "ORDER BY id");
    if (!prepared.ok()) return prepared.status();
    query.emplace(std::move(*prepared));
  }
  Statement& stmt = *query;
  // Reset on every way out, so a reused statement never holds a read
  // transaction open between calls.
  struct ResetOnExit {
    Statement& s;
    ~ResetOnExit() { s.Reset(); }
  } reset_on_exit{stmt};
  stmt.Bind(1, rollout_id);
  std::vector<CallRecord> calls;
  calls.reserve(8);
  for (;;) {
    auto row = stmt.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    CallRecord& c = calls.emplace_back();  // filled in place: a CallRecord is costly to move
    c.id = stmt.Int(0);
    c.rollout_id = rollout_id;
    c.seq = stmt.Int(1);
    c.started_at = stmt.Double(2);
    c.first_token_at = stmt.Double(3);
    c.ended_at = stmt.Double(4);
    c.client_format = stmt.Text(5);
    c.upstream = stmt.Text(6);
    c.model = stmt.Text(7);
    c.policy_version_start = stmt.Int(8);
    c.policy_version_end = stmt.Int(9);
    if (all) {
      for (auto [column, field] : {std::pair{10, &c.request}, {11, &c.response}, {13, &c.upstream_response}}) {
        auto content = GetContent(stmt.Text(column));
        if (!content.ok()) return content.status();
        *field = std::move(*content);
      }
      std::string upstream_request = stmt.Text(12);
      bool is_diff = !upstream_request.empty() && upstream_request[0] == 'D';
      auto upstream = GetContent(is_diff ? upstream_request.substr(1) : upstream_request);
      if (!upstream.ok()) return upstream.status();
      c.upstream_request = is_diff ? ApplyTopLevelDiff(c.request, *upstream) : std::move(*upstream);
    }
    // Prompt ids: the base call's first prefix_len ids, then the stored suffix.
    size_t prefix = static_cast<size_t>(stmt.Int(15));
    std::string_view suffix = stmt.BlobView(16);
    size_t suffix_len = suffix.size() / sizeof(int32_t);
    if (!stmt.IsNull(14)) {
      int64_t base_id = stmt.Int(14);
      auto read = std::find_if(calls.rbegin() + 1, calls.rend(), [&](const CallRecord& b) { return b.id == base_id; });
      std::vector<int32_t> elsewhere;
      auto base = PromptBase(c.id, base_id, prefix, read == calls.rend() ? nullptr : &read->prompt_ids, elsewhere);
      if (!base.ok()) return base.status();
      c.prompt_ids.reserve(prefix + suffix_len);
      c.prompt_ids.assign((*base)->begin(), (*base)->begin() + static_cast<ptrdiff_t>(prefix));
    }
    c.prompt_ids.resize(c.prompt_ids.size() + suffix_len);
    if (suffix_len) {
      std::memcpy(c.prompt_ids.data() + c.prompt_ids.size() - suffix_len, suffix.data(), suffix_len * sizeof(int32_t));
    }
    AssignFromBytes(stmt.BlobView(17), &c.completion_ids);
    AssignFromBytes(stmt.BlobView(18), &c.logprobs);
    c.finish_reason = stmt.Text(19);
    if (all) c.usage = ParseJsonOrNull(stmt.Text(20));
    c.http_status = static_cast<int>(stmt.Int(21));
    c.error = stmt.Text(22);
    c.side_call = stmt.Int(23) != 0;
    c.retry_key = stmt.Text(24);
  }
  // Usually already in seq order; moving CallRecords about is not free.
  auto by_seq = [](const CallRecord& a, const CallRecord& b) { return a.seq < b.seq; };
  if (!std::is_sorted(calls.begin(), calls.end(), by_seq)) std::stable_sort(calls.begin(), calls.end(), by_seq);
  return calls;
}

Result<size_t> Store::ReadTokenCalls(const std::string& rollout_id, std::vector<CallRecord>* calls) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!token_calls_query_) {
    // ORDER BY seq is the order of the UNIQUE (rollout_id, seq) index, so
    // SQLite walks it and needs no sorter (ORDER BY id would need one per
    // rollout). Only the columns a token sample is built from.
    auto prepared = db_.Prepare(
        "SELECT id, seq, policy_version_start, policy_version_end, prompt_base_call, prompt_prefix_len, "
        "prompt_suffix, completion_ids, logprobs, finish_reason, http_status, error, side_call "
        "FROM calls WHERE rollout_id = ?1 ORDER BY seq");
    if (!prepared.ok()) return prepared.status();
    token_calls_query_.emplace(std::move(*prepared));
  }
  Statement& stmt = *token_calls_query_;
  struct ResetOnExit {
    Statement& s;
    ~ResetOnExit() { s.Reset(); }
  } reset_on_exit{stmt};
  stmt.Bind(1, rollout_id);

  // Each row's prompt delta (base call id, 0 for none; prefix length); its
  // stored suffix goes into prompt_ids until the deltas are resolved below.
  struct Delta {
    int64_t base_id;
    size_t prefix;
  };
  thread_local std::vector<Delta> deltas;
  deltas.clear();
  size_t n = 0;
  for (;;) {
    auto row = stmt.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    if (n == calls->size()) calls->emplace_back();
    CallRecord& c = (*calls)[n++];
    ClearForTokens(c);
    c.id = stmt.Int(0);
    c.rollout_id = rollout_id;
    c.seq = stmt.Int(1);
    c.policy_version_start = stmt.Int(2);
    c.policy_version_end = stmt.Int(3);
    deltas.push_back({stmt.IsNull(4) ? 0 : stmt.Int(4), static_cast<size_t>(stmt.Int(5))});
    AssignFromBytes(stmt.BlobView(6), &c.prompt_ids);
    AssignFromBytes(stmt.BlobView(7), &c.completion_ids);
    AssignFromBytes(stmt.BlobView(8), &c.logprobs);
    std::string_view finish = stmt.TextView(9);
    c.finish_reason.assign(finish.data(), finish.size());
    c.http_status = static_cast<int>(stmt.Int(10));
    std::string_view error = stmt.TextView(11);
    c.error.assign(error.data(), error.size());
    c.side_call = stmt.Int(12) != 0;
  }

  // Prompt ids: the base call's first prefix ids, then the stored suffix. A
  // base is always an earlier call (a smaller id), of the same rollout but
  // for one set aside from an earlier try (read by its id), so resolving in
  // id order finds every base already whole. Seq order is id
  // order unless seqs were given out of order.
  thread_local std::vector<size_t> order;
  order.resize(n);
  std::iota(order.begin(), order.end(), size_t{0});
  auto by_id = [&](size_t a, size_t b) { return (*calls)[a].id < (*calls)[b].id; };
  if (!std::is_sorted(order.begin(), order.end(), by_id)) std::sort(order.begin(), order.end(), by_id);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    const Delta& d = deltas[i];
    if (d.base_id == 0) continue;
    CallRecord& c = (*calls)[i];
    const std::vector<int32_t>* read = nullptr;
    for (size_t j = k; j-- > 0 && !read;) {
      if ((*calls)[order[j]].id == d.base_id) read = &(*calls)[order[j]].prompt_ids;
    }
    std::vector<int32_t> elsewhere;
    auto base = PromptBase(c.id, d.base_id, d.prefix, read, elsewhere);
    if (!base.ok()) return base.status();
    c.prompt_ids.insert(c.prompt_ids.begin(), (*base)->begin(), (*base)->begin() + static_cast<ptrdiff_t>(d.prefix));
  }
  return n;
}

Status Store::PutVerdict(const std::string& rollout_id, const std::string& outcome,
                         std::optional<double> reward, const Json& record) {
  return WriteTransaction([&]() -> Status {
    auto stmt = db_.Prepare(
        "INSERT INTO verdicts (rollout_id, outcome, reward, record, created_at) VALUES (?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT (rollout_id) DO UPDATE SET outcome = excluded.outcome, reward = excluded.reward, "
        "record = excluded.record, created_at = excluded.created_at");
    if (!stmt.ok()) return stmt.status();
    stmt->Bind(1, rollout_id).Bind(2, outcome);
    if (reward) stmt->Bind(3, *reward); else stmt->BindNull(3);
    return stmt->Bind(4, DumpJson(record)).Bind(5, Now()).Run();
  });
}

Result<std::optional<Json>> Store::GetVerdict(const std::string& rollout_id) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare("SELECT record FROM verdicts WHERE rollout_id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, rollout_id);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<Json>();
  return std::optional<Json>(ParseJsonOrNull(stmt->Text(0)));
}

Result<std::optional<std::vector<float>>> Store::GetEmbedding(const std::string& content_hash,
                                                                const std::string& model) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare("SELECT vector FROM embeddings WHERE content_hash = ?1 AND model = ?2");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, content_hash).Bind(2, model);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<std::vector<float>>();
  std::vector<float> vector;
  AssignFromBytes(stmt->BlobView(0), &vector);
  return std::optional<std::vector<float>>(std::move(vector));
}

Status Store::PutEmbeddings(const std::string& model,
                            const std::vector<std::pair<std::string, std::vector<float>>>& items) {
  return WriteTransaction([&]() -> Status {
    auto stmt = db_.Prepare(
        "INSERT OR REPLACE INTO embeddings (content_hash, model, dim, vector) VALUES (?1, ?2, ?3, ?4)");
    if (!stmt.ok()) return stmt.status();
    for (const auto& [hash, vector] : items) {
      stmt->Reset();
      stmt->Bind(1, hash).Bind(2, model).Bind(3, static_cast<int64_t>(vector.size()));
      FORGE_RETURN_IF_ERROR(stmt->BindBlob(4, BytesOf(vector)).Run());
    }
    return Status::Ok();
  });
}

Status Store::SetMeta(const std::string& key, const std::string& value) {
  return WriteTransaction([&]() -> Status {
    auto stmt = db_.Prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
    if (!stmt.ok()) return stmt.status();
    return stmt->Bind(1, key).Bind(2, value).Run();
  });
}

Status Store::DeleteMeta(const std::string& key) {
  return WriteTransaction([&]() -> Status {
    auto stmt = db_.Prepare("DELETE FROM meta WHERE key = ?1");
    if (!stmt.ok()) return stmt.status();
    return stmt->Bind(1, key).Run();
  });
}

Result<std::optional<std::string>> Store::GetMeta(const std::string& key) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto stmt = db_.Prepare("SELECT value FROM meta WHERE key = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, key);
  auto row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(stmt->Text(0));
}

Result<StoreStats> Store::Stats() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  StoreStats stats;
  (void)db_.Execute("PRAGMA wal_checkpoint(TRUNCATE)");
  stats.file_bytes = FileSize(path()) + FileSize(path() + "-wal");
  auto stmt = db_.Prepare(
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
