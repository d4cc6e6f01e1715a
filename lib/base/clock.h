// Elapsed time for stage timings and statistics.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace forge {

// Seconds from `start` to now, on the steady clock.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Nanoseconds on clock (CLOCK_REALTIME_COARSE is the clock the kernel stamps
// file times with: a file changed after this reading never has a change time
// below it).
inline int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Seconds on the monotonic clock, for deadlines in code below std::chrono
// (forge-box, the tracer).
inline double MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

}  // namespace forge
