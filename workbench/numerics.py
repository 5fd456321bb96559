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


@jit(inline=True)
def sigmoid_and_log1pexp(x):
    """(sigmoid(x), log(1 + exp(x))) from one exponential, t = exp(-|x|): sigmoid is 1 / (1 + t)
    or t / (1 + t), softplus log1p(t) + max(x, 0). A logistic likelihood needs both per row."""
    t = math.exp(-abs(x))
    prob = 1.0 / (1.0 + t) if x >= 0.0 else t / (1.0 + t)
    return prob, math.log1p(t) + max(x, 0.0)


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


@jit(nrt=False)
def mvn_logp_grad(x, grad_out, mean, precision, log_norm):
    """log N(x; mean, S) + const and its gradient -S^-1 (x - mean), written into grad_out.

    ``precision`` is S^-1 (d, d), or its diagonal as one row (1, d); ``log_norm`` is the
    constant added (the normaliser, or 0). The Gaussian targets and SMC's reference use it."""
    d = x.size
    q = 0.0
    if precision.shape[0] == 1:
        for i in range(d):
            r = x[i] - mean[i]
            grad_out[i] = -precision[0, i] * r
            q -= r * grad_out[i]
    else:
        for i in range(d):
            s = 0.0
            for j in range(d):
                s += precision[i, j] * (x[j] - mean[j])
            grad_out[i] = -s
            q += (x[i] - mean[i]) * s
    return log_norm - 0.5 * q


def norm():
    """``scipy.stats.norm``, imported on first use: ``scipy.stats`` takes about half a second
    to import, which commands that never evaluate a marginal need not pay."""
    from scipy.stats import norm as scipy_norm

    return scipy_norm
