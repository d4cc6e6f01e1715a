#include "verify/posterior.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "verify/metrics.h"

namespace forge::verify {

namespace {

// The continued fraction of I_x(a, b) (modified Lentz), which converges
// quickly for x < (a + 1) / (a + b + 2).
double BetaFraction(double x, double a, double b) {
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 100000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
    c = std::fabs(c) < kTiny ? kTiny : c;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
    c = std::fabs(c) < kTiny ? kTiny : c;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < 1e-16) break;
  }
  return h;
}

double LogBeta(double a, double b) { return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b); }

double IncompleteBeta(double x, double a, double b, double log_beta) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(a * std::log(x) + b * std::log1p(-x) - log_beta);
  if (x < (a + 1) / (a + b + 2)) return front * BetaFraction(x, a, b) / a;
  return 1 - front * BetaFraction(1 - x, b, a) / b;
}

// Bisection on t, x = sin^2(t): near 0 and 1 that resolves x to ~1e-34,
// where Jeffreys' densities still hold mass (I_x grows as sqrt(x)).
double QuantileOf(double q, double a, double b, double log_beta) {
  if (q <= 0) return 0;
  if (q >= 1) return 1;
  double lo = 0, hi = M_PI / 2;
  for (int i = 0; i < 100 && hi - lo > 1e-17; ++i) {
    const double mid = 0.5 * (lo + hi);
    const double sin = std::sin(mid);
    (IncompleteBeta(sin * sin, a, b, log_beta) < q ? lo : hi) = mid;
  }
  const double sin = std::sin(0.5 * (lo + hi));
  return sin * sin;
}

// The Jeffreys posterior of one run's pass rate.
class Posterior {
 public:
  explicit Posterior(PassCount run)
      : c_(static_cast<double>(run.c)), m_(static_cast<double>(run.n - run.c)), a_(c_ + 0.5), b_(m_ + 0.5),
        log_beta_(LogBeta(a_, b_)) {}
  double Cdf(double x) const { return IncompleteBeta(x, a_, b_, log_beta_); }
  double Quantile(double q) const { return QuantileOf(q, a_, b_, log_beta_); }
  // The density of t where x = sin^2(t): 2 sin^2c(t) cos^2m(t) / B(a, b),
  // smooth and bounded on [0, pi/2] (x's density is not, at 0 and 1).
  double AngleDensity(double t) const {
    const double log = (c_ > 0 ? 2 * c_ * std::log(std::sin(t)) : 0) + (m_ > 0 ? 2 * m_ * std::log(std::cos(t)) : 0);
    return 2 * std::exp(log - log_beta_);
  }

 private:
  double c_, m_, a_, b_, log_beta_;
};

// pass@k = 1 - (1 - p)^k and pass^k = p^k as functions of p.
double Level(Measure measure, double k, double p) {
  return measure == Measure::kPassHatK ? std::pow(p, k) : -std::expm1(k * std::log1p(-p));
}

double Estimate(PassCount run, Measure measure, int64_t k) {
  return measure == Measure::kPassHatK ? PassHatK(run.n, run.c, k) : PassAtK(run.n, run.c, k);
}

// Gauss-Kronrod 7-15 (QUADPACK's qk15 constants): the 15-point Kronrod
// estimate and its difference from the embedded 7-point Gauss rule.
constexpr std::array<double, 8> kKronrodNodes = {
    0.991455371120812639206854697526329, 0.949107912342758524526189684047851, 0.864864423359769072789712788640926,
    0.741531185599394439863864773280788, 0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
    0.207784955007898467600689403773245, 0.0};
constexpr std::array<double, 8> kKronrodWeights = {
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204, 0.104790010322250183839876322541518,
    0.140653259715525918745189590510238, 0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714};
constexpr std::array<double, 4> kGaussWeights = {0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
                                                 0.381830050505118944950369775488975, 0.417959183673469387755102040816327};

struct Piece {
  double lo, hi, value, error;
};

