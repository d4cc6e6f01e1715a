#include "proxy/retry_keys.h"

#include <xxhash.h>
#if defined(__x86_64__)
// XXH3 with the widest vectors this CPU has, as for the store's part keys.
#include <xxh_x86dispatch.h>
#endif

#include "base/hash.h"

namespace forge::proxy {

RetryKeys::RetryKeys(size_t max_remembered)
    : max_remembered_(max_remembered), seed_(RandomSeed()), process_(RandomHex(8)) {}

std::string RetryKeys::KeyFor(const std::string& rollout, std::string_view body, int retry_count) {
  XXH128_hash_t digest = XXH3_128bits_withSeed(body.data(), body.size(), seed_);
  std::string seen = rollout;
  seen.push_back('\0');
  seen.append(reinterpret_cast<const char*>(&digest), sizeof digest);
  std::lock_guard<std::mutex> lock(mutex_);
  if (retry_count > 0) {
    if (auto it = last_key_.find(seen); it != last_key_.end()) return it->second;
  }
  if (last_key_.size() >= max_remembered_) last_key_.clear();
  std::string key = process_ + "-" + std::to_string(++calls_);
  last_key_[std::move(seen)] = key;
  return key;
}

size_t RetryKeys::remembered() {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_key_.size();
}

}  // namespace forge::proxy
