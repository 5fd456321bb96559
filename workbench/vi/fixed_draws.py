"""The ELBO of a Gaussian family on fixed base draws: the deterministic objective of DADVI
(Giordano, Ingram and Broderick, JMLR 2024, eq. 5), compiled.

With base draws eta_1..N ~ N(0, I) drawn once, q_lambda = N(mu, L L^T) and
theta_n = mu + L eta_n, the sample-average objective

    F(lambda) = -(1/N) sum_n log p(theta_n) - sum_i log L_ii   (- d/2 log 2 pi e)

is an ordinary smooth function of lambda: a second-order optimiser solves it to convergence
(where stochastic ADVI stalls or needs a schedule), and its optimum differs from the exact
ELBO's by O(1/sqrt(N)), which DADVI reports as a Monte Carlo standard error.

Parameters ``lambda`` = [mu (d), log L_ii (d)] for the mean-field family, then the strict lower
triangle of L row by row (d(d-1)/2) for the full-rank one. The gradient (the reparameterised
one, Kucukelbir et al. 2017, eq. 8-9, on the fixed draws):

    dF/dmu = -(1/N) sum_n g_n,   dF/d log L_ii = -(1/N) sum_n g_ni eta_ni L_ii - 1,
    dF/dL_ij = -(1/N) sum_n g_ni eta_nj   (i > j),   g_n = grad log p(theta_n).

A draw where log p is not finite makes F = +inf: the optimiser's line search or trust region
backs off (no exception).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ..density_faults import original
from ..errors import DensityError, format_point
from ..jit import C_STOP, INDEX, MATRIX, VEC, target_kernel
from ..numerics import LOG_2PI

LOG_2PI_E = LOG_2PI + 1.0


def n_params(d: int, full_rank: bool) -> int:
    """Length of lambda: 2 d (mean-field) or 2 d + d (d - 1) / 2 (full-rank)."""
    return 2 * d + (d * (d - 1) // 2 if full_rank else 0)


def _objective(logp_grad, data, params, eta, full_rank, grad, per_draw, count, control):
    """F(lambda) (module docstring) and its gradient into ``grad``; with ``per_draw`` of N
    rows, each draw's own gradient term too (for DADVI's standard errors); adds the gradient
    evaluations made to ``count[0]``. Returns F (+inf where a draw's density is not finite:
    ``grad`` is then zero; NaN when ``control[C_STOP]`` is set part-way, Ctrl-C)."""
    n, d = eta.shape
    n_par = params.size
    keep = per_draw.shape[0] == n
    theta = np.empty(d)
    g = np.empty(d)
    scale = np.empty(d)
    for i in range(d):
        scale[i] = math.exp(params[d + i])
    for p in range(n_par):
        grad[p] = 0.0
    total = 0.0
    inv_n = 1.0 / n
    for s in range(n):
        if control[C_STOP] != 0:
            return math.nan
        for i in range(d):
            v = params[i] + scale[i] * eta[s, i]
            if full_rank:
                base = 2 * d + i * (i - 1) // 2
                for j in range(i):
                    v += params[base + j] * eta[s, j]
            theta[i] = v
        lp = logp_grad(theta, g, data)
        count[0] += 1
        if not math.isfinite(lp):
            for p in range(n_par):
                grad[p] = 0.0
            return math.inf
        total += lp
        for i in range(d):
            gi = g[i]
            grad[i] -= inv_n * gi
            grad[d + i] -= inv_n * gi * eta[s, i] * scale[i]
            if keep:
                per_draw[s, i] = -gi
                per_draw[s, d + i] = -gi * eta[s, i] * scale[i] - 1.0
            if full_rank:
                base = 2 * d + i * (i - 1) // 2
                for j in range(i):
                    grad[base + j] -= inv_n * gi * eta[s, j]
                    if keep:
                        per_draw[s, base + j] = -gi * eta[s, j]
    entropy = 0.0
    for i in range(d):
        entropy += params[d + i]
        grad[d + i] -= 1.0
    return -(total * inv_n + entropy + 0.5 * d * LOG_2PI_E)


fixed_draws_objective = target_kernel(
    lambda t: types.float64(t.logp_grad, t.data, VEC, MATRIX, types.boolean, VEC, MATRIX, INDEX, INDEX)
)(_objective)


def pack(mean: np.ndarray, chol: np.ndarray, full_rank: bool) -> np.ndarray:
    """lambda of N(mean, chol chol^T) (``chol`` lower triangular, positive diagonal)."""
    d = mean.size
    out = [np.asarray(mean, dtype=float), np.log(np.diag(chol))]
    if full_rank:
        out.append(chol[np.tril_indices(d, -1)])
    return np.concatenate(out)


def unpack(params: np.ndarray, d: int, full_rank: bool) -> tuple[np.ndarray, np.ndarray]:
    """(mean, lower-triangular factor L) of lambda."""
    chol = np.diag(np.exp(params[d: 2 * d]))
    if full_rank:
        chol[np.tril_indices(d, -1)] = params[2 * d:]
    return params[:d].copy(), chol


class BudgetSpent(Exception):
    """Raised inside an optimiser's callback when the next evaluation would pass the budget."""