template <typename F>
Piece KronrodPiece(const F& f, double lo, double hi) {
  const double mid = 0.5 * (lo + hi), half = 0.5 * (hi - lo);
  const double centre = f(mid);
  double kronrod = centre * kKronrodWeights[7], gauss = centre * kGaussWeights[3];
  for (size_t i = 0; i < 7; ++i) {
    const double sum = f(mid - half * kKronrodNodes[i]) + f(mid + half * kKronrodNodes[i]);
    kronrod += kKronrodWeights[i] * sum;
    if (i % 2 == 1) gauss += kGaussWeights[i / 2] * sum;
  }
  return {lo, hi, kronrod * half, std::fabs((kronrod - gauss) * half)};
}

// Globally adaptive: the piece with the largest error estimate is halved
// until the estimates add up to at most `tolerance` (as QUADPACK's qag).
template <typename F>
double Integrate(const F& f, double lo, double hi, double tolerance) {
  constexpr int kStart = 8, kMaxPieces = 2000;
  std::vector<Piece> pieces;
  for (int i = 0; i < kStart; ++i) {
    pieces.push_back(KronrodPiece(f, lo + (hi - lo) * i / kStart, lo + (hi - lo) * (i + 1) / kStart));
  }
  while (static_cast<int>(pieces.size()) < kMaxPieces) {
    double error = 0;
    size_t worst = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
      error += pieces[i].error;
      if (pieces[i].error > pieces[worst].error) worst = i;
    }
    if (error <= tolerance) break;
    const Piece split = pieces[worst];
    const double mid = 0.5 * (split.lo + split.hi);
    pieces[worst] = KronrodPiece(f, split.lo, mid);
    pieces.push_back(KronrodPiece(f, mid, split.hi));
  }
  double sum = 0;
  for (const auto& p : pieces) sum += p.value;
  return sum;
}

// Doubles as ordered integers (-0 and +0 alike), for bisecting by
// representable values: scale-free, at most 64 halvings to one ulp.
int64_t Key(double x) {
  const auto bits = std::bit_cast<int64_t>(x);
  return bits >= 0 ? bits : -(bits & std::numeric_limits<int64_t>::max());
}
double FromKey(int64_t key) {
  return key >= 0 ? std::bit_cast<double>(key) : -std::bit_cast<double>(-key);
}

// The d with cdf(d) = target, for cdf increasing on [-1, 1] from 0 to 1:
// regula falsi (Illinois) steps alternating with halvings of the
// representable doubles in the bracket, as D can live on a scale of 1e-60
// (pass^k at a large k) as well as 1.
template <typename F>
double Invert(const F& cdf, double target) {
  double lo = -1, hi = 1, f_lo = -target, f_hi = 1 - target;
  int last = 0;
  for (int i = 0; i < 300 && Key(hi) - Key(lo) > 1; ++i) {
    double x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo);
    if (i % 2 == 1 || !(x > lo && x < hi)) {
      x = FromKey(Key(lo) + (Key(hi) - Key(lo)) / 2);
    }
    const double f = cdf(x) - target;
    if (std::fabs(f) < 1e-14) return x;
    if (f < 0) {
      lo = x, f_lo = f;
      if (last < 0) f_hi /= 2;
      last = -1;
    } else {
      hi = x, f_hi = f;
      if (last > 0) f_lo /= 2;
      last = 1;
    }
  }
  return std::fabs(f_lo) < std::fabs(f_hi) ? lo : hi;
}

Interval Widened(Interval v) {
  v.low = std::min(v.low, v.estimate);
  v.high = std::max(v.high, v.estimate);
  return v;
}

}  // namespace

double RegularizedBeta(double x, double a, double b) { return IncompleteBeta(x, a, b, LogBeta(a, b)); }

double BetaQuantile(double q, double a, double b) { return QuantileOf(q, a, b, LogBeta(a, b)); }

Interval LevelInterval(PassCount run, Measure measure, int64_t k, double confidence) {
  const Posterior p(run);
  const double alpha = 1 - confidence;
  Interval v{Estimate(run, measure, k), 0, 1};
  if (run.c > 0) v.low = Level(measure, static_cast<double>(k), p.Quantile(alpha / 2));
  if (run.c < run.n) v.high = Level(measure, static_cast<double>(k), p.Quantile(1 - alpha / 2));
  return Widened(v);
}

