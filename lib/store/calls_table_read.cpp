// CallsTable's reading: a rollout's calls, whole or only their tokens, with
// each prompt's ids rebuilt from its delta.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "store/calls_table.h"
#include "store/content.h"
#include "store/little_endian.h"
#include "store/rows.h"

namespace forge::store {
namespace {

// A rollout's calls, every field.
constexpr char kAllCalls[] =
    "SELECT id, seq, started_at, first_token_at, ended_at, client_format, upstream, model, "
    "policy_version_start, policy_version_end, request, response, upstream_request, upstream_response, "
    "prompt_base_call, prompt_prefix_len, prompt_suffix, completion_ids, logprobs, finish_reason, usage, "
    "http_status, error, side_call, retry_key, images, mm_placeholders FROM calls WHERE rollout_id = ?1 ORDER BY id";

// Only the columns a token sample is built from. ORDER BY seq is the order
// of the UNIQUE (rollout_id, seq) index, so SQLite walks it and needs no
// sorter (ORDER BY id would need one per rollout).
constexpr char kTokenCalls[] =
    "SELECT id, seq, policy_version_start, policy_version_end, prompt_base_call, prompt_prefix_len, "
    "prompt_suffix, completion_ids, logprobs, finish_reason, http_status, error, side_call, images, "
    "mm_placeholders FROM calls WHERE rollout_id = ?1 ORDER BY seq";

// The images column: 32-byte digests, as 64 hex digits each.
void ReadImages(std::string_view digests, std::vector<std::string>* images) {
  images->clear();
  for (size_t at = 0; at + 32 <= digests.size(); at += 32) images->push_back(Hex(digests.substr(at, 32)));
}

// Empties what a token read does not fill, keeping the buffers for reuse.
void ClearForTokens(CallRecord& c) {
  c.started_at = c.first_token_at = c.ended_at = 0;
  for (std::string* text : {&c.client_format, &c.upstream, &c.model, &c.retry_key, &c.request_text,
                            &c.request_skeleton, &c.response_text, &c.upstream_response_text,
                            &c.upstream_request_patch_text, &c.upstream_request_text, &c.usage_text}) {
    text->clear();
  }
  for (nlohmann::json* value : {&c.request, &c.response, &c.upstream_request, &c.upstream_response, &c.usage,
                                &c.upstream_request_patch}) {
    if (!value->is_null()) *value = nullptr;
  }
}

}  // namespace

Result<std::vector<CallRecord>> CallsTable::CallsOfRollout(const std::string& rollout_id, CallFields fields) {
  if (fields == CallFields::kTokens) {
    std::vector<CallRecord> calls;
    auto n = ReadTokenCalls(rollout_id, &calls);
    if (!n.ok()) return n.status();
    calls.resize(*n);
    return calls;
  }
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  // Compiled once per connection; reset (no read transaction kept open) when it goes.
  auto query = db_.connection().PrepareCached(kAllCalls);
  if (!query.ok()) return query.status();
  Statement& stmt = *query;
  stmt.Bind(1, rollout_id);
  std::vector<CallRecord> calls;
  calls.reserve(8);
  for (;;) {
    auto row = stmt.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    calls.emplace_back().rollout_id = rollout_id;  // filled in place: a CallRecord is costly to move
    FORGE_RETURN_IF_ERROR(ReadCall(stmt, calls));
  }
  // Usually already in seq order; moving CallRecords about is not free.
  auto by_seq = [](const CallRecord& a, const CallRecord& b) { return a.seq < b.seq; };
  if (!std::is_sorted(calls.begin(), calls.end(), by_seq)) std::stable_sort(calls.begin(), calls.end(), by_seq);
  return calls;
}

// The last of calls from kAllCalls's row; the calls before it are the rollout's read so far.
Status CallsTable::ReadCall(const Statement& row, std::vector<CallRecord>& calls) {
  CallRecord& c = calls.back();
  c.id = row.Int(0);
  c.seq = row.Int(1);
  c.started_at = row.Double(2);
  c.first_token_at = row.Double(3);
  c.ended_at = row.Double(4);
  c.client_format = row.Text(5);
  c.upstream = row.Text(6);
  c.model = row.Text(7);
  c.policy_version_start = row.Int(8);
  c.policy_version_end = row.Int(9);
  FORGE_RETURN_IF_ERROR(ReadCallContent(row, c));
  FORGE_RETURN_IF_ERROR(ReadPromptIds(row, calls));
  AssignFromBytes(row.BlobView(17), &c.completion_ids);
  AssignFromBytes(row.BlobView(18), &c.logprobs);
  c.finish_reason = row.Text(19);
  c.usage = ParseJsonOrNull(row.Text(20));
  c.http_status = static_cast<int>(row.Int(21));
  c.error = row.Text(22);
  c.side_call = row.Int(23) != 0;
  c.retry_key = row.Text(24);
  ReadImages(row.BlobView(25), &c.images);
  c.mm_placeholders = row.Text(26);
  return Status::Ok();
}

Status CallsTable::ReadCallContent(const Statement& row, CallRecord& c) {
  for (auto [column, field] : {std::pair{10, &c.request}, {11, &c.response}, {13, &c.upstream_response}}) {
    auto content = blobs_.GetContent(row.Text(column));
    if (!content.ok()) return content.status();
    *field = std::move(*content);
  }
  // 'D' + a diff's skeleton, 'F' + a flat diff's (content.h: FlatDiff), or a skeleton.
  std::string upstream_request = row.Text(12);
  char kind = upstream_request.empty() ? '\0' : upstream_request[0];
  bool is_diff = kind == 'D' || kind == 'F';
  auto upstream = blobs_.GetContent(is_diff ? upstream_request.substr(1) : upstream_request);
  if (!upstream.ok()) return upstream.status();
  if (kind == 'F') *upstream = UnflattenDiff(*upstream);
  c.upstream_request = is_diff ? ApplyTopLevelDiff(c.request, *upstream) : std::move(*upstream);
  return Status::Ok();
}

// Prompt ids: the base call's first prefix_len ids, then the stored suffix.
Status CallsTable::ReadPromptIds(const Statement& row, std::vector<CallRecord>& calls) {
  CallRecord& c = calls.back();
  size_t prefix = static_cast<size_t>(row.Int(15));
  std::string_view suffix = row.BlobView(16);
  size_t suffix_len = suffix.size() / sizeof(int32_t);
  if (!row.IsNull(14)) {
    int64_t base_id = row.Int(14);
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
  return Status::Ok();
}

Result<size_t> CallsTable::ReadTokenCalls(const std::string& rollout_id, std::vector<CallRecord>* calls) {
  std::lock_guard<std::recursive_mutex> lock(db_.mutex());
  // Compiled once per connection; reset (no read transaction kept open) when it goes.
  auto query = db_.connection().PrepareCached(kTokenCalls);
  if (!query.ok()) return query.status();
  Statement& stmt = *query;
  stmt.Bind(1, rollout_id);
  // Each row's prompt delta; its stored suffix goes into prompt_ids until
  // the deltas are resolved below.
  thread_local std::vector<Delta> deltas;
  deltas.clear();
  size_t n = 0;
  for (;;) {
    auto row = stmt.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    if (n == calls->size()) calls->emplace_back();
    CallRecord& c = (*calls)[n++];
    c.rollout_id = rollout_id;
    deltas.push_back(ReadTokenCall(stmt, c));
  }
  FORGE_RETURN_IF_ERROR(ResolveDeltas(*calls, n, deltas));
  return n;
}

CallsTable::Delta CallsTable::ReadTokenCall(const Statement& row, CallRecord& c) {
  ClearForTokens(c);
  c.id = row.Int(0);
  c.seq = row.Int(1);
  c.policy_version_start = row.Int(2);
  c.policy_version_end = row.Int(3);
  AssignFromBytes(row.BlobView(6), &c.prompt_ids);
  AssignFromBytes(row.BlobView(7), &c.completion_ids);
  AssignFromBytes(row.BlobView(8), &c.logprobs);
  std::string_view finish = row.TextView(9);
  c.finish_reason.assign(finish.data(), finish.size());
  c.http_status = static_cast<int>(row.Int(10));
  std::string_view error = row.TextView(11);
  c.error.assign(error.data(), error.size());
  c.side_call = row.Int(12) != 0;
  ReadImages(row.BlobView(13), &c.images);
  std::string_view placeholders = row.TextView(14);
  c.mm_placeholders.assign(placeholders.data(), placeholders.size());
  return {row.IsNull(4) ? 0 : row.Int(4), static_cast<size_t>(row.Int(5))};
}

// Prompt ids: the base call's first prefix ids, then the stored suffix. A
// base is always an earlier call (a smaller id), of the same rollout but
// for one set aside from an earlier try (read by its id), so resolving in
// id order finds every base already whole. Seq order is id
// order unless seqs were given out of order.
Status CallsTable::ResolveDeltas(std::vector<CallRecord>& calls, size_t n, const std::vector<Delta>& deltas) {
  thread_local std::vector<size_t> order;
  order.resize(n);
  std::iota(order.begin(), order.end(), size_t{0});
  auto by_id = [&](size_t a, size_t b) { return calls[a].id < calls[b].id; };
  if (!std::is_sorted(order.begin(), order.end(), by_id)) std::sort(order.begin(), order.end(), by_id);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    const Delta& d = deltas[i];
    if (d.base_id == 0) continue;
    CallRecord& c = calls[i];
    const std::vector<int32_t>* read = nullptr;
    for (size_t j = k; j-- > 0 && !read;) {
      if (calls[order[j]].id == d.base_id) read = &calls[order[j]].prompt_ids;
    }
    std::vector<int32_t> elsewhere;
    auto base = PromptBase(c.id, d.base_id, d.prefix, read, elsewhere);
    if (!base.ok()) return base.status();
    c.prompt_ids.insert(c.prompt_ids.begin(), (*base)->begin(), (*base)->begin() + static_cast<ptrdiff_t>(d.prefix));
  }
  return Status::Ok();
}

Result<std::vector<int32_t>> CallsTable::PromptIdsOfCall(int64_t id) {
  // The chain of bases down to a call stored whole; a base is always an
  // earlier call (a smaller id), which also ends a loop in a damaged store.
  struct Link {
    size_t prefix;
    std::string suffix;
  };
  std::vector<Link> chain;
  for (int64_t at = id;;) {
    auto stmt = db_.connection().PrepareCached(
        "SELECT prompt_base_call, prompt_prefix_len, prompt_suffix FROM calls WHERE id = ?1");
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

Result<const std::vector<int32_t>*> CallsTable::PromptBase(int64_t call, int64_t base_id, size_t prefix,
                                                           const std::vector<int32_t>* found,
                                                           std::vector<int32_t>& elsewhere) {
  auto broken = [&](const Status& why) {
    if (why.kind() != Kind::kInvalidData) return why;  // the database failed, not the data
    return Status::InvalidData(db_.path() + ": call " + std::to_string(call) +
                               " has a broken prompt delta: " + why.message());
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

}  // namespace forge::store
