// An estimate with the ends of an interval around it, and how it is printed.
#pragma once

#include <string>

#include <fmt/format.h>

namespace forge::verify {

struct Interval {
  double estimate = 0;
  double low = 0;
  double high = 0;
};

// A difference with its sign, to three places ("+0.125").
inline std::string SignedText(double v) { return fmt::format("{:+.3f}", v); }
// "+0.125 [-0.050, +0.300]".
inline std::string IntervalText(const Interval& v) {
  return fmt::format("{} [{}, {}]", SignedText(v.estimate), SignedText(v.low), SignedText(v.high));
}
// A level: "0.500 [0.210, 0.790]".
inline std::string LevelText(const Interval& v) {
  return fmt::format("{:.3f} [{:.3f}, {:.3f}]", v.estimate, v.low, v.high);
}

}  // namespace forge::verify
