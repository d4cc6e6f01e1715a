// Outcome-level advantages computed per group of rollouts of one task (veRL's
// uid), then broadcast to every trainable token of the rollout's samples.
#pragma once

#include <string>
#include <vector>

namespace forge::pack {

enum class Estimator {
  kGrpo,    // (r - mean) / (std + eps), std with Bessel's correction (torch.std)
  kDrGrpo,  // r - mean
  kRloo,    // r - mean of the others = n/(n-1) (r - mean)
};

// Advantages for one group's rewards, in order. A group of one has no
// baseline; as in veRL, its mean is taken as 0 (and its std as 1).
std::vector<double> GroupAdvantages(const std::vector<double>& rewards, Estimator estimator,
                                    double epsilon = 1e-6);

// All rewards equal: every advantage is 0 and the group teaches nothing.
bool ZeroVariance(const std::vector<double>& rewards);

const char* EstimatorName(Estimator estimator);

}  // namespace forge::pack
