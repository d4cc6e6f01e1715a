// Where forge-pack's recorded calls come from: the stores (one read snapshot
// each, for the whole run), and a reader thread that reads the calls of the
// next chunk of rollouts while the caller assembles the current one.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <semaphore>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "store/store.h"

namespace forge::pack {

class Stores {
 public:
  static Result<Stores> Open(const std::vector<std::string>& paths);
  Stores() = default;
  Stores(Stores&&) = default;
  ~Stores() { Close(); }

  bool empty() const { return stores_.empty(); }
  // The rollout's calls from the first store holding any.
  Result<std::vector<store::CallRecord>> Calls(const std::string& rollout_id, store::CallFields fields);
  // The same, token fields only, into the first N elements of *calls
  // (reused: see CallsTable::ReadTokenCalls); returns N.
  Result<size_t> TokenCalls(const std::string& rollout_id, std::vector<store::CallRecord>* calls);
  // An image's bytes by its SHA-256 in hex (CallRecord::images), from the
  // first store holding it.
  Result<std::string> Image(const std::string& hex);
  // Ends the read snapshots; read-only, so nothing is lost.
  void Close();

 private:
  std::vector<std::unique_ptr<store::Store>> stores_;
};

// The rollout ids go through a chunk at a time, so the caller's stage timers
// tick per chunk rather than per rollout (reading a CPU clock is a system
// call) and each slot's calls are reused. Only the reader thread touches the
// stores until the last chunk is in.
class CallReader {
 public:
  struct Slot {
    bool wanted = false;  // calls are read only for wanted rollouts
    std::vector<store::CallRecord> calls;
    size_t n = 0;  // calls[0, n) are this rollout's
    std::span<const store::CallRecord> Calls() const { return {calls.data(), n}; }
  };
  struct Chunk {
    size_t begin = 0, end = 0;  // rollouts [begin, end), slot i - begin each
    std::vector<Slot> slots;
    Status status = Status::Ok();  // a store error ends the run
    double read_cpu_seconds = 0;   // the reader thread's own
  };

  // token_only: token fields suffice, unless a rollout has a call without
  // ids (its sample is built, and counted, from messages).
  CallReader(Stores& stores, std::vector<std::string> rollout_ids, std::vector<bool> wanted, bool token_only);
  ~CallReader();  // stops the reader and joins it
  CallReader(const CallReader&) = delete;
  CallReader& operator=(const CallReader&) = delete;

  size_t chunk_count() const { return chunk_count_; }
  // Waits for the next chunk (chunk k on the k-th call), giving the previous
  // one back to the reader; *waited_seconds is the wall time spent waiting.
  const Chunk& Next(double* waited_seconds);

 private:
  static constexpr size_t kChunk = 32;  // small enough that its calls are still in cache when assembled
  void ReadAll();
  void Read(Chunk& chunk);

  Stores& stores_;
  const std::vector<std::string> ids_;
  const std::vector<bool> wanted_;
  const bool token_only_;
  const size_t chunk_count_;
  // Chunk k is read into chunks_[k % 2]; free_ counts buffers the reader may
  // fill, full_ those ready for the caller.
  std::array<Chunk, 2> chunks_;
  std::counting_semaphore<> free_{2}, full_{0};
  std::atomic<bool> stop_{false};
  size_t next_ = 0;
  std::thread reader_;
};

}  // namespace forge::pack
