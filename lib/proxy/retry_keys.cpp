#include "proxy/retry_keys.h"

namespace forge::proxy {

std::string RetryKeys::KeyFor(const std::string& rollout, const std::string& body_hash, int retry_count) {
  std::lock_guard<std::mutex> lock(mutex_);
  int& n = seen_[rollout][body_hash];
  if (retry_count <= 0 || n == 0) ++n;  // a new logical call
  return body_hash + "#" + std::to_string(n);
}

}  // namespace forge::proxy
