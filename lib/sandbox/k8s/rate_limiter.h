// A token bucket shared by every request to one API server, as client-go's
// flowcontrol limiter: `qps` tokens a second, at most `burst` saved up.
#pragma once

#include <chrono>
#include <mutex>

namespace forge::sandbox::k8s {

class RateLimiter {
 public:
  // qps <= 0 turns the limit off.
  RateLimiter(double qps, int burst);

  // Blocks until the caller may send one request. Callers are served in the
  // order they arrive: each reserves its token, then sleeps off the deficit.
  void Acquire();

  // Pushes every caller back until `until` (a 429's Retry-After applies to all).
  void PauseUntil(std::chrono::steady_clock::time_point until);

  double qps() const { return qps_; }

 private:
  using Clock = std::chrono::steady_clock;
  const double qps_;
  const double burst_;
  std::mutex mu_;
  double tokens_;
  Clock::time_point last_;
  Clock::time_point paused_until_{};
};

}  // namespace forge::sandbox::k8s
