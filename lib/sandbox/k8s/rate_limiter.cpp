#include "sandbox/k8s/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace forge::sandbox::k8s {

RateLimiter::RateLimiter(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)), last_(Clock::now()) {}

void RateLimiter::Acquire() {
  Clock::time_point ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Clock::time_point now = Clock::now();
    if (qps_ <= 0) {
      ready = std::max(now, paused_until_);
    } else {
      double elapsed = std::chrono::duration<double>(now - last_).count();
      tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
      last_ = now;
      tokens_ -= 1;  // may go negative: a debt later callers queue behind
      double wait = tokens_ >= 0 ? 0 : -tokens_ / qps_;
      ready = std::max(now + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(wait)),
                       paused_until_);
    }
  }
  std::this_thread::sleep_until(ready);
}

void RateLimiter::PauseUntil(Clock::time_point until) {
  std::lock_guard<std::mutex> lock(mu_);
  paused_until_ = std::max(paused_until_, until);
}

}  // namespace forge::sandbox::k8s
