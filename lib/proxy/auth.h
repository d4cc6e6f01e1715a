// Rollout attribution: a harness presents its rollout's secret as its API key;
// the store keeps only SHA-256 hashes of secrets. Positive lookups are cached
// for a few seconds, by the secret itself (only in memory, and only secrets
// that resolved), so a busy rollout neither queries SQLite nor hashes on
// every call. A rollout that has ended (finished or cancelled) no longer
// owns its secret: a key that outlives its sandbox records nothing.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "store/store.h"

namespace forge::proxy {

struct SecretOwner {
  std::string rollout;
  std::string ended;  // the rollout's status when it has ended ("finished", "cancelled"); empty while live
};

class SecretResolver {
 public:
  SecretResolver(store::Store& store, double ttl_seconds) : store_(store), ttl_(ttl_seconds) {}
  // The rollout the secret belongs to; nullopt when unknown. Only live
  // rollouts are cached, so an ended one is seen as ended within the TTL.
  Result<std::optional<SecretOwner>> Resolve(const std::string& secret);

 private:
  struct Entry {
    std::string rollout;
    std::chrono::steady_clock::time_point expires;
  };
  store::Store& store_;
  std::chrono::duration<double> ttl_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> cache_;  // by secret
};

}  // namespace forge::proxy
