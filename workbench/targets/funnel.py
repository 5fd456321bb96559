"""Neal's funnel: v ~ N(0, 3^2), x_k | v ~ N(0, e^v) for k = 1..d-1; theta = (v, x_1, ..).

``v_sd`` sets the log-scale's sd (3 is Neal's, 2003; nutpie's documentation of its flow
adaptation uses 1: log_sigma ~ N(0, 1), x ~ N(0, exp(log_sigma / 2)), a far milder neck).

The centred parameterisation: its neck (v << 0) has curvature e^-v, which no single step
size resolves, so HMC/NUTS diverge there; the standard test of divergence reporting.
``logp_grad`` is normalised (log Z = 0).

Truth (exact): sampler; moments E = 0, sd(v) = v_sd, sd(x_k) = sqrt(E e^v) = e^(v_sd^2 / 4)
(e^(9/4) for Neal's); no correlations; marginal of v (normal) and of each x_k, a normal scale
mixture p(x) = int N(x; 0, e^v) N(v; 0, v_sd^2) dv, by Gauss-Legendre quadrature over v
(vectorised).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import TargetError
from ..jit import jit
from ..numerics import LOG_2PI, norm
from ..target import Target, Truth

V_SD = 3.0


@jit
def funnel_logp_grad(theta, grad_out, data):
    """log N(v; 0, v_sd^2) + sum_k log N(x_k; 0, e^v), normalised; data is ([v_sd],)."""
    v_sd = data[0][0]
    v = theta[0]
    n = theta.size - 1
    if abs(v) > 1e150:  # -v^2 / (2 v_sd^2) overflows to -inf and -n v / 2 to +inf: their sum would be NaN
        for k in range(theta.size):
            grad_out[k] = 0.0
        return -math.inf
    inv_var = math.exp(-v)
    ssq = 0.0
    for k in range(1, theta.size):
        ssq += theta[k] * theta[k]
        grad_out[k] = -theta[k] * inv_var
    grad_out[0] = -v / (v_sd * v_sd) + 0.5 * ssq * inv_var - 0.5 * n
    return (
        -0.5 * v * v / (v_sd * v_sd)
        - 0.5 * (LOG_2PI + 2.0 * math.log(v_sd))
        - 0.5 * ssq * inv_var
        - 0.5 * n * (LOG_2PI + v)
    )


# Gauss-Legendre nodes over v in [-8 sd, 8 sd] (mass outside: < 1e-15), in 16 panels of 48 nodes:
# as a function of v, each integrand below is smooth on the scale of a panel (the scale
# mixture's peak in v, where e^v ~ x^2, has width ~ 1), so the rule is accurate to ~1e-12
# for every x (tests/unit/test_targets.py checks it against adaptive quadrature).
@functools.lru_cache(maxsize=8)
def _v_rule(v_sd: float = V_SD, panels: int = 16, nodes: int = 48):
    t, w = np.polynomial.legendre.leggauss(nodes)
    edges = np.linspace(-8.0 * v_sd, 8.0 * v_sd, panels + 1)
    half = 0.5 * np.diff(edges)
    v = (0.5 * (edges[:-1] + edges[1:]))[:, None] + half[:, None] * t[None, :]
    weights = half[:, None] * w[None, :] * np.exp(-0.5 * (v / v_sd) ** 2) / (v_sd * math.sqrt(2.0 * math.pi))
    return v.ravel(), weights.ravel()


def _ndtr():
    from scipy.special import ndtr  # imported on first use (scipy.special: 0.25 s)

    return ndtr


def x_marginal_pdf(x, v_sd: float = V_SD) -> np.ndarray:
    """p(x) = int N(x; 0, e^v) N(v; 0, v_sd^2) dv, the marginal of each x_k (vectorised)."""
    nodes, weights = _v_rule(v_sd)
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, 1)
    sd = np.exp(0.5 * nodes)
    return ((np.exp(-0.5 * (flat / sd) ** 2) / (math.sqrt(2.0 * math.pi) * sd)) @ weights).reshape(x.shape)


def x_marginal_cdf(x, v_sd: float = V_SD) -> np.ndarray:
    """P(x_k <= x) = int Phi(x e^(-v/2)) N(v; 0, v_sd^2) dv (vectorised)."""
    nodes, weights = _v_rule(v_sd)
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, 1)
    return (_ndtr()(flat * np.exp(-0.5 * nodes)) @ weights).reshape(x.shape)


def funnel(dim: int, v_sd: float = V_SD) -> Target:
    """Neal's funnel in ``dim`` dimensions (v first, then dim - 1 x's); centred form. ``v_sd``:
    the sd of the log-scale v (Neal's 3; nutpie's documented flow example is
    ``funnel(101, v_sd=1.0)``)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise TargetError(f"dim must be an integer >= 1, got {dim!r}")
    if isinstance(v_sd, bool) or not isinstance(v_sd, (int, float, np.integer, np.floating)) \
            or not math.isfinite(v_sd) or not 0.01 <= v_sd <= 10.0:
        raise TargetError(f"v_sd must be a number in [0.01, 10] (the log-scale's sd; Neal's is 3), got {v_sd!r}")
    dim, v_sd = int(dim), float(v_sd)
    sd = np.full(dim, math.exp(0.25 * v_sd**2))
    sd[0] = v_sd

    def sampler(rng, n):
        v = rng.normal(0.0, v_sd, size=n)
        x = rng.standard_normal((n, dim - 1)) * np.exp(0.5 * v)[:, None]
        return np.column_stack([v, x])

    def pdf(k, x):
        if k == 0:
            return norm().pdf(x, 0.0, v_sd)
        return x_marginal_pdf(x, v_sd)

    def cdf(k, x):
        if k == 0:
            return norm().cdf(x, 0.0, v_sd)
        return x_marginal_cdf(x, v_sd)

    truth = Truth(
        mean=np.zeros(dim),
        sd=sd,
        log_z=0.0,
        sampler=sampler,
        marginal_pdf_fn=pdf,
        marginal_cdf_fn=cdf,
        cov_fn=lambda: np.diag(sd**2),
    )
    names = ("v",) + tuple(f"x[{k}]" for k in range(1, dim))
    return Target(
        name="funnel",
        dim=dim,
        logp_grad=funnel_logp_grad,
        data=(np.array([v_sd]),),
        param_names=names,
        truth=truth,
        spec={"factory": "funnel", "dim": dim, **({} if v_sd == V_SD else {"v_sd": v_sd})},
        description=f"Neal's funnel, centred: v ~ N(0, {v_sd**2:g}), x | v ~ N(0, e^v)",
    )
