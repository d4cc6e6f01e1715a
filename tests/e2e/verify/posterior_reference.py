#!/usr/bin/env python3
"""A reference for forge-verify compare's per-task intervals, written from the
definitions with nothing but Python's standard library, and sharing no method
with lib/verify/posterior.cpp:

- The Jeffreys posterior of a pass rate is Beta(c + 1/2, m + 1/2), m = n - c.
  With x = sin^2(t) its density in t is proportional to sin^2c(t) cos^2m(t), a
  trigonometric polynomial: expanding (z - 1/z)^2c (z + 1/z)^2m (z = e^it)
  with Python's exact integers gives its Fourier coefficients, so the
  distribution function is a finite sum, F(x) = (b0 T + sum_j bj sin(2jT)/j)
  / (b0 pi/2), T = asin(sqrt(x)) (C++ uses a continued fraction).
- P(D <= d), D = g(pB) - g(pA), is the integral over A's rate (always A; C++
  picks the run with more trials) of A's density times B's distribution
  function, split where g(x) + d leaves [0, 1] (where the integrand has
  power singularities, as strong as x^(1/2k)), each piece summed with the
  tanh-sinh rule, which is exact for such ends (C++: adaptive
  Gauss-Kronrod).

  posterior_reference.py check COMPARE_JSON N_A C_A N_B C_B
      checks every per-task interval in compare's JSON (one task): each end
      has posterior probability alpha/2 below it (or 1 - alpha/2) within 1e-7
      (or is that quantile to 1e-6 of its value, where the distribution lives
      on a tiny scale), unless it was widened to the estimate, which then lies
      beyond the quantile, or is Jeffreys' 0 (no pass) or 1 (every pass).
"""
import json
import math
import sys
from fractions import Fraction


def tanh_sinh_nodes(h=1 / 32, reach=3.2):
    """Nodes and weights of the tanh-sinh rule on [-1, 1], as (distance from
    -1, weight) for each node's mirror pair: exact for the integrand's
    behaviour at the ends, where any power singularity sits after a split."""
    nodes = []
    for j in range(-int(reach / h), int(reach / h) + 1):
        t = j * h
        s = math.pi / 2 * math.sinh(t)
        # 1 + tanh(s), computed without cancellation for s << 0.
        from_left = 2 / (1 + math.exp(-2 * s)) if s > -350 else 0.0
        w = h * math.pi / 2 * math.cosh(t) / math.cosh(s) ** 2 if abs(s) < 350 else 0.0
        if from_left > 0 and w > 0:
            nodes.append((from_left, w))
    return nodes


TS = tanh_sinh_nodes()


class Beta:
    """The Jeffreys posterior of c passes in n trials."""

    def __init__(self, n, c):
        self.c, self.m = c, n - c
        poly = {}  # exponent of z -> exact coefficient of (z - 1/z)^2c (z + 1/z)^2m
        for i in range(2 * self.c + 1):
            for l in range(2 * self.m + 1):
                e = (2 * self.c - 2 * i) + (2 * self.m - 2 * l)
                poly[e] = poly.get(e, 0) + math.comb(2 * self.c, i) * (-1) ** i * math.comb(2 * self.m, l)
        b0 = poly[0]
        self.ratios = [float(Fraction(poly.get(2 * j, 0), b0)) for j in range(1, n + 1)]
        a, b = c + 0.5, self.m + 0.5
        self.log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)

    def cdf(self, x):
        if x <= 0:
            return 0.0
        if x >= 1:
            return 1.0
        t = math.asin(math.sqrt(x))
        s = t + sum(r * math.sin(2 * j * t) / j for j, r in enumerate(self.ratios, 1))
        return min(1.0, max(0.0, s / (math.pi / 2)))

    def angle_density(self, t):
        """The density of t, x = sin^2(t): 2 sin^2c cos^2m / B(a, b)."""
        s, co = math.sin(t), math.cos(t)
        return 2 * math.exp(self.log_norm) * s ** (2 * self.c) * co ** (2 * self.m)


def transform(measure, k):
    if measure == "pass_hat_k":
        return (lambda p: p ** k), (lambda u: min(1.0, max(0.0, u)) ** (1.0 / k))
    return (lambda p: 1 - (1 - p) ** k), (lambda u: 1 - (1 - min(1.0, max(0.0, u))) ** (1.0 / k))


