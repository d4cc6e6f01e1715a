// Intervals for one task that are right at small n: the posterior of its
// pass rate under Jeffreys' prior, for one run and for the difference of two.
//
// A task's valid trials are taken as independent with pass probability p.
// Under Jeffreys' prior Beta(1/2, 1/2), c passes in n trials give the
// posterior Beta(c + 1/2, n - c + 1/2); its equal-tailed interval is the
// one Brown, Cai and DasGupta (2001) recommend for small n. The task's
// pass@k is g(p) = 1 - (1 - p)^k and its pass^k is g(p) = p^k, both
// increasing in p, so:
//
// - A run's level: the equal-tailed posterior interval of g(p), which is g
//   of p's quantiles; as in Jeffreys' interval, the lower end is 0 when no
//   trial passed and the upper end 1 when every trial did.
// - B - A: the two runs' posteriors are independent; the interval is the
//   equal-tailed interval of the posterior of D = g(p_B) - g(p_A),
//   P(D <= d) = integral of f(x) F(...) over the run with more trials
//   (f its density, F the other run's distribution function), computed by
//   adaptive Gauss-Kronrod quadrature to 1e-12 after the substitution
//   x = sin^2(t) (which makes Jeffreys' densities smooth), graded where F
//   meets a power singularity, and inverted by a bracketing search over the
//   representable doubles (D can live on any scale). pass@k's D is pass^k's
//   of the failure rates, so it keeps its precision near 0.
//
// Each interval is widened, when needed, to hold the estimate shown beside
// it (the unbiased pass@k or pass^k from c and n): the estimate can lie past
// an equal-tailed end when a run passed every trial or none.
#pragma once

#include <cstdint>

#include "verify/interval.h"

namespace forge::verify {

enum class Measure { kPassAtK, kPassHatK };

struct PassCount {
  int64_t n = 0;  // valid trials
  int64_t c = 0;  // passes, 0 <= c <= n
};

// The regularized incomplete beta function I_x(a, b): the distribution
// function of Beta(a, b) at x. a, b > 0.
double RegularizedBeta(double x, double a, double b);
// Its inverse in x: the q-quantile of Beta(a, b).
double BetaQuantile(double q, double a, double b);

// The run's pass@k or pass^k with its posterior interval at `confidence`.
Interval LevelInterval(PassCount run, Measure measure, int64_t k, double confidence);

// P(D <= d), D = g(p_B) - g(p_A) under the two runs' posteriors.
double DifferenceCdf(PassCount a, PassCount b, Measure measure, int64_t k, double d);

// B - A in pass@k or pass^k (the difference of the unbiased estimates) with
// the equal-tailed posterior interval of D at `confidence`.
Interval DifferenceInterval(PassCount a, PassCount b, Measure measure, int64_t k, double confidence);

}  // namespace forge::verify
