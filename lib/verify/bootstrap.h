// Bootstrap confidence intervals that anyone can reproduce: the generator is
// SplitMix64 (Steele, Lea and Flood 2014), written out here, so a given seed
// draws the same resamples on every machine and a ten-line script in any
// language can check an interval (tests/unit/verify_compare_test.cpp does).
//
// A resample draws each of its N indices as Next() % N, in order. The
// interval is the percentile interval of the resampled statistics: sorted
// ascending, s[floor(R * a/2)] and s[ceil(R * (1 - a/2)) - 1], a = 1 -
// confidence, R resamples (floor and ceil with a 1e-9 tolerance, so that
// floating point does not move an index: 100 x 0.05 is 5).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "verify/interval.h"

namespace forge::verify {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }

 private:
  uint64_t state_;
};

// A task's own stream: the seed mixed with the task id's FNV-1a hash, so a
// task's interval does not change when other tasks come or go.
uint64_t SeedFor(uint64_t seed, std::string_view key);

// The bootstrap's settings (compare and report share them).
struct BootstrapSettings {
  int64_t resamples = 10000;
  uint64_t seed = 1;
  double confidence = 0.95;
};

// The percentile interval of `samples` (sorted in place).
Interval PercentileInterval(std::vector<double>& samples, double estimate, double confidence);

// The paired bootstrap of means over units: values[m][u] is statistic m on
// unit u (every m has the same units). Each of `resamples` resamples draws
// the units once and takes every statistic's mean over them; the estimate is
// the mean over all units. Preconditions: at least one unit, resamples >= 1.
std::vector<Interval> BootstrapMeans(const std::vector<std::vector<double>>& values, int64_t resamples,
                                     uint64_t seed, double confidence);

}  // namespace forge::verify