class Stopped(Exception):
    """Raised inside an optimiser's callback once ``control[C_STOP]`` is set (Ctrl-C)."""


class FixedDrawsObjective:
    """F and its derivatives for SciPy's optimisers, with every gradient counted.

    ``value_and_grad(lam)`` is F and dF; ``hessp(lam, v)`` a Hessian-vector product by a
    forward difference of dF along v (N gradients; the gradient at ``lam`` is reused from
    the last call there); ``hessian(lam)`` the whole Hessian, a column per parameter.
    ``max_grad_evals`` (None: no limit) raises :class:`BudgetSpent` before an evaluation that
    would pass it, ``control[C_STOP]`` (set by Ctrl-C) :class:`Stopped` at once; ``best``
    keeps the best finite point seen.
    """

    def __init__(self, kernel, target, eta: np.ndarray, full_rank: bool, max_grad_evals: int | None = None,
                 control: np.ndarray | None = None):
        self.control = np.zeros(2, dtype=np.int64) if control is None else control
        self.kernel = kernel
        self.target = target
        self.eta = np.ascontiguousarray(eta, dtype=float)
        self.full_rank = bool(full_rank)
        self.max_grad_evals = max_grad_evals
        self.count = np.zeros(1, dtype=np.int64)
        self.no_rows = np.zeros((0, n_params(eta.shape[1], full_rank)))
        self.best = (math.inf, None)
        self._last = (None, math.inf, None)

    @property
    def grad_evals(self) -> int:
        return int(self.count[0])

    def _evaluate(self, lam: np.ndarray, per_draw: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        if self.max_grad_evals is not None and self.count[0] + self.eta.shape[0] > self.max_grad_evals:
            raise BudgetSpent
        lam = np.ascontiguousarray(lam, dtype=float)
        grad = np.empty(lam.size)
        rows = self.no_rows if per_draw is None else per_draw
        try:
            f = self.kernel(self.target.kernel_logp_grad, self.target.kernel_data, lam, self.eta, self.full_rank,
                            grad, rows, self.count, self.control)
        except Exception as exc:  # the user's density raised: named, with q's mean then
            raise DensityError(
                f"DADVI on target {self.target.name!r}: the target's density raised {original(exc)!r} at the fit's evaluation "
                f"{self.grad_evals // self.eta.shape[0] + 1}, q's mean then {format_point(lam[: self.eta.shape[1]])}; "
                "the run is lost (fix the density, or make it return -inf where it cannot be evaluated)",
                "DADVI", 0, self.grad_evals // self.eta.shape[0] + 1, lam[: self.eta.shape[1]],
            ) from original(exc)
        if self.control[C_STOP] != 0:
            raise Stopped
        if math.isfinite(f) and f < self.best[0]:
            self.best = (f, lam.copy())
        return f, grad

    def value_and_grad(self, lam):
        f, grad = self._evaluate(lam)
        self._last = (np.array(lam, dtype=float), f, grad)
        return f, grad

    def gradient_at(self, lam) -> np.ndarray:
        x, _, grad = self._last
        if x is not None and np.array_equal(x, lam):
            return grad
        return self.value_and_grad(lam)[1]

    def hessp(self, lam, v):
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            return np.zeros_like(v)
        step = math.sqrt(np.finfo(float).eps) * (1.0 + float(np.linalg.norm(lam))) / norm
        base = self.gradient_at(lam)
        f, moved = self._evaluate(np.asarray(lam) + step * np.asarray(v))
        if not math.isfinite(f):  # the step left the density's support: use the other side
            f, moved = self._evaluate(np.asarray(lam) - step * np.asarray(v))
            return (base - moved) / step
        return (moved - base) / step

    def hessian(self, lam) -> np.ndarray:
        """The Hessian of F at ``lam`` (symmetrised), one forward difference per parameter."""
        p = np.asarray(lam).size
        h = np.empty((p, p))
        for k in range(p):
            e = np.zeros(p)
            e[k] = 1.0
            h[:, k] = self.hessp(lam, e)
        return 0.5 * (h + h.T)

    def per_draw_gradients(self, lam) -> np.ndarray:
        """(N, P): each draw's term of dF (their mean is dF, their spread its Monte Carlo error)."""
        rows = np.zeros((self.eta.shape[0], np.asarray(lam).size))
        self._evaluate(lam, rows)
        return rows
