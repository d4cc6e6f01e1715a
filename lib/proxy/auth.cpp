#include "proxy/auth.h"

#include "base/hash.h"

namespace forge::proxy {

Result<std::optional<std::string>> SecretResolver::Resolve(const std::string& secret) {
  if (secret.empty()) return std::optional<std::string>();
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(secret);
    if (it != cache_.end() && it->second.expires > now) return std::optional<std::string>(it->second.rollout);
    if (cache_.size() > 100000) cache_.clear();  // bound memory against key spraying
  }
  std::string hash = Sha256Hex(secret);
  auto row = store_.RolloutBySecretHash(hash);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return std::optional<std::string>();
  std::string rollout = (*row)->id;
  std::lock_guard<std::mutex> lock(mutex_);
  cache_[secret] = {rollout, now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(ttl_)};
  return std::optional<std::string>(rollout);
}

}  // namespace forge::proxy
