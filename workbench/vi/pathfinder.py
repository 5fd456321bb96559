"""Pathfinder's pieces (Zhang, Carpenter, Gelman and Vehtari 2022, "Pathfinder: parallel
quasi-Newton variational inference", JMLR 23(306)): the optimisation path, the L-BFGS
inverse Hessian at each of its points, and the Gaussian approximation there.

We minimise f = -log p with SciPy's L-BFGS-B and record every iterate x_l with its gradient
(the path). Along the path, with s_l = x_{l+1} - x_l and z_l = grad f(x_{l+1}) - grad f(x_l):

- a pair (s_l, z_l) enters the history only when it has positive curvature,
  s_l . z_l > eps ||z_l||^2 (Algorithm 1); the last ``history_size`` accepted pairs are kept;
- the diagonal of the initial inverse Hessian, alpha, is updated from each accepted pair
  (Algorithm 3, after Gilbert and Lemarechal 1989): with a = z^T diag(alpha) z, b = z^T s,
  c = s^T diag(alpha)^-1 s,
      1 / alpha_new = a / (b alpha) + z^2 / b - a s^2 / (b c alpha^2);
- the L-BFGS inverse Hessian in compact form (Byrd, Nocedal and Schnabel 1994; the paper's
  eq. II.1-II.2) is H = diag(alpha) + beta gamma beta^T with beta = [diag(alpha) Z, S] and
      gamma = [[0, -R^-1], [-R^-T, R^-T (D + Z^T diag(alpha) Z) R^-1]],
  R the upper triangle of S^T Z and D its diagonal;
- the Gaussian at x_l is N(x_l - H grad f(x_l), H) = N(x_l + H grad log p(x_l), H), a
  :class:`~workbench.approximations.LowRankGaussian`.

``methods/pathfinder.py`` estimates each Gaussian's ELBO and keeps the best.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import optimize

from ..approximations import LowRankGaussian

CURVATURE_EPS = 2.2e-16
"""A pair enters the history only when s . z > CURVATURE_EPS ||z||^2 (the paper's epsilon)."""


class Path(NamedTuple):
    """An L-BFGS optimisation path: iterates (n, d), log p and its gradient there, the
    evaluations it took, and how it ended."""

    x: np.ndarray
    logp: np.ndarray
    grad: np.ndarray
    evals: int
    message: str


class StopPath(Exception):
    """Raised by the density or ``on_iterate`` to end a path where it is (a budget spent,
    Ctrl-C); its message says why."""


def lbfgs_path(
    logp_and_grad: Callable,
    x0: np.ndarray,
    history_size: int,
    max_iters: int,
    on_iterate: Callable[[np.ndarray, float, np.ndarray], bool] | None = None,
    ftol: float = 1e-12,
    gtol: float = 1e-8,
) -> Path:
    """Run SciPy's L-BFGS-B on -log p from x0 and record the path.

    ``on_iterate(x, logp, grad)`` is called at every accepted iterate (the start included);
    it, or ``logp_and_grad``, may raise :class:`StopPath` to end the path there. The line
    search backs off from points where the density is not finite.
    """
    evals = 0
    last = [b"", 0.0, None]  # the latest evaluation: SciPy accepts the point it evaluated last
    xs, lps, gs = [], [], []

    def f(x):
        nonlocal evals
        evals += 1
        lp, g = logp_and_grad(x)
        if not (math.isfinite(lp) and np.all(np.isfinite(g))):
            # L-BFGS-B backtracks from +inf; the path itself only keeps finite iterates
            return math.inf, np.zeros_like(g)
        last[:] = [x.tobytes(), lp, g.copy()]
        return -lp, -g

    def record(x) -> None:
        x = np.array(x, dtype=float)
        if last[0] != x.tobytes():  # not the latest evaluation (never seen with L-BFGS-B): evaluate it
            f(x)
        xs.append(x)
        lps.append(last[1])
        gs.append(last[2])
        if on_iterate is not None:
            on_iterate(x, last[1], last[2])

    message = "converged"
    try:
        f0, _ = f(np.array(x0, dtype=float))
        if not math.isfinite(f0):
            raise StopPath("the density is not finite at the start")
        record(x0)
        res = optimize.minimize(
            f, np.array(x0, dtype=float), jac=True, method="L-BFGS-B", callback=record,
            options={"maxcor": history_size, "maxiter": max_iters, "ftol": ftol, "gtol": gtol, "maxls": 100},
        )
        if not res.success:
            message = str(res.message)
    except StopPath as stop:
        message = str(stop)
    d = len(x0)
    return Path(
        np.array(xs).reshape(-1, d), np.array(lps, dtype=float), np.array(gs).reshape(-1, d), evals, message
    )


def update_diagonal(alpha: np.ndarray, s: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The paper's Algorithm 3 step: the next diagonal of the initial inverse Hessian."""
    a = z @ (alpha * z)
    b = z @ s
    c = s @ (s / alpha)
    inv = a / (b * alpha) + z * z / b - a * s * s / (b * c * alpha * alpha)
    return 1.0 / inv


def inverse_hessian_factors(alpha: np.ndarray, s: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(beta, gamma) of H = diag(alpha) + beta gamma beta^T from the history pairs, the columns
    of ``s`` and ``z`` (d, m), oldest first (eq. II.2)."""
    m = s.shape[1]
    sz = s.T @ z
    r = np.triu(sz)
    r_inv = np.linalg.inv(r)  # upper triangular with positive diagonal: the pairs' curvatures
    alpha_z = alpha[:, None] * z
    beta = np.hstack([alpha_z, s])
    lower_right = r_inv.T @ (np.diag(np.diag(sz)) + z.T @ alpha_z) @ r_inv
    gamma = np.block([[np.zeros((m, m)), -r_inv], [-r_inv.T, lower_right]])
    return beta, gamma


class PathGaussians:
    """The Gaussians along a path, built iterate by iterate (``add``) as the paper's
    Algorithm 1 does: the history of accepted pairs and the diagonal alpha carry over."""

    def __init__(self, dim: int, history_size: int):
        self.alpha = np.ones(dim)
        self.history_size = history_size
        self.s: list[np.ndarray] = []
        self.z: list[np.ndarray] = []
        self._previous = None
        self.rejected_pairs = 0

    def add(self, x: np.ndarray, grad_logp: np.ndarray) -> LowRankGaussian | None:
        """The Gaussian at the new iterate x (None at the start, where there is no pair yet,
        and when the history is empty or the curvature estimate is not positive definite)."""
        previous, self._previous = self._previous, (x, grad_logp)
        if previous is None:
            return None
        s = x - previous[0]
        z = previous[1] - grad_logp  # the change of grad f = -grad log p
        if s @ z > CURVATURE_EPS * (z @ z):
            self.alpha = update_diagonal(self.alpha, s, z)
            self.s.append(s)
            self.z.append(z)
            if len(self.s) > self.history_size:
                self.s.pop(0)
                self.z.pop(0)
        else:
            self.rejected_pairs += 1
        if not self.s:
            return None
        with np.errstate(all="ignore"):
            try:
                beta, gamma = inverse_hessian_factors(self.alpha, np.column_stack(self.s), np.column_stack(self.z))
                mean = x + self.alpha * grad_logp + beta @ (gamma @ (beta.T @ grad_logp))
                if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(gamma))):
                    return None
                return LowRankGaussian(mean, self.alpha, beta, gamma)
            except np.linalg.LinAlgError:
                return None
