#include "pack/call_reader.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>

#include "base/clock.h"

namespace forge::pack {

Result<Stores> Stores::Open(const std::vector<std::string>& paths) {
  Stores s;
  for (const std::string& path : paths) {
    if (!std::filesystem::exists(path)) return Status::NotFound(path + ": no such store");
    store::OpenOptions o;
    o.read_only = true;
    auto opened = store::Store::Open(path, o);
    if (!opened.ok()) return opened.status().Prefixed(path);
    // One snapshot for the whole run (a proxy may still be recording), and
    // no lock taken and dropped per rollout's query.
    if (Status begun = (*opened)->db().BeginRead(); !begun.ok()) return begun.Prefixed(path);
    s.stores_.push_back(std::move(*opened));
  }
  return s;
}

Result<std::vector<store::CallRecord>> Stores::Calls(const std::string& rollout_id, store::CallFields fields) {
  for (auto& store : stores_) {
    auto calls = store->calls().CallsOfRollout(rollout_id, fields);
    if (!calls.ok()) return calls.status().Prefixed(store->path());
    if (!calls->empty()) return std::move(*calls);
  }
  return std::vector<store::CallRecord>{};
}

Result<size_t> Stores::TokenCalls(const std::string& rollout_id, std::vector<store::CallRecord>* calls) {
  for (auto& store : stores_) {
    auto n = store->calls().ReadTokenCalls(rollout_id, calls);
    if (!n.ok()) return n.status().Prefixed(store->path());
    if (*n) return n;
  }
  return size_t{0};
}

Result<std::string> Stores::Image(const std::string& hex) {
  for (auto& store : stores_) {
    auto bytes = store->blobs().BlobByHash(hex);
    if (bytes.ok() || bytes.status().kind() != Kind::kNotFound) return bytes;
  }
  return Status::NotFound("image " + hex + " is in none of the stores");
}

void Stores::Close() {
  for (auto& store : stores_) (void)store->db().EndRead();
  stores_.clear();
}

CallReader::CallReader(Stores& stores, std::vector<std::string> rollout_ids, std::vector<bool> wanted,
                       bool token_only)
    : stores_(stores),
      ids_(std::move(rollout_ids)),
      wanted_(std::move(wanted)),
      token_only_(token_only),
      chunk_count_((ids_.size() + kChunk - 1) / kChunk) {
  for (Chunk& c : chunks_) c.slots.resize(std::min(kChunk, ids_.size()));
  reader_ = std::thread([this] { ReadAll(); });
}

CallReader::~CallReader() {
  stop_ = true;
  free_.release();
  reader_.join();
}

void CallReader::ReadAll() {
  for (size_t k = 0; k < chunk_count_; ++k) {
    free_.acquire();
    if (stop_) return;
    Chunk& c = chunks_[k % 2];
    c.begin = k * kChunk;
    c.end = std::min(ids_.size(), c.begin + kChunk);
    Read(c);
    full_.release();
    if (!c.status.ok()) return;
  }
}

const CallReader::Chunk& CallReader::Next(double* waited_seconds) {
  if (next_ > 0) free_.release();  // the caller is done with the previous chunk
  auto started = std::chrono::steady_clock::now();
  full_.acquire();
  *waited_seconds = SecondsSince(started);
  return chunks_[next_++ % 2];
}

void CallReader::Read(Chunk& chunk) {
  timespec cpu_start, cpu_end;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_start);
  chunk.status = Status::Ok();
  for (size_t i = chunk.begin; i < chunk.end; ++i) {
    Slot& slot = chunk.slots[i - chunk.begin];
    slot.n = 0;
    slot.wanted = wanted_[i];
    if (!slot.wanted || stores_.empty()) continue;
    if (token_only_) {
      auto n = stores_.TokenCalls(ids_[i], &slot.calls);
      if (!n.ok()) {
        chunk.status = n.status();
        break;
      }
      slot.n = *n;
      std::span<const store::CallRecord> calls = slot.Calls();
      if (std::none_of(calls.begin(), calls.end(), [](const store::CallRecord& c) {
            return !c.side_call && (c.prompt_ids.empty() || c.completion_ids.empty());
          })) {
        continue;
      }
    }
    auto got = stores_.Calls(ids_[i], store::CallFields::kAll);
    if (!got.ok()) {
      chunk.status = got.status();
      break;
    }
    slot.calls = std::move(*got);
    slot.n = slot.calls.size();
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_end);
  chunk.read_cpu_seconds = static_cast<double>(cpu_end.tv_sec - cpu_start.tv_sec) +
                           static_cast<double>(cpu_end.tv_nsec - cpu_start.tv_nsec) * 1e-9;
}

}  // namespace forge::pack
