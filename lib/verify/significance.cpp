#include "verify/significance.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace forge::verify {

namespace {

double LogChoose(int64_t n, int64_t k) {
  return std::lgamma(static_cast<double>(n + 1)) - std::lgamma(static_cast<double>(k + 1)) -
         std::lgamma(static_cast<double>(n - k + 1));
}

}  // namespace

double FisherExactP(int64_t n_a, int64_t c_a, int64_t n_b, int64_t c_b) {
  // A's passes x given the total passes: hypergeometric on [lo, hi].
  const int64_t passes = c_a + c_b, total = n_a + n_b;
  const int64_t lo = std::max<int64_t>(0, passes - n_b), hi = std::min(passes, n_a);
  const double log_all = LogChoose(total, passes);
  auto log_p = [&](int64_t x) { return LogChoose(n_a, x) + LogChoose(n_b, passes - x) - log_all; };
  const double observed = log_p(c_a);
  double p = 0;
  for (int64_t x = lo; x <= hi; ++x) {
    const double lp = log_p(x);
    if (lp <= observed + std::log1p(1e-7)) p += std::exp(lp);
  }
  return std::min(1.0, p);
}

std::vector<double> HolmAdjusted(const std::vector<double>& p_values) {
  const size_t m = p_values.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p_values[x] < p_values[y]; });
  std::vector<double> adjusted(m);
  double running = 0;
  for (size_t j = 0; j < m; ++j) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - j) * p_values[order[j]]));
    adjusted[order[j]] = running;
  }
  return adjusted;
}

}  // namespace forge::verify
