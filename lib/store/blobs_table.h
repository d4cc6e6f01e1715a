// Content-addressed blobs and the skeletons that name them (content.h): a
// request or response is stored as its parts, each once under its SHA-256,
// plus a small skeleton; this table writes and reads both.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/status.h"
#include "store/store_database.h"

namespace forge::store {

class BlobsTable : private TransactionObserver {
 public:
  explicit BlobsTable(StoreDatabase& db);
  BlobsTable(const BlobsTable&) = delete;
  BlobsTable& operator=(const BlobsTable&) = delete;

  // Stores a document's parts; returns its skeleton's text (empty for null).
  Result<std::string> PutContent(const nlohmann::json& value);
  // The same for a document's JSON text, sliced into parts without parsing
  // it (content.h: SplitText). A proxy stores a request's parts ahead of its
  // call this way, while the upstream answers, so the call's own commit
  // stays small: the result is the value for CallRecord::request_skeleton.
  // Run it inside WriteTransaction. Parts of a call that is never appended
  // are harmless: content-addressed.
  Result<std::string> PutContentText(std::string_view text);
  // The document a skeleton's text names (null for empty).
  Result<nlohmann::json> GetContent(const std::string& skeleton);
  // An image blob's SHA-256 digest (its 32 bytes), by the id a skeleton names it by.
  Result<std::string> HashOf(int64_t id);
  // A blob's bytes (an image's: its file), by its SHA-256 in hex (as
  // CallRecord::images names it); NotFound when the store has none.
  Result<std::string> BlobByHash(std::string_view hex);

 private:
  // Stores one part of a document (content.h: StorePart), its ref remembered
  // when it holds images, so a part sent again is neither scanned for images
  // nor decoded again.
  Result<std::string> PutPart(std::string_view part);
  // Stores one part unless it is there already; returns its blob id.
  Result<int64_t> PutBlob(std::string_view data);
  Result<int64_t> InsertBlob(const std::string& hash, std::string_view data);
  Result<std::string> GetBlob(int64_t id);
  void Committed() override;
  void RolledBack() override {
    pending_blobs_.clear();
    pending_parts_.clear();
  }

  StoreDatabase& db_;
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
  // The same for parts that hold images: their refs (content.h).
  std::unordered_map<Fingerprint, std::string, FingerprintHash> committed_parts_;
  std::vector<std::pair<Fingerprint, std::string>> pending_parts_;
  Fingerprint FingerprintOf(std::string_view data) const;
  Result<int64_t> PutBlob(std::string_view data, Fingerprint seen);  // seen: its fingerprint
  const uint64_t blob_seed_ = forge::RandomSeed();
};

}  // namespace forge::store
