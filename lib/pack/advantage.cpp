#include "pack/advantage.h"

#include <cmath>

namespace forge::pack {

std::vector<double> GroupAdvantages(const std::vector<double>& rewards, Estimator estimator,
                                    double epsilon) {
  const size_t n = rewards.size();
  std::vector<double> out(n, 0.0);
  if (n == 0) return out;
  if (n == 1) {
    out[0] = estimator == Estimator::kGrpo ? rewards[0] / (1.0 + epsilon) : rewards[0];
    return out;
  }
  double sum = 0;
  for (double r : rewards) sum += r;
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
  for (double r : rewards) squares += (r - mean) * (r - mean);
  const double std = std::sqrt(squares / static_cast<double>(n - 1));
  for (size_t i = 0; i < n; ++i) {
    switch (estimator) {
      case Estimator::kGrpo: out[i] = (rewards[i] - mean) / (std + epsilon); break;
      case Estimator::kDrGrpo: out[i] = rewards[i] - mean; break;
      case Estimator::kRloo: out[i] = rewards[i] - (sum - rewards[i]) / static_cast<double>(n - 1); break;
    }
  }
  return out;
}

bool ZeroVariance(const std::vector<double>& rewards) {
  for (double r : rewards) {
    if (r != rewards.front()) return false;
  }
  return true;
}

const char* EstimatorName(Estimator e) {
  switch (e) {
    case Estimator::kGrpo: return "grpo";
    case Estimator::kDrGrpo: return "drgrpo";
    case Estimator::kRloo: return "rloo";
  }
  return "?";
}

}  // namespace forge::pack
