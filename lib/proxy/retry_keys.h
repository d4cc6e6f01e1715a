// SDK retries (x-stainless-retry-count > 0) resend the same request. The
// store skips a call whose (rollout, retry_key) it already holds, so each
// successful call gets a key from its body hash and an occurrence number:
// a fresh identical request gets a new number, a marked retry the latest one.
#pragma once

#include <map>
#include <mutex>
#include <string>

namespace forge::proxy {

class RetryKeys {
 public:
  // retry_count < 0: the client sent no retry header.
  std::string KeyFor(const std::string& rollout, const std::string& body_hash, int retry_count);

 private:
  std::mutex mutex_;
  std::map<std::string, std::map<std::string, int>> seen_;  // rollout → body hash → occurrences
};

}  // namespace forge::proxy
