#include "proxy/auth.h"

#include "base/hash.h"

namespace forge::proxy {

namespace {

bool HasEnded(const std::string& status) { return status == "finished" || status == "cancelled"; }

}  // namespace

Result<std::optional<SecretOwner>> SecretResolver::Resolve(const std::string& secret) {
  if (secret.empty()) return std::optional<SecretOwner>();
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(secret);
    if (it != cache_.end() && it->second.expires > now) return std::optional<SecretOwner>({it->second.rollout, ""});
    if (cache_.size() > 100000) cache_.clear();  // bound memory against key spraying
  }
  std::string hash = Sha256Hex(secret);
  auto row = store_.rollouts().BySecretHash(hash);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return std::optional<SecretOwner>();
  SecretOwner owner{(*row)->id, HasEnded((*row)->status) ? (*row)->status : ""};
  if (owner.ended.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_[secret] = {owner.rollout, now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(ttl_)};
  }
  return std::optional<SecretOwner>(std::move(owner));
}

}  // namespace forge::proxy
