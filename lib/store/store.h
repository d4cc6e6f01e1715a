// forge's durable state: one SQLite file in WAL mode that several forge
// processes (proxy, launcher, verifier) read and write at once. Writers take
// short IMMEDIATE transactions and retry while another process holds the
// lock. A Store object is safe to share between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/status.h"
#include "store/recent_prompts.h"
#include "store/sqlite.h"

namespace forge::store {

using Json = nlohmann::json;

struct OpenOptions {
  bool read_only = false;
  // Apply forward migrations up to this version only (tests of old schemas).
  int target_version = -1;  // -1: latest
  int busy_timeout_ms = 10000;
};

struct RolloutRow {
  std::string id;
  std::string run_id;
  std::string task_id;
  int64_t attempt = 0;
  std::string harness;
  std::string secret_hash;  // empty: no secret
  std::string status;       // registered, running, finished
  std::string outcome;
  Json record;              // null until the launcher writes one
};

// One model call as the proxy saw it. Requests and responses are stored
// content-addressed and prompt ids as a delta against an earlier call of the
// same rollout, so a rollout's storage grows with its unique content.
struct CallRecord {
  int64_t id = 0;  // assigned by the store
  std::string rollout_id;
  int64_t seq = -1;  // -1: the store assigns the next number in the rollout
  double started_at = 0, first_token_at = 0, ended_at = 0;
  std::string client_format;  // openai-chat, openai-completions, anthropic, responses, gemini
  std::string upstream;
  std::string model;
  int64_t policy_version_start = 0, policy_version_end = 0;
  Json request;            // as the harness sent it
  Json response;           // as the harness received it (a streamed one: the assembled form)
  Json upstream_request;   // chat form sent upstream
  Json upstream_response;  // as the upstream sent it
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> completion_ids;
  std::vector<float> logprobs;
  std::string finish_reason;
  Json usage;
  int http_status = 0;
  std::string error;
  bool side_call = false;  // token counting, titles, helper-model calls
  std::string retry_key;   // an SDK retry with the same key is not recorded twice

  // Cheaper forms for a proxy that relays bytes (each used when the Json
  // field above is null): the request and responses as their JSON text,
  // stored by slicing the text into parts without parsing it, the upstream
  // request as its text (a translated call's, as sent) or as a top-level
  // patch of the request ({"set": {...}, "unset": [...]}, what TopLevelDiff
  // makes) or that patch's text, and the usage as the upstream sent its
  // text. Readers get Json as usual.
  std::string request_text;
  std::string request_skeleton;  // the request's parts stored ahead by PutRequestText
  std::string response_text;
  std::string upstream_response_text;
  Json upstream_request_patch;
  std::string upstream_request_patch_text;
  std::string upstream_request_text;
  std::string usage_text;
};

// A meta row written in the same transaction as a batch of calls: how far a
// call log (call_log.h) has been taken into the database.
struct LogMark {
  std::string key;
  std::string value;
};

struct StoreStats {
  int64_t file_bytes = 0;  // database + WAL
  int64_t blob_count = 0;
  int64_t blob_bytes = 0;
  int64_t call_count = 0;
  int64_t token_bytes = 0;  // prompt suffixes + completion ids + logprobs
};

class Store {
 public:
  // Opening moves into the database whatever a call log left by a stopped
  // forge-proxy still holds (call_log.h); a read-only opener does it through
  // a read-write connection of its own. It also waits (up to 5 s) for a
  // running forge-proxy to move the calls it has logged so far, so a call a
  // harness saw complete is visible to whoever opens the store next.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, OpenOptions options = {});
  ~Store();

  int schema_version();
  const std::string& path() const { return db_.path(); }

  // Tasks.
  Status PutTask(const Json& task);
  Result<std::optional<Json>> GetTask(const std::string& id);

  // Rollouts.
  Status RegisterRollout(const RolloutRow& row);
  Status UpdateRollout(const std::string& id, const std::string& status, const std::string& outcome,
                       const Json& record);
  Result<std::optional<RolloutRow>> GetRollout(const std::string& id);
  Result<std::vector<RolloutRow>> RolloutsOfRun(const std::string& run_id);
  // The rollout whose secret hashes to secret_hash (what a proxy checks per call).
  Result<std::optional<RolloutRow>> RolloutBySecretHash(const std::string& secret_hash);
  // Moves the calls recorded under rollout_id (those that started before
  // started_before, when given) to `into`, or to rollout_id + "~N", N the
  // first number free, numbered after the calls already there, and says
  // where and how many (none: calls 0). For an attempt run again under its
  // rollout id (forge-launch resuming a run, or retrying an infrastructure
  // failure): the calls of the try that died stay in the store, but no
  // reader takes them for the new try's.
  struct SetAside {
    std::string rollout_id;
    int64_t calls = 0;
  };
  Result<SetAside> SetAsideCalls(const std::string& rollout_id, std::optional<double> started_before = std::nullopt,
                                 const std::string& into = "");

