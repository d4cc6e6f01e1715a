// Server-side conversation state for the Responses API's previous_response_id:
// the chat messages of a conversation up to and including a response's output,
// kept under that response's id. A request naming previous_response_id starts
// from them. `store: false` requests are never kept.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "proxy/client_format.h"

namespace forge::proxy {

class ResponseStateStore {
 public:
  virtual ~ResponseStateStore() = default;
  virtual void Put(const std::string& response_id, Json messages) = 0;
  virtual std::optional<Json> Get(const std::string& response_id) const = 0;
};

// In memory, bounded: the oldest conversations go first once either bound is
// passed, so a long-running proxy does not grow without limit.
class MemoryResponseStateStore : public ResponseStateStore {
 public:
  explicit MemoryResponseStateStore(size_t max_entries = 4096, size_t max_bytes = 256u << 20)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}
  void Put(const std::string& response_id, Json messages) override;
  std::optional<Json> Get(const std::string& response_id) const override;
  size_t size() const;

 private:
  struct Entry {
    Json messages;
    size_t bytes = 0;
  };
  mutable std::mutex mu_;
  size_t max_entries_, max_bytes_, bytes_ = 0;
  std::unordered_map<std::string, Entry> entries_;
  std::deque<std::string> order_;  // insertion order, for eviction
};

}  // namespace forge::proxy
