"""The Laplace approximation: a Gaussian at the posterior mode.

theta* = argmax log p (SciPy's L-BFGS-B on -log p with the target's Numba gradient, from
the initial point and ``starts`` random starts; the best is kept, all are reported);
H = the Hessian of log p at theta* (the target's analytic ``hessian`` when it has one,
else central differences of the gradient, symmetrised), and one Newton step with it from
L-BFGS-B's optimum (:func:`newton_polish`); q = N(theta*, (-H)^-1), and the Laplace estimate
of the evidence

    log Z = log p(theta*) + d/2 log 2 pi - 1/2 log det(-H).

For a Gaussian target all three are exact. If -H is not positive definite (a saddle, or a
flat direction) a :class:`LaplaceError` names the smallest eigenvalues and keeps the mode
and Hessian; ``regularize=lam`` adds lam I to -H instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize

from ..approximations import Gaussian
from ..errors import WorkbenchError
from ..fitting.health import KHAT_DRAWS, pareto_check
from ..modes import hessian_by_differences
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.method import Examples, Method
from ..running.peaks import approximation_peaks, search_limit
from ..running.threads import one_blas_thread
from ..running.validation import check_positive_int
from ..target import Target


class LaplaceError(WorkbenchError, ValueError):
    """-H is not positive definite at the mode. Keeps ``mode``, ``logp``, ``hessian``, ``eigenvalues``."""

    def __init__(self, message, mode, logp, hessian, eigenvalues):
        super().__init__(message)
        self.mode = mode
        self.logp = logp
        self.hessian = hessian
        self.eigenvalues = eigenvalues


@dataclass(frozen=True)
class Laplace(Method):
    """Gaussian approximation at the mode, with the Laplace evidence estimate.

    Parameters
    ----------
    starts : int
        Random restarts (initial point + uniform(-start_scale, start_scale) noise) besides
        the initial point itself; the highest mode wins.
    draws : int
        Draws from the approximation returned as ``Result.draws`` (1 chain).
    regularize : float
        Added to the diagonal of -H (0: fail clearly when -H is not positive definite).
    """

    family = "VI"
    colour, marker = "#009E73", "X"
    examples = Examples(quick={}, budget=None)

    starts: int = 0
    start_scale: float = 2.0
    init: Any = None
    draws: int = 1000
    regularize: float = 0.0
    rel_step: float = 1e-5
    gtol: float = 1e-9

    def __post_init__(self):
        check_positive_int("starts", self.starts, minimum=0)
        check_positive_int("draws", self.draws)
        if not (self.regularize >= 0 and math.isfinite(self.regularize)):
            raise ValueError(f"regularize must be a finite number >= 0, got {self.regularize!r}")
        if not (self.start_scale > 0 and math.isfinite(self.start_scale)):
            raise ValueError(f"start_scale must be a finite number > 0, got {self.start_scale!r}")
        if not (0 < self.rel_step < 1):
            raise ValueError(f"rel_step must lie in (0, 1), got {self.rel_step!r}")
        if not (self.gtol > 0 and math.isfinite(self.gtol)):
            raise ValueError(f"gtol must be a finite number > 0, got {self.gtol!r}")

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """The Hessian, its inverse and factor, and the draws."""
        d = target.dim
        return {"Hessian (d^2)": 8 * 4 * d * d, "draws": 8 * self.draws * d}

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        rng = chain_rngs(seed, 1)[0]
        clock = RunClock()
        x0 = target.initial_point if self.init is None else np.asarray(self.init, dtype=float)
        target.check_point(x0, what="starting point")
        starts = [x0] + [x0 + rng.uniform(-self.start_scale, self.start_scale, target.dim) for _ in range(self.starts)]
        n_grad = 1  # the check of the starting point

        best_seen = [math.inf, None]  # the best point evaluated: what an interrupted ascent keeps

        def neg_logp(x):
            nonlocal n_grad
            n_grad += 1
            lp, g = target.logp_and_grad(x)
            if not math.isfinite(lp):
                return math.inf, np.zeros_like(g)
            if -lp < best_seen[0]:
                best_seen[:] = [-lp, np.array(x, dtype=float)]
            return -lp, -g

        optima = []
        interrupted = False
        for x in starts:
            try:
                with one_blas_thread():  # L-BFGS-B's small BLAS calls
                    res = optimize.minimize(
                        neg_logp, x, jac=True, method="L-BFGS-B",
                        options={"gtol": self.gtol, "ftol": 1e-15, "maxiter": 10_000},
                    )
            except KeyboardInterrupt:  # Ctrl-C: the optima found so far, or the best point of this ascent
                interrupted = True
                if not optima and best_seen[1] is None:
                    raise
                if best_seen[1] is not None:
                    optima.append({"x": best_seen[1], "logp": -best_seen[0], "success": False,
                                   "message": "interrupted by Ctrl-C"})
                break
            optima.append({"x": res.x, "logp": -float(res.fun), "success": bool(res.success), "message": str(res.message)})
        best = max(optima, key=lambda o: o["logp"])
        mode, logp_mode = best["x"], best["logp"]
        if target.hessian is not None:  # analytic, when the target provides it
            hess = np.asarray(target.hessian(mode), dtype=float)
            if hess.shape != (target.dim, target.dim):
                raise ValueError(f"target.hessian returned shape {hess.shape}, expected ({target.dim}, {target.dim})")
        else:
            hess = hessian_by_differences(target, mode, self.rel_step)
            n_grad += 2 * target.dim
        neg_h = -hess + self.regularize * np.eye(target.dim)
        eig = np.linalg.eigvalsh(neg_h)
        if not eig[0] > 0:
            raise LaplaceError(
                f"-H is not positive definite at the mode of {target.name!r}: smallest eigenvalues "
                f"{np.round(eig[:3], 6).tolist()} (a saddle or a flat direction); the mode is kept in "
                "this error (.mode, .hessian); pass regularize=... to add a multiple of I",
                mode, logp_mode, hess, eig,
            )
        mode, logp_mode, polish_evals = newton_polish(target, mode, logp_mode, neg_h)
        n_grad += polish_evals
        cov = np.linalg.inv(neg_h)
        approx = Gaussian(mode, 0.5 * (cov + cov.T))
        log_z = logp_mode + 0.5 * target.dim * math.log(2 * math.pi) - 0.5 * float(np.sum(np.log(eig)))
        draws = approx.sample(self.draws, rng)[None]
        clock.stop()
        messages = [] if best["success"] else [f"L-BFGS-B did not report convergence: {best['message']}"]
        if interrupted:
            messages.insert(0, f"interrupted by Ctrl-C: the Gaussian at the best point found by then "
                               f"({len(optima)} of {len(starts)} starts)")
        info = {"mode": mode, "logp_mode": logp_mode, "hessian": hess, "optima": optima}
        if not interrupted:
            # its own health, as a VI fit's: k-hat of q against the target (a funnel's mode is no
            # centre: 6 sds off on the 5-d funnel), and the peaks q's draws miss
            info["pareto_k"], khat_messages, khat_evals = pareto_check(target, approx, draws[0], KHAT_DRAWS)
            peak_messages, peak_evals = approximation_peaks(target, draws, seed, search_limit(target, budget))
            messages += khat_messages + peak_messages
            n_grad += khat_evals + peak_evals
            info.update(khat_grad_evals=khat_evals, peaks_grad_evals=peak_evals)
        return self.result(
            target, seed, draws, clock, grad_evals=n_grad,
            approximation=approx,
            log_z=log_z,
            messages=messages,
            info=info,
            interrupted=interrupted,
        )


def newton_polish(target: Target, mode: np.ndarray, logp_mode: float, neg_h: np.ndarray) -> tuple[np.ndarray, float, int]:
    """One Newton step from L-BFGS-B's optimum with the Hessian already at hand: (mode, log p
    there, gradient evaluations made). L-BFGS-B stops where log p no longer resolves its steps
    (its ``ftol``), with the gradient still about 1e-6 (the diabetes regression: 6e-6, the mode
    1e-6 of an sd off); the step takes a Gaussian's mode to rounding. Kept only if it shrinks
    the gradient without lowering log p beyond its rounding."""
    _, g0 = target.logp_and_grad(mode)  # the optimiser kept no gradient of its best point
    step = np.linalg.solve(neg_h, g0)
    candidate = mode + step
    lp1, g1 = target.logp_and_grad(candidate)
    if (math.isfinite(lp1) and np.all(np.isfinite(g1)) and np.linalg.norm(g1) < np.linalg.norm(g0)
            and lp1 >= logp_mode - 1e-12 * max(1.0, abs(logp_mode))):
        return candidate, float(lp1), 2
    return mode, logp_mode, 2
