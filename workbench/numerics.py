"""Numerically stable scalar helpers shared by targets and methods (Numba, no allocation)."""

from __future__ import annotations

import math

from .jit import jit

LOG_2PI = math.log(2.0 * math.pi)


@jit(inline=True)
def log1pexp(x):
    """log(1 + exp(x)) = softplus(x), stable for any x: log1p(exp(-|x|)) + max(x, 0)."""
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


@jit(inline=True)
def sigmoid(x):
    """1 / (1 + exp(-x)) without overflow for large |x|."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@jit
def logsumexp(values):
    """log(sum(exp(values))) of a 1-D array, stable; -inf for an empty or all -inf array."""
    m = -math.inf
    for v in values:
        if v > m:
            m = v
    if m == -math.inf:
        return -math.inf
    s = 0.0
    for v in values:
        s += math.exp(v - m)
    return m + math.log(s)


def norm():
    """``scipy.stats.norm``, imported on first use: ``scipy.stats`` takes about half a second
    to import, which commands that never evaluate a marginal need not pay."""
    from scipy.stats import norm as scipy_norm

    return scipy_norm