def integral(f, lo, hi, parts=8):
    """The integral of f over [lo, hi]: tanh-sinh on each of `parts` equal
    parts (any singularity of f must sit at lo or hi)."""
    total = 0.0
    for p in range(parts):
        a, b = lo + (hi - lo) * p / parts, lo + (hi - lo) * (p + 1) / parts
        half = (b - a) / 2
        for from_left, w in TS:
            total += w * half * f(a + half * from_left)
    return total


def difference_cdf(a, b, measure, k, d):
    if d <= -1:
        return 0.0
    if d >= 1:
        return 1.0
    if measure == "pass_at_k":
        # (1 - (1 - pB)^k) - (1 - (1 - pA)^k) = qA^k - qB^k, q = 1 - p ~ Beta(n - c + 1/2, c + 1/2):
        # computed this way, values near 0 keep their precision.
        return difference_cdf((b[0], b[0] - b[1]), (a[0], a[0] - a[1]), "pass_hat_k", k, d)
    g, ginv = transform(measure, k)
    A, B = Beta(*a), Beta(*b)

    def given(t):
        u = g(math.sin(t) ** 2) + d
        return 0.0 if u <= 0 else 1.0 if u >= 1 else B.cdf(ginv(u))

    # Where g(sin^2 t) + d crosses 0 or 1, the integrand has a kink.
    cuts = [0.0, math.pi / 2]
    for u in (-d, 1 - d):
        if 0 < u < 1:
            cuts.append(math.asin(math.sqrt(ginv(u))))
    cuts.sort()
    return sum(integral(lambda t: A.angle_density(t) * given(t), lo, hi) for lo, hi in zip(cuts, cuts[1:]) if hi > lo)


def end_holds(cdf, end, target, estimate, side):
    """`end` is the target-quantile of the distribution `cdf`, or (an interval
    widened to its estimate) the estimate, lying beyond that quantile.
    Returns the error in probability, or raises."""
    p = cdf(end)
    if abs(p - target) < 1e-7:
        return abs(p - target)
    # A distribution on a tiny scale (pass^k at a large k): the quantile to 1e-6 of its value.
    delta = 1e-6 * abs(end) + 1e-300
    if cdf(end - delta) <= target + 1e-10 and cdf(end + delta) >= target - 1e-10:
        return 0.0
    if end == estimate and (p <= target + 1e-7 if side == "low" else p >= target - 1e-7):
        return 0.0
    raise AssertionError((side, end, target, estimate, p))


def check(compare_json, na, ca, nb, cb):
    c = json.load(open(compare_json))
    alpha = 1 - c["bootstrap"]["confidence"]
    (task,) = c["tasks"]
    worst, checked = 0.0, 0
    for measure in ("pass_at_k", "pass_hat_k"):
        for k, diff in task[measure].items():
            k = int(k)
            g, ginv = transform(measure, k)
            for run, (n, cc) in (("a", (na, ca)), ("b", (nb, cb))):
                level, beta = task[run][measure][str(k)], Beta(n, cc)
                cdf = lambda v: beta.cdf(ginv(v))
                # Jeffreys' interval: the low end is 0 when no trial passed, the high end 1 when all did.
                if cc == 0:
                    assert level["low"] == 0, (measure, k, run, level)
                else:
                    worst = max(worst, end_holds(cdf, level["low"], alpha / 2, level["value"], "low"))
                if cc == n:
                    assert level["high"] == 1, (measure, k, run, level)
                else:
                    worst = max(worst, end_holds(cdf, level["high"], 1 - alpha / 2, level["value"], "high"))
                checked += 2
            cdf = lambda d: difference_cdf((na, ca), (nb, cb), measure, k, d)
            for end, target in (("low", alpha / 2), ("high", 1 - alpha / 2)):
                worst = max(worst, end_holds(cdf, diff[end], target, diff["difference"], end))
                checked += 1
    print("n=(%d,%d) c=(%d,%d): %d interval ends, largest error %.1e" % (na, nb, ca, cb, checked, worst))


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check(sys.argv[2], *map(int, sys.argv[3:7]))
    elif sys.argv[1] == "cdf":  # cdf NA CA NB CB MEASURE K D
        na, ca, nb, cb = map(int, sys.argv[2:6])
        print(difference_cdf((na, ca), (nb, cb), sys.argv[6], int(sys.argv[7]), float(sys.argv[8])))