  // Calls. Appends all in one transaction (the proxy's group commit); assigns
  // ids and sequence numbers. A call whose (rollout, retry_key) is already
  // stored is skipped and its id left 0. A mark, when given, is written in
  // the same transaction.
  Status AppendCalls(std::vector<CallRecord>& calls, const LogMark* mark = nullptr);
  // Stores a request's parts ahead of its call (a proxy does it while the
  // upstream answers, so the call's own commit stays small); returns the
  // value for CallRecord::request_skeleton. Run it inside WriteTransaction.
  // Parts of a call that is never appended are harmless: content-addressed.
  Result<std::string> PutRequestText(std::string_view text);
  // A rollout's calls in seq order. kTokens reads only what token-level
  // training data needs (ids, logprobs, finish reason, status, versions,
  // side-call flag) and leaves request/response/usage null: the content is
  // most of a call's bytes and JSON work. The query is prepared once per
  // store and reused.
  enum class CallFields { kAll, kTokens };
  Result<std::vector<CallRecord>> CallsOfRollout(const std::string& rollout_id, CallFields fields);
  Result<std::vector<CallRecord>> CallsOfRollout(const std::string& rollout_id);
  // The kTokens read for a batch reader (forge-pack) that reads thousands of
  // rollouts in a row: the rollout's calls are written, in seq order, into
  // the first N elements of `*calls`, which is kept from one rollout to the
  // next, so their vectors and strings reuse what they already hold and a
  // long run allocates next to nothing per call. Elements past N are left
  // as they were (stale). Returns N (0: no calls recorded for the rollout).
  // The statement walks the (rollout_id, seq) index in order: no sort.
  Result<size_t> ReadTokenCalls(const std::string& rollout_id, std::vector<CallRecord>* calls);

  // Verdicts.
  Status PutVerdict(const std::string& rollout_id, const std::string& outcome,
                    std::optional<double> reward, const Json& record);
  Result<std::optional<Json>> GetVerdict(const std::string& rollout_id);

  // Embedding cache, keyed by content hash and model.
  Result<std::optional<std::vector<float>>> GetEmbedding(const std::string& content_hash,
                                                         const std::string& model);
  Status PutEmbeddings(const std::string& model,
                       const std::vector<std::pair<std::string, std::vector<float>>>& items);

  // Small key/value settings (e.g. the proxy's policy version).
  Status SetMeta(const std::string& key, const std::string& value);
  Result<std::optional<std::string>> GetMeta(const std::string& key);
  Status DeleteMeta(const std::string& key);

  Result<StoreStats> Stats();

  // A read transaction held across many reads (BEGIN ... COMMIT): every read
  // sees one snapshot, and the lock is taken once rather than per query.
  // For batch readers such as forge-pack; writers are not blocked (WAL).
  Status BeginRead();
  Status EndRead();

  // Runs fn inside BEGIN IMMEDIATE ... COMMIT, retrying the whole thing while
  // another process holds the write lock. fn may run more than once.
  Status WriteTransaction(const std::function<Status()>& fn);

  // SQLite checkpoints the WAL inside whichever COMMIT makes it 1,000 pages
  // long: milliseconds and an fsync on that commit's caller. After this call
  // this connection's commits never do; instead due() is called (on the
  // committing thread) once the WAL is `pages` long, and another connection
  // is expected to run Checkpoint. A null due() restores SQLite's default.
  void HandOffCheckpoints(int pages, std::function<void()> due);
  // A passive checkpoint: copies what it can and never waits for a writer.
  Status Checkpoint();

 private:
  explicit Store(Database db) : db_(std::move(db)) {}
  Status Migrate(int target_version);
  Status WriteTransactionLocked(const std::function<Status()>& fn);
  Result<std::string> PutContent(const Json& value);
  Result<std::string> PutContentText(std::string_view text);
  Result<Json> GetContent(const std::string& skeleton);
  Result<int64_t> PutBlob(std::string_view data);
  Result<int64_t> InsertBlob(const std::string& hash, std::string_view data);
  void RememberCommittedBlobs();
  Result<std::string> GetBlob(int64_t id);
  Status AppendCallLocked(CallRecord& call);
  // A call's prompt ids by its id, for a base that is not among the calls
  // read with it (a call set aside from an earlier try: SetAsideCalls).
  Result<std::vector<int32_t>> PromptIdsOfCall(int64_t id);
  // The ids call's prompt begins with (at least prefix of them): its base's,
  // found among the calls read with it, or else read by id into elsewhere.
  // A base that is missing or too short is an error naming the call.
  Result<const std::vector<int32_t>*> PromptBase(int64_t call, int64_t base_id, size_t prefix,
                                                 const std::vector<int32_t>* found, std::vector<int32_t>& elsewhere);

  std::recursive_mutex mutex_;
  Database db_;
  int busy_timeout_ms_ = 10000;
  // The last few calls' prompt ids per rollout, for delta encoding without
  // reading them back: a main thread plus a few side calls each, 64 MiB in all
  // (a 50K-token conversation's four prompts are 800 KB).
  RecentPrompts recent_prompts_{4, 64 << 20};
  // Blob ids by a fingerprint of their bytes, for parts sent again and again
  // (a system prompt, the tools, the conversation so far): a hit skips the
  // SHA-256 (~0.75 µs a KB here; a harness's conversation is tens of KB a
  // call) and PutBlob's two statements. The fingerprint is XXH3-128 seeded at
  // random per store, so no one can make two parts that share one. Blobs are
  // never deleted, so a committed id stays right; ids a transaction interns
  // join only when it commits.
  using Fingerprint = std::pair<uint64_t, uint64_t>;
  struct FingerprintHash {
    size_t operator()(const Fingerprint& f) const { return static_cast<size_t>(f.first); }
  };
  std::unordered_map<Fingerprint, int64_t, FingerprintHash> committed_blobs_;
  std::vector<std::pair<Fingerprint, int64_t>> pending_blobs_;
  const uint64_t blob_seed_ = forge::RandomSeed();
  int checkpoint_pages_ = 0;
  std::function<void()> checkpoint_due_;
  // CallsOfRollout's queries (all fields, tokens only), prepared on first use;
  // declared after db_ so they are finalised before it closes.
  std::optional<Statement> calls_query_[2];
  std::optional<Statement> token_calls_query_;  // ReadTokenCalls'
};

}  // namespace forge::store
