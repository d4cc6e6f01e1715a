// Replay: serve a past run's recorded responses, matched by the client's
// request (its JSON with "stream" removed, hashed), so a harness can be
// re-run offline against a past rollout without a policy server.
//
// The recordings come from a store, or from a recorded-exchange file: JSON
// Lines, one recorded call per line, as `forge-proxy --export` and
// `--dump-rollout` write them (docs/forge-proxy.md, "Recorded-exchange
// files"). The same request recorded several times (several samples of one
// prompt) is answered with each recording in turn, in recorded order.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "base/status.h"

namespace forge::proxy {

// The schema tag of a recorded-exchange line.
inline constexpr const char* kCallSchema = "forge.call/1";

// One recorded answer, with the token data recorded with it, so a replayed
// call is recorded again as the original was.
struct RecordedExchange {
  nlohmann::json response;  // chat form, as the upstream answered (assembled when streamed)
  std::string model;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> completion_ids;
  std::vector<float> logprobs;
};

class ReplayIndex {
 public:
  // A store or a recorded-exchange file, told apart by the file's first bytes.
  static Result<std::unique_ptr<ReplayIndex>> Load(const std::string& path, Env& env);
  static Result<std::unique_ptr<ReplayIndex>> LoadStore(const std::string& store_path);
  // Bad lines are reported on stderr as "file:line: reason" and skipped; the
  // rest are served. InvalidData only when no line at all can be served.
  static Result<std::unique_ptr<ReplayIndex>> LoadFile(const std::string& path, Env& env);

  static std::string RequestKey(const std::string& client_format, const nlohmann::json& request);

  // Adds one recorded call (a line of a recorded-exchange file). A failed
  // call is skipped (Ok, nothing added); a line that cannot be served is a
  // InvalidData naming the field.
  Status Add(const nlohmann::json& call);

  // The next recorded answer to this request (cycling through the
  // recordings in order), or nullptr. Safe from several threads.
  const RecordedExchange* Next(const std::string& key);

  size_t size() const { return exchanges_; }
  size_t bad_lines() const { return bad_lines_; }
  const std::vector<std::string>& models() const { return models_; }

 private:
  struct Recordings {
    std::vector<RecordedExchange> all;
    std::atomic<size_t> next{0};
  };
  void AddExchange(const std::string& key, RecordedExchange exchange);

  std::unordered_map<std::string, Recordings> by_request_;
  std::vector<std::string> models_;
  size_t exchanges_ = 0;
  size_t bad_lines_ = 0;
};

// The chunks a stream of this whole chat response would have carried, for
// replaying a recorded response to a streaming client.
std::vector<nlohmann::json> ChatResponseToChunks(const nlohmann::json& response);

}  // namespace forge::proxy
