// Elapsed time for stage timings and statistics.
#pragma once

#include <chrono>

namespace forge {

// Seconds from `start` to now, on the steady clock.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace forge