namespace {

// The posterior of D = g(p_B) - g(p_A). For pass@k, D = (1 - p_A)^k -
// (1 - p_B)^k: pass^k's D of the runs' failure rates, with A and B swapped;
// so only p^k is ever computed, which keeps its precision near 0 (1 - (1 -
// p)^k near 1 would not). The integral runs over the run with more trials
// (the narrower posterior), x its rate; given x, the other run's p^k is
// compared with u = x^k + s.
class Difference {
 public:
  Difference(PassCount a, PassCount b, Measure measure, int64_t k)
      : Difference(measure == Measure::kPassAtK ? Failures(b) : a, measure == Measure::kPassAtK ? Failures(a) : b,
                   static_cast<double>(k)) {}

  double Cdf(double d) const {
    if (d <= -1) return 0;
    if (d >= 1) return 1;
    const double s = over_a_ ? d : -d;
    // Where u <= 0 or u >= 1 the other run's side is certain: x's mass there.
    const double x_lo = s < 0 ? Root(-s) : 0, x_hi = s > 0 ? Root(1 - s) : 1;
    double p = x_.Cdf(x_lo) * Given(0) + (1 - x_.Cdf(x_hi)) * Given(1);
    // Between, over where x's posterior has its mass (all but 2e-15 of it).
    const double lo = std::max(x_lo, mass_lo_), hi = std::min(x_hi, mass_hi_);
    if (lo < hi) {
      auto integrand = [&](double t) {
        const double sin = std::sin(t);
        return x_.AngleDensity(t) * Given(std::pow(sin * sin, k_) + s);
      };
      // At u = 0 or 1 the other run's distribution function meets a power
      // of the distance, as low as 1/2k (Jeffreys' density near 0 or 1,
      // through the k-th root in g's inverse): graded there.
      p += GradedIntegral(integrand, std::asin(std::sqrt(lo)), std::asin(std::sqrt(hi)), lo == x_lo && s < 0,
                          hi == x_hi && s > 0);
    }
    return std::clamp(p, 0.0, 1.0);
  }

 private:
  // The integral of f over [lo, hi] with t = end + (other - end) v^r, r =
  // 2k, at each singular end: f's power (at least 1/2k) becomes at least 1.
  template <typename F>
  double GradedIntegral(const F& f, double lo, double hi, bool singular_lo, bool singular_hi) const {
    if (!singular_lo && !singular_hi) return Integrate(f, lo, hi, 1e-12);
    if (singular_lo && singular_hi) {
      const double mid = 0.5 * (lo + hi);
      return GradedIntegral(f, lo, mid, true, false) + GradedIntegral(f, mid, hi, false, true);
    }
    const double r = 2 * k_, end = singular_lo ? lo : hi, span = singular_lo ? hi - lo : lo - hi;
    auto graded = [&](double v) { return f(end + span * std::pow(v, r)) * r * std::pow(v, r - 1) * std::fabs(span); };
    return Integrate(graded, 0.0, 1.0, 1e-12);
  }

  Difference(PassCount a, PassCount b, double k)
      : over_a_(a.n >= b.n), x_(over_a_ ? a : b), y_(over_a_ ? b : a), k_(k), mass_lo_(x_.Quantile(1e-15)),
        mass_hi_(x_.Quantile(1 - 1e-15)) {}
  static PassCount Failures(PassCount run) { return {run.n, run.n - run.c}; }
  double Root(double u) const { return std::pow(u, 1 / k_); }

  // P(D <= d | x): over A, P(p_B^k <= u); over B, P(p_A^k >= u); u = x^k + s,
  // s = d over A and -d over B.
  double Given(double u) const {
    const double f = u <= 0 ? 0 : u >= 1 ? 1 : y_.Cdf(Root(u));
    return over_a_ ? f : 1 - f;
  }

  bool over_a_;
  Posterior x_, y_;
  double k_;
  double mass_lo_, mass_hi_;
};

}  // namespace

double DifferenceCdf(PassCount a, PassCount b, Measure measure, int64_t k, double d) {
  return Difference(a, b, measure, k).Cdf(d);
}

Interval DifferenceInterval(PassCount a, PassCount b, Measure measure, int64_t k, double confidence) {
  const double alpha = 1 - confidence;
  const Difference posterior(a, b, measure, k);
  auto cdf = [&](double d) { return posterior.Cdf(d); };
  Interval v{Estimate(b, measure, k) - Estimate(a, measure, k), Invert(cdf, alpha / 2), Invert(cdf, 1 - alpha / 2)};
  return Widened(v);
}

}  // namespace forge::verify
