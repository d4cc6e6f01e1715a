// CallsTable's writing: appending calls and setting a try's calls aside.
#include "store/calls_table.h"

#include "base/json_dump.h"
#include "base/json_scan.h"
#include "store/content.h"
#include "store/little_endian.h"

namespace forge::store {
namespace {

// The text without surrounding space if it is one JSON value; else empty.
std::string_view ValidJsonOrEmpty(std::string_view text) {
  if (text.empty() || JsonSyntaxError(text)) return {};
  return TrimJson(text);
}

// How many calls a rollout has (that started before some time), and the seq after its last.
struct CallCount {
  int64_t calls;
  int64_t next_seq;
};
constexpr const char* kCountCalls =
    "SELECT COUNT(*), COALESCE(MAX(seq) + 1, 0) FROM calls WHERE rollout_id = ?1 "
    "AND (?2 IS NULL OR started_at < ?2)";

// count is kCountCalls prepared.
Result<CallCount> CountCalls(Statement& count, const std::string& rollout, std::optional<double> before) {
  count.Reset();
  BindAll(count, rollout, before);
  auto row = count.Step();
  if (!row.ok()) return row.status();
  return CallCount{count.Int(0), count.Int(1)};
}

// rollout_id + "~N", N the first number no call is recorded under.
Result<std::string> FreeRolloutId(Statement& count, const std::string& rollout_id) {
  for (int k = 1;; ++k) {
    std::string id = rollout_id + "~" + std::to_string(k);
    auto taken = CountCalls(count, id, std::nullopt);
    if (!taken.ok()) return taken.status();
    if (taken->calls == 0) return id;
  }
}

}  // namespace

// The skeletons' texts of a call's four documents (empty: absent), and the
// images of the request the upstream saw (their digests, concatenated).
struct CallsTable::StoredContent {
  std::string request, response, upstream_request, upstream_response;
  std::string images;
};

CallsTable::CallsTable(StoreDatabase& db, BlobsTable& blobs) : db_(db), blobs_(blobs) { db_.AddObserver(this); }

Status CallsTable::AppendCalls(std::vector<CallRecord>& calls, const LogMark* mark) {
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  return db_.WriteTransactionLocked([&]() -> Status {
    for (CallRecord& call : calls) FORGE_RETURN_IF_ERROR(AppendCallLocked(call));
    if (!mark) return Status::Ok();
    auto stmt = db_.connection().PrepareCached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
    if (!stmt.ok()) return stmt.status();
    return stmt->Bind(1, mark->key).Bind(2, mark->value).Run();
  });
}

Status CallsTable::AppendCallLocked(CallRecord& call) {
  call.id = 0;
  auto is_new = IsNew(call);
  if (!is_new.ok()) return is_new.status();
  if (!*is_new) return Status::Ok();
  auto content = PutCallContent(call);
  if (!content.ok()) return content.status();
  FORGE_RETURN_IF_ERROR(InsertCall(call, *content));
  recent_prompts_.AddPending(call.rollout_id, call.id, call.prompt_ids);
  return Status::Ok();
}

Result<bool> CallsTable::IsNew(CallRecord& call) {
  Database& db = db_.connection();
  if (!call.retry_key.empty()) {
    auto seen = db.PrepareCached("SELECT 1 FROM calls WHERE rollout_id = ?1 AND retry_key = ?2");
    if (!seen.ok()) return seen.status();
    seen->Bind(1, call.rollout_id).Bind(2, call.retry_key);
    auto row = seen->Step();
    if (!row.ok()) return row.status();
    if (*row) return false;
  }
  if (call.seq < 0) {
    auto next = db.PrepareCached("SELECT COALESCE(MAX(seq) + 1, 0) FROM calls WHERE rollout_id = ?1");
    if (!next.ok()) return next.status();
    next->Bind(1, call.rollout_id);
    auto row = next->Step();
    if (!row.ok()) return row.status();
    call.seq = next->Int(0);
  }
  return true;
}

// Documents that came as text (the proxy's cheaper forms) are stored as
// their text, checked but not parsed: what a reader parses is what a parse
// here would have given. Text that is not JSON is stored as absent.
Result<CallsTable::StoredContent> CallsTable::PutCallContent(const CallRecord& call) {
  std::string_view patch_text = ValidJsonOrEmpty(call.upstream_request_patch_text);
  auto request = !call.request_skeleton.empty() ? Result<std::string>(call.request_skeleton)
                                                : PutDocument(call.request, call.request_text);
  auto response = PutDocument(call.response, call.response_text);
  // The upstream request repeats the client's request; keep only the difference.
  bool diff_upstream = call.request.is_object() && call.upstream_request.is_object();
  bool no_upstream_request = call.upstream_request.is_null() && call.upstream_request_text.empty();
  bool patch_text_upstream = no_upstream_request && call.upstream_request_patch.is_null() && IsJsonObject(patch_text);
  bool patch_upstream = no_upstream_request && (call.upstream_request_patch.is_object() || patch_text_upstream);
  // A translated request's diff is stored flat ('F'), each message a part of
  // its own; a pass-through's few constant fields as one patch ('D').
  auto upstream_request = patch_text_upstream ? blobs_.PutContentText(patch_text)
                          : patch_upstream    ? blobs_.PutContent(call.upstream_request_patch)
                          : diff_upstream ? blobs_.PutContent(FlatDiff(TopLevelDiff(call.request, call.upstream_request)))
                                          : PutDocument(call.upstream_request, call.upstream_request_text);
  if ((patch_upstream || diff_upstream) && upstream_request.ok()) {
    *upstream_request = (diff_upstream ? "F" : "D") + *upstream_request;
  }
  bool same_response = call.upstream_response.is_null() && call.response.is_null() &&
                       !call.response_text.empty() && call.upstream_response_text == call.response_text;
  auto upstream_response =
      same_response ? response : PutDocument(call.upstream_response, call.upstream_response_text);
  for (auto* r : {&request, &response, &upstream_request, &upstream_response}) {
    if (!r->ok()) return r->status();
  }
  StoredContent stored{std::move(*request), std::move(*response), std::move(*upstream_request),
                       std::move(*upstream_response), {}};
  auto images = ImagesSent(stored);
  if (!images.ok()) return images.status();
  stored.images = std::move(*images);
  return stored;
}

// The images of the request the upstream saw: its own skeleton's, or, when it
// is stored as a difference from the client's request, the difference's (a
// translated request's messages) or else the request's (a pass-through).
Result<std::string> CallsTable::ImagesSent(const StoredContent& content) {
  std::string_view upstream = content.upstream_request;
  bool difference = !upstream.empty() && (upstream[0] == 'D' || upstream[0] == 'F');
  std::vector<int64_t> ids = SkeletonImages(difference ? upstream.substr(1) : upstream);
  if (ids.empty() && (difference || upstream.empty())) ids = SkeletonImages(content.request);
  std::string digests;
  for (int64_t id : ids) {
    auto digest = blobs_.HashOf(id);
    if (!digest.ok()) return digest.status();
    digests += *digest;
  }
  return digests;
}

// A document given as Json, or else (when that is null) as its text.
Result<std::string> CallsTable::PutDocument(const nlohmann::json& value, const std::string& text) {
  return value.is_null() && !text.empty() ? blobs_.PutContentText(text) : blobs_.PutContent(value);
}

Status CallsTable::InsertCall(CallRecord& call, const StoredContent& content) {
  // Delta-encode the prompt against the recent call sharing the longest prefix.
  auto [base_call, prefix] = recent_prompts_.LongestShared(call.rollout_id, call.prompt_ids);
  std::vector<int32_t> suffix(call.prompt_ids.begin() + static_cast<ptrdiff_t>(prefix), call.prompt_ids.end());
  std::string_view usage_text = ValidJsonOrEmpty(call.usage_text);
  auto stmt = db_.connection().PrepareCached(
      "INSERT INTO calls (rollout_id, seq, started_at, first_token_at, ended_at, client_format, upstream, "
      "model, policy_version_start, policy_version_end, request, response, upstream_request, "
      "upstream_response, prompt_base_call, prompt_prefix_len, prompt_suffix, completion_ids, logprobs, "
      "finish_reason, usage, http_status, error, side_call, retry_key, images, mm_placeholders) VALUES "
      "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
      "?22, ?23, ?24, ?25, ?26, ?27)");
  if (!stmt.ok()) return stmt.status();
  // (Every text and array bound unowned lives until Run below.)
  stmt->BindUnowned(1, call.rollout_id).Bind(2, call.seq).Bind(3, call.started_at).Bind(4, call.first_token_at);
  stmt->Bind(5, call.ended_at).BindUnowned(6, call.client_format).BindUnowned(7, call.upstream);
  stmt->BindUnowned(8, call.model).Bind(9, call.policy_version_start).Bind(10, call.policy_version_end);
  stmt->BindUnowned(11, content.request).BindUnowned(12, content.response);
  stmt->BindUnowned(13, content.upstream_request).BindUnowned(14, content.upstream_response);
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
  if (content.images.empty()) stmt->BindNull(26); else stmt->BindBlobUnowned(26, content.images);
  std::string_view placeholders = ValidJsonOrEmpty(call.mm_placeholders);
  if (placeholders.empty() || IsJsonNull(placeholders)) stmt->BindNull(27); else stmt->BindUnowned(27, placeholders);
  FORGE_RETURN_IF_ERROR(stmt->Run());
  call.id = db_.connection().LastInsertRowId();
  return Status::Ok();
}

Result<CallsTable::Moved> CallsTable::SetAside(const std::string& rollout_id, std::optional<double> started_before,
                                               const std::string& into) {
  Moved moved;
  Status s = db_.WriteTransaction([&]() -> Status {
    moved = {};
    auto count = db_.connection().Prepare(kCountCalls);
    if (!count.ok()) return count.status();
    auto n = CountCalls(*count, rollout_id, started_before);
    if (!n.ok()) return n.status();
    if (n->calls == 0) return Status::Ok();
    moved = {into, n->calls};
    if (moved.rollout_id.empty()) {
      auto free = FreeRolloutId(*count, rollout_id);
      if (!free.ok()) return free.status();
      moved.rollout_id = std::move(*free);
    }
    // Numbered past the calls already there: (rollout_id, seq) is unique.
    auto there = CountCalls(*count, moved.rollout_id, std::nullopt);
    if (!there.ok()) return there.status();
    return db_.Run("UPDATE calls SET rollout_id = ?2, seq = seq + ?3 WHERE rollout_id = ?1 "
                   "AND (?4 IS NULL OR started_at < ?4)",
                   rollout_id, moved.rollout_id, there->next_seq, started_before);
  });
  if (!s.ok()) return s;
  return moved;
}

}  // namespace forge::store
