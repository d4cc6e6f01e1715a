// The model calls the proxy records, as CallRecord describes them: requests
// and responses stored content-addressed (BlobsTable), and each prompt's
// token ids as a delta against an earlier call of its rollout, so a
// rollout's storage grows with its unique content. Writing is
// calls_table.cpp, reading calls_table_read.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/blobs_table.h"
#include "store/recent_prompts.h"
#include "store/sqlite.h"
#include "store/store_database.h"
#include "store/store_types.h"

namespace forge::store {

class CallsTable : private TransactionObserver {
 public:
  CallsTable(StoreDatabase& db, BlobsTable& blobs);
  CallsTable(const CallsTable&) = delete;
  CallsTable& operator=(const CallsTable&) = delete;

  // Appends all in one transaction (the proxy's group commit); assigns
  // ids and sequence numbers. A call whose (rollout, retry_key) is already
  // stored is skipped and its id left 0. A mark, when given, is written in
  // the same transaction.
  Status AppendCalls(std::vector<CallRecord>& calls, const LogMark* mark = nullptr);

  // Moves the calls recorded under rollout_id (those that started before
  // started_before, when given) to `into`, or to rollout_id + "~N", N the
  // first number free, numbered after the calls already there, and says
  // where and how many (none: calls 0). For an attempt run again under its
  // rollout id (forge-launch resuming a run, or retrying an infrastructure
  // failure): the calls of the try that died stay in the store, but no
  // reader takes them for the new try's.
  struct Moved {
    std::string rollout_id;
    int64_t calls = 0;
  };
  Result<Moved> SetAside(const std::string& rollout_id, std::optional<double> started_before = std::nullopt,
                         const std::string& into = "");

  // A rollout's calls in seq order. kTokens reads only what token-level
  // training data needs (ids, logprobs, finish reason, status, versions,
  // side-call flag) and leaves request/response/usage null: the content is
  // most of a call's bytes and JSON work. The query is prepared once per
  // store and reused.
  Result<std::vector<CallRecord>> CallsOfRollout(const std::string& rollout_id,
                                                 CallFields fields = CallFields::kAll);
  // The kTokens read for a batch reader (forge-pack) that reads thousands of
  // rollouts in a row: the rollout's calls are written, in seq order, into
  // the first N elements of `*calls`, which is kept from one rollout to the
  // next, so their vectors and strings reuse what they already hold and a
  // long run allocates next to nothing per call. Elements past N are left
  // as they were (stale). Returns N (0: no calls recorded for the rollout).
  // The statement walks the (rollout_id, seq) index in order: no sort.
  Result<size_t> ReadTokenCalls(const std::string& rollout_id, std::vector<CallRecord>* calls);

 private:
  // Writing (calls_table.cpp).
  struct StoredContent;
  Status AppendCallLocked(CallRecord& call);
  // False for a retry already stored; else gives the call its seq if it has none.
  Result<bool> IsNew(CallRecord& call);
  Result<StoredContent> PutCallContent(const CallRecord& call);
  Result<std::string> PutDocument(const nlohmann::json& value, const std::string& text);
  Result<std::string> ImagesSent(const StoredContent& content);
  Status InsertCall(CallRecord& call, const StoredContent& content);
  void Committed() override { recent_prompts_.Commit(); }
  void RolledBack() override { recent_prompts_.DiscardPending(); }

  // Reading (calls_table_read.cpp).
  Status ReadCall(const Statement& row, std::vector<CallRecord>& calls);
  Status ReadCallContent(const Statement& row, CallRecord& c);
  Status ReadPromptIds(const Statement& row, std::vector<CallRecord>& calls);
  // A token row's prompt delta: its base call's id (0 for none) and how many
  // of that call's ids it begins with.
  struct Delta {
    int64_t base_id;
    size_t prefix;
  };
  static Delta ReadTokenCall(const Statement& row, CallRecord& c);
  Status ResolveDeltas(std::vector<CallRecord>& calls, size_t n, const std::vector<Delta>& deltas);
  // A call's prompt ids by its id, for a base that is not among the calls
  // read with it (a call set aside from an earlier try: SetAside).
  Result<std::vector<int32_t>> PromptIdsOfCall(int64_t id);
  // The ids call's prompt begins with (at least prefix of them): its base's,
  // found among the calls read with it, or else read by id into elsewhere.
  // A base that is missing or too short is an error naming the call.
  Result<const std::vector<int32_t>*> PromptBase(int64_t call, int64_t base_id, size_t prefix,
                                                 const std::vector<int32_t>* found, std::vector<int32_t>& elsewhere);

  StoreDatabase& db_;
  BlobsTable& blobs_;
  // The last few calls' prompt ids per rollout, for delta encoding without
  // reading them back: a main thread plus a few side calls each, 64 MiB in all
  // (a 50K-token conversation's four prompts are 800 KB).
  RecentPrompts recent_prompts_{4, 64 << 20};
};

}  // namespace forge::store
