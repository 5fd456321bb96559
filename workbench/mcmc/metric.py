"""The Euclidean metric (mass matrix M) of Hamiltonian Monte Carlo.

Kinetic energy K(p) = 1/2 p^T M^-1 p, momenta p ~ N(0, M).

**Diagonal metrics** are stored as ``inv_mass`` (the estimated posterior variances) and
enter the leapfrog, the kinetic energy and the U-turn criterion coordinate by coordinate.

**Dense and low-rank metrics** act as a linear change of variables instead (as nutpie does):
with M^-1 = A A^T, HMC with metric M on x is HMC with the identity metric on y = A^-1 x,
step for step: the leapfrog commutes with the linear map, the kinetic energy
1/2 |A^T p|^2 = 1/2 p^T M^-1 p, and the U-turn criterion's M^-1 p . rho is the same inner
product. So the trajectory code runs unchanged on y with ``inv_mass`` = 1, and only the
density call is wrapped (:func:`potential`): x = A y, then grad_y = A^T grad_x.

The factor is the one of Seyboldt, Carlson & Carpenter (2026, "Preconditioning Hamiltonian
Monte Carlo by minimizing Fisher divergence", their diagonal-plus-low-rank affine map):

    A = diag(sigma) (I + U (diag(sqrt(lambda)) - I) U^T),   M^-1 = diag(sigma) (I + U (diag(lambda) - I) U^T) diag(sigma),

U (d, k) orthonormal, lambda > 0. A dense metric is the same map with k = d. Each product
with A, A^T or their inverses costs O(d k), and nothing d x d is formed unless k = d.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..jit import jit
from ..rng import fill_standard_normal


@jit
def momentum_sd(inv_mass, out):
    """The momentum's sds 1 / sqrt(inv_mass), written into out (once per metric update)."""
    for i in range(out.size):
        out[i] = 1.0 / math.sqrt(inv_mass[i])


@jit(nrt=False)
def sample_momentum(rng, sd, p):
    """p ~ N(0, M), M = diag(sd^2), written into p; returns its kinetic energy 1/2 p^T M^-1 p.

    With p = sd z the kinetic energy is 1/2 |z|^2, computed on the way.
    """
    fill_standard_normal(rng, p)
    return _scale_and_half_square(p, sd)


@jit(fastmath=True, nrt=False)
def _scale_and_half_square(z, sd):
    k = 0.0
    for i in range(z.size):
        k += z[i] * z[i]
        z[i] *= sd[i]
    return 0.5 * k


@jit(fastmath=True)
def kinetic_energy(p, inv_mass):
    """1/2 p^T diag(inv_mass) p."""
    k = 0.0
    for i in range(p.size):
        k += inv_mass[i] * p[i] * p[i]
    return 0.5 * k


# ----------------------------------------------------------------------------- the linear map

class MetricTransform(NamedTuple):
    """x = A y with A = diag(sigma) (I + U (diag(sqrt_vals) - I) U^T), and its work space.

    ``rank[0]`` is k, the number of eigen-directions in use (rows 0..k-1 of ``vecs`` are
    the columns of U; k = 0 is the diagonal alone). ``x`` and ``grad_x`` hold the last point
    the density was called at. A diagonal metric passes None instead (:func:`potential`).
    """

    sigma: np.ndarray  # (d,)
    vecs: np.ndarray  # (max_rank, d): U^T, one eigenvector per row
    sqrt_vals: np.ndarray  # (max_rank,)
    rank: np.ndarray  # int64 (1,)
    x: np.ndarray  # (d,) work
    grad_x: np.ndarray  # (d,) work
    coef: np.ndarray  # (max_rank,) work


def metric_transform(dim: int, max_rank: int) -> MetricTransform:
    """An identity map (sigma = 1, k = 0) with room for ``max_rank`` directions."""
    r = max(max_rank, 1)
    return MetricTransform(np.ones(dim), np.zeros((r, dim)), np.ones(r), np.zeros(1, dtype=np.int64),
                           np.zeros(dim), np.zeros(dim), np.zeros(r))


@jit(fastmath=True, nrt=False)
def _low_rank_apply(t, v, factor_power, out):
    """out = (I + U (diag(sqrt_vals^factor_power) - I) U^T) v; v and out may be the same array."""
    k = t.rank[0]
    d = v.size
    for j in range(k):
        s = 0.0
        for i in range(d):
            s += t.vecs[j, i] * v[i]
        t.coef[j] = s * (t.sqrt_vals[j] ** factor_power - 1.0)
    for i in range(d):
        out[i] = v[i]
    for j in range(k):
        c = t.coef[j]
        for i in range(d):
            out[i] += c * t.vecs[j, i]


@jit(nrt=False)
def to_position(t, y, x):
    """x = A y."""
    _low_rank_apply(t, y, 1.0, x)
    for i in range(x.size):
        x[i] *= t.sigma[i]


@jit(nrt=False)
def from_position(t, x, y):
    """y = A^-1 x = (I + U (diag(1/sqrt_vals) - I) U^T) (x / sigma)."""
    for i in range(x.size):
        y[i] = x[i] / t.sigma[i]
    _low_rank_apply(t, y, -1.0, y)


@jit(nrt=False)
def to_transformed_gradient(t, grad_x, grad_y):
    """grad_y = A^T grad_x = (I + U (diag(sqrt_vals) - I) U^T) (sigma grad_x)."""
    for i in range(grad_x.size):
        grad_y[i] = grad_x[i] * t.sigma[i]
    _low_rank_apply(t, grad_y, 1.0, grad_y)


@jit(nrt=False)
def from_transformed_gradient(t, grad_y, grad_x):
    """grad_x = A^-T grad_y."""
    _low_rank_apply(t, grad_y, -1.0, grad_x)
    for i in range(grad_x.size):
        grad_x[i] /= t.sigma[i]


@jit(nrt=False)
def potential(logp_grad, data, q, g, t):
    """log p and its gradient in the coordinates the trajectory runs in: the target's own
    when ``t`` is None (a diagonal metric), y = A^-1 x otherwise (log p(A y); the Jacobian
    is a constant).

    Kernels pass None for a diagonal metric: Numba then compiles this call down to the bare
    density call (the ``is None`` branch is pruned at compile time), so the diagonal path
    costs what it cost before metrics were a setting (measured: passing the map's seven
    arrays down the NUTS tree instead made the cheapest target's overhead 40% higher).
    """
    if t is None:
        return logp_grad(q, g, data)
    to_position(t, q, t.x)
    logp = logp_grad(t.x, t.grad_x, data)
    to_transformed_gradient(t, t.grad_x, g)
    return logp


def inverse_metric(sigma: np.ndarray, vecs: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """The dense M^-1 = diag(sigma) (I + U (diag(vals) - I) U^T) diag(sigma), for checks and
    small d; ``vecs`` (k, d) holds U^T, ``vals`` the eigenvalues lambda (not their roots)."""
    inner = np.eye(sigma.size) + vecs.T @ ((vals - 1.0)[:, None] * vecs)
    return sigma[:, None] * inner * sigma[None, :]
