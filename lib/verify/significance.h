// Which per-task differences a page may call real when many tasks are
// compared at once.
//
// Each task is tested on its own with Fisher's exact test of "both runs have
// the same pass rate" (the 2x2 table of passes and failures of A and B; the
// two-sided p-value sums the probabilities, under the hypergeometric law of
// A's passes given the total, of every table no more likely than the one
// observed, with a relative tolerance of 1e-7 as R's fisher.test). The
// hypothesis is the same for every k, since pass@k and pass^k are increasing
// in the rate. Holm's step-down adjustment over the m tasks compared keeps
// the chance of calling any equal task different at most alpha: a task is
// marked only when its adjusted p-value is at most alpha = 1 - confidence.
#pragma once

#include <cstdint>
#include <vector>

namespace forge::verify {

// Two-sided p-value of Fisher's exact test on passes c_a of n_a and c_b of n_b.
double FisherExactP(int64_t n_a, int64_t c_a, int64_t n_b, int64_t c_b);

// Holm's adjusted p-values, in the order given: sorted ascending, the i-th
// (from 0) becomes max over j <= i of min(1, (m - j) p_(j)).
std::vector<double> HolmAdjusted(const std::vector<double>& p_values);

}  // namespace forge::verify
