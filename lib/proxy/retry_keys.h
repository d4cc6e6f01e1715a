// SDK retries (x-stainless-retry-count > 0) resend the same request. The
// store skips a call whose (rollout, retry_key) it already holds, so every
// call gets a key no other call has had, in this process or an earlier one
// on the same store, and a marked retry gets the key of its rollout's last
// call with the same body.
//
// The keys of a proxy before a restart are not those of the one after: a
// redone attempt (forge-launch gives it the same rollout id) that sends its
// first request again is a new call, not a retry to drop. What is remembered
// is bounded: past max_remembered bodies it starts over, and a retry of a
// call from before then is recorded a second time, which loses nothing.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace forge::proxy {

class RetryKeys {
 public:
  explicit RetryKeys(size_t max_remembered = 1 << 16);
  // retry_count < 0: the client sent no retry header.
  std::string KeyFor(const std::string& rollout, std::string_view body, int retry_count);
  size_t remembered();

 private:
  const size_t max_remembered_;
  // Bodies are told apart by XXH3-128 seeded at random per process (a
  // SHA-256 of a 200 KB conversation was ~100 µs of the io thread a call),
  // so no client can make two bodies that look alike.
  const uint64_t seed_;
  const std::string process_;  // random: begins every key of this process
  std::mutex mutex_;
  uint64_t calls_ = 0;
  std::unordered_map<std::string, std::string> last_key_;  // rollout, body fingerprint → key
};

}  // namespace forge::proxy
