// The plain values the store's tables take and give back, shared by the
// store's callers without the store itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace forge::store {

using Json = nlohmann::json;

// SQLite's default page cache, for OpenOptions::cache_kib.
constexpr int kSmallWriterCacheKiB = 2 << 10;

struct OpenOptions {
  bool read_only = false;
  // Apply forward migrations up to this version only (tests of old schemas).
  int target_version = -1;  // -1: latest
  int busy_timeout_ms = 10000;
  // A writer's page cache, KiB; 0: the call writer's (store_database.cpp).
  // A process that writes a row or two a rollout (forge-launch) keeps
  // SQLite's own 2 MiB: a larger cache fills with the run's pages and is
  // held to its end.
  int cache_kib = 0;
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
  // The images of the request the upstream saw, in the order it was sent them
  // (the order of their placeholder tokens in prompt_ids): each one's SHA-256,
  // 64 hex digits, naming its bytes in the store (BlobsTable::BlobByHash).
  // Set by the store from the request's parts when it appends the call;
  // what a writer puts here is ignored.
  std::vector<std::string> images;
  // Where the upstream said their placeholder tokens are, as it sent it
  // (vLLM: top-level "mm_placeholders", {"image": [{"offset", "length"}...]},
  // offsets into prompt_ids); empty when it said nothing.
  std::string mm_placeholders;

  // Cheaper forms for a proxy that relays bytes (each used when the Json
  // field above is null): the request and responses as their JSON text,
  // stored by slicing the text into parts without parsing it, the upstream
  // request as its text (a translated call's, as sent) or as a top-level
  // patch of the request ({"set": {...}, "unset": [...]}, what TopLevelDiff
  // makes) or that patch's text, and the usage as the upstream sent its
  // text. Readers get Json as usual.
  std::string request_text;
  std::string request_skeleton;  // the request's parts stored ahead by BlobsTable::PutContentText
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

// What CallsTable::CallsOfRollout reads of each call: everything, or only what
// token-level training data needs (see there).
enum class CallFields { kAll, kTokens };

}  // namespace forge::store
