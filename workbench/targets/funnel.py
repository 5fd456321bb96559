"""Neal's funnel: v ~ N(0, 3^2), x_k | v ~ N(0, e^v) for k = 1..d-1; theta = (v, x_1, ..).

The centred parameterisation: its neck (v << 0) has curvature e^-v, which no single step
size resolves, so HMC/NUTS diverge there; the standard test of divergence reporting.
``logp_grad`` is normalised (log Z = 0).

Truth (exact): sampler; moments E = 0, sd(v) = 3, sd(x_k) = sqrt(E e^v) = e^(9/4); no
correlations; marginal of v (normal) and of each x_k, a normal scale mixture
p(x) = int N(x; 0, e^v) N(v; 0, 9) dv, by Gauss-Legendre quadrature over v (vectorised).
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit
from ..errors import TargetError
from ..numerics import LOG_2PI, norm
from ..target import Target, Truth

V_SD = 3.0


@jit
def funnel_logp_grad(theta, grad_out, data):
    """log N(v; 0, 9) + sum_k log N(x_k; 0, e^v), normalised; data is ()."""
    v = theta[0]
    n = theta.size - 1
    if abs(v) > 1e150:  # -v^2/18 overflows to -inf and -n v / 2 to +inf: their sum would be NaN
        for k in range(theta.size):
            grad_out[k] = 0.0
        return -math.inf
    inv_var = math.exp(-v)
    ssq = 0.0
    for k in range(1, theta.size):
        ssq += theta[k] * theta[k]
        grad_out[k] = -theta[k] * inv_var
    grad_out[0] = -v / (V_SD * V_SD) + 0.5 * ssq * inv_var - 0.5 * n
    return (
        -0.5 * v * v / (V_SD * V_SD)
        - 0.5 * (LOG_2PI + 2.0 * math.log(V_SD))
        - 0.5 * ssq * inv_var
        - 0.5 * n * (LOG_2PI + v)
    )


# Gauss-Legendre nodes over v in [-8 sd, 8 sd] (mass outside: < 1e-15), in 16 panels of 48 nodes:
# as a function of v, each integrand below is smooth on the scale of a panel (the scale
# mixture's peak in v, where e^v ~ x^2, has width ~ 1), so the rule is accurate to ~1e-12
# for every x (tests/unit/test_targets.py checks it against adaptive quadrature).
def _v_rule(panels: int = 16, nodes: int = 48):
    t, w = np.polynomial.legendre.leggauss(nodes)
    edges = np.linspace(-8.0 * V_SD, 8.0 * V_SD, panels + 1)
    half = 0.5 * np.diff(edges)
    v = (0.5 * (edges[:-1] + edges[1:]))[:, None] + half[:, None] * t[None, :]
    weights = half[:, None] * w[None, :] * np.exp(-0.5 * (v / V_SD) ** 2) / (V_SD * math.sqrt(2.0 * math.pi))
    return v.ravel(), weights.ravel()


_V_NODES, _V_WEIGHTS = _v_rule()


def _ndtr():
    from scipy.special import ndtr  # imported on first use (scipy.special: 0.25 s)

    return ndtr


def x_marginal_pdf(x) -> np.ndarray:
    """p(x) = int N(x; 0, e^v) N(v; 0, 9) dv, the marginal of each x_k (vectorised)."""
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, 1)
    sd = np.exp(0.5 * _V_NODES)
    return ((np.exp(-0.5 * (flat / sd) ** 2) / (math.sqrt(2.0 * math.pi) * sd)) @ _V_WEIGHTS).reshape(x.shape)


def x_marginal_cdf(x) -> np.ndarray:
    """P(x_k <= x) = int Phi(x e^(-v/2)) N(v; 0, 9) dv (vectorised)."""
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, 1)
    return (_ndtr()(flat * np.exp(-0.5 * _V_NODES)) @ _V_WEIGHTS).reshape(x.shape)


def funnel(dim: int) -> Target:
    """Neal's funnel in ``dim`` dimensions (v first, then dim - 1 x's); centred form."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise TargetError(f"dim must be an integer >= 1, got {dim!r}")
    dim = int(dim)
    sd = np.full(dim, math.exp(0.25 * V_SD**2))
    sd[0] = V_SD

    def sampler(rng, n):
        v = rng.normal(0.0, V_SD, size=n)
        x = rng.standard_normal((n, dim - 1)) * np.exp(0.5 * v)[:, None]
        return np.column_stack([v, x])

    def pdf(k, x):
        if k == 0:
            return norm().pdf(x, 0.0, V_SD)
        return x_marginal_pdf(x)

    def cdf(k, x):
        if k == 0:
            return norm().cdf(x, 0.0, V_SD)
        return x_marginal_cdf(x)

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
        data=(),
        param_names=names,
        truth=truth,
        spec={"factory": "funnel", "dim": dim},
        description="Neal's funnel, centred: v ~ N(0, 9), x | v ~ N(0, e^v)",
    )
