"""Small computations the scientific studies report: log-log slopes, and the nn4post paper's
sec. 7.1.1 ratio R_1(N_d).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from scipy import stats


class Slope(NamedTuple):
    """y ~ exp(intercept) x^slope, fitted by least squares on logs; ``stderr`` of the slope."""

    slope: float
    intercept: float
    stderr: float
    n: int


def loglog_slope(x, y) -> Slope:
    """Least-squares slope of log y against log x (non-positive or non-finite pairs dropped)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if keep.sum() < 2:
        raise ValueError(f"a slope needs at least 2 positive (x, y) pairs, got {int(keep.sum())}")
    fit = stats.linregress(np.log(x[keep]), np.log(y[keep]))
    return Slope(float(fit.slope), float(fit.intercept), float(fit.stderr), int(keep.sum()))


def r1_exact(n_d: int, r: float) -> float:
    """R_1(N_d) of the paper's Example 2, exactly: the fraction of the box (-r, r)^N_d closer to
    y1 = (-1, ..., -1) than to y2 = (3, ..., 3).

    |x - y1| < |x - y2|  <=>  8 sum(x) < 9 N_d - N_d  <=>  sum(x) < N_d, so R_1 is the
    distribution function of a sum of N_d uniforms on (-r, r) at N_d: with V_i = (x_i + r) / 2r
    uniform on (0, 1), P(sum V < s) with s = N_d (1 + r) / (2 r), the Irwin-Hall distribution
    function (1 / N!) sum_k (-1)^k C(N, k) (s - k)^N, evaluated in exact rational arithmetic
    (the alternating sum cancels catastrophically in floating point). For N_d up to ~60.
    """
    if n_d < 1 or not r > 0:
        raise ValueError("r1_exact needs n_d >= 1 and r > 0")
    s = Fraction(n_d) * (1 + Fraction(r)) / (2 * Fraction(r))
    if s >= n_d:
        return 1.0
    if s <= 0:
        return 0.0
    total = Fraction(0)
    for k in range(int(math.floor(s)) + 1):
        total += (-1) ** k * math.comb(n_d, k) * (s - k) ** n_d
    return float(total / math.factorial(n_d))


def r1_normal(n_d: int, r: float) -> float:
    """The central-limit approximation: sum(x) ~ N(0, N_d r^2 / 3), so R_1 ~ Phi(sqrt(3 N_d) / r)."""
    return float(stats.norm.cdf(math.sqrt(3 * n_d) / r))


def r1_monte_carlo(n_d: int, r: float, n: int = 20_000, seed: int = 0) -> tuple[float, float]:
    """R_1 by sampling the box and comparing the two distances directly: (estimate, its standard error)."""
    rng = np.random.default_rng(seed)
    hits = 0
    done = 0
    chunk = max(1, min(n, 2_000_000 // n_d))
    while done < n:
        m = min(chunk, n - done)
        x = rng.uniform(-r, r, size=(m, n_d))
        d1 = np.sum((x + 1.0) ** 2, axis=1)
        d2 = np.sum((x - 3.0) ** 2, axis=1)
        hits += int(np.sum(d1 < d2))
        done += m
    p = hits / n
    return p, math.sqrt(max(p * (1 - p), 1.0 / n) / n)


class Optimum(NamedTuple):
    """Where a tuning curve peaks: the scale and the acceptance rate there."""

    scale: float
    acceptance: float


def optimal_acceptance(scale, acceptance, efficiency) -> Optimum:
    """The acceptance rate at which ``efficiency`` (e.g. the expected squared jump distance)
    peaks, from runs at several fixed proposal scales.

    log efficiency is fitted by a quadratic in log scale through the best run and its two
    neighbours (a local fit: the whole curve is skewed, wider fits bias the peak); the acceptance
    at the fitted peak comes from a quadratic fit of logit(acceptance) against log scale over
    the same runs (linear interpolation would be biased: acceptance is curved in the scale).
    """
    s, a, e = (np.asarray(v, dtype=float) for v in (scale, acceptance, efficiency))
    keep = np.isfinite(s) & np.isfinite(a) & np.isfinite(e) & (s > 0) & (e > 0)
    s, a, e = s[keep], a[keep], e[keep]
    order = np.argsort(s)
    s, a, e = np.log(s[order]), a[order], np.log(e[order])
    if s.size < 3:
        raise ValueError(f"an optimum needs at least 3 runs, got {s.size}")
    best = int(np.argmax(e))
    if best in (0, s.size - 1):
        raise ValueError("the efficiency peaks at the edge of the scales tried: widen the range")
    lo, hi = best - 1, best + 2
    c2, c1, _ = np.polyfit(s[lo:hi], e[lo:hi], 2)
    if not c2 < 0:
        raise ValueError("the efficiency curve has no interior maximum")
    peak = float(np.clip(-c1 / (2 * c2), s[lo], s[hi - 1]))
    logit = np.log(np.clip(a[lo:hi], 1e-9, 1 - 1e-9)) - np.log1p(-np.clip(a[lo:hi], 1e-9, 1 - 1e-9))
    at_peak = np.polyval(np.polyfit(s[lo:hi], logit, 2), peak)
    return Optimum(float(np.exp(peak)), float(1.0 / (1.0 + np.exp(-at_peak))))
