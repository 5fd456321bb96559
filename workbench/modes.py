"""Finding the modes of a target: quasi-Newton ascent from spread starts, merged, with curvature.

A search for where the mass of a posterior is, used to start variational fits (``NN4Post``
and ``MeanFieldVI`` with ``init="modes"``) and reusable by any method that needs modes.

1. L-BFGS-B (SciPy) on -log p from the target's initial point: the first mode m_1 and the
   curvature there, whose mean-field scales s_1 = 1 / sqrt(-H_jj) set the unit of length.
2. ``starts`` further runs from x_0 + s_1 * z * rho, z ~ N(0, I), with rho log-uniform on
   [1, spread * max(sqrt(d), 3)]: a radial ladder from the first mode's own scale out to far
   beyond it. A start converges to the mode whose basin it lies in; in d dimensions the basin
   of a peak a distance D away along one direction is reached only by starts of radius about
   D sqrt(d) (the nn4post paper's R_1 argument, sec. 7.1.1), hence the sqrt(d) in the ladder.
3. Optima closer than ``merge`` local sds in every coordinate are one mode. Each mode gets its
   Hessian (the target's analytic one, else central differences of the gradient: 2 d
   gradients; above ``FULL_HESSIAN_MAX_DIM`` only the diagonal, estimated from a few random
   probes when they agree, see ``diagonal_by_probes``), its mean-field scales
   1 / sqrt(-H_jj) (the KL(q || p)-optimal diagonal Gaussian of the local Laplace fit) and its
   Laplace evidence log p(m) + d/2 log 2 pi - 1/2 log det(-H), so that exp(log_z) of separated
   modes are proportional to their masses. Optima where -H is not positive definite (saddles,
   flat directions), runs that did not converge and starts whose density is not finite are
   skipped and counted. When no ascent converges at all (plateaus, as in a BNN with saturated
   units), the initial point with unit scales stands in for a mode (``ModeSearch.fallback``).

How long to search is decided by what the search finds when ``quiet`` is given: once it has
spent ``min_search_grad_evals``, it stops when the last max(``quiet``, n / 2) of its n starts
found no new mode (having found its newest mode at start k, it searches on to start 2 k at
least). A peak that a start reaches with probability p is then missed with probability about
(1 - p)^quiet, or less when the floor paid for more starts. Every gradient evaluation is
counted; ``max_grad_evals`` stops the search (the first run is always completed, and it alone
may exceed a very small limit: ``min_grad_evals`` says how many it needs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import optimize

from .errors import NonFiniteDensityError
from .target import Target

FULL_HESSIAN_MAX_DIM = 500
"""Above this dimension only the diagonal of the Hessian is formed (O(d) memory)."""

LBFGS_MAXITER = 1000
LBFGS_MAX_CALLS_PER_DIM = 20
"""An ascent may take 20 (d + 20) evaluations: plenty for a mode in reach, a cap for the
starts that crawl across plateaus (a BNN's saturated units)."""


class Mode(NamedTuple):
    """One mode: location, log density, mean-field scales, Laplace evidence, starts that found it."""

    x: np.ndarray
    logp: float
    sd: np.ndarray
    log_z: float
    hits: int


class ModeSearch(NamedTuple):
    """What a search found: ``modes`` sorted by Laplace evidence (largest first)."""

    modes: list
    grad_evals: int
    starts: int
    failed: int
    saddles: int
    unconverged: int
    fallback: bool = False
    """True when no ascent converged and ``modes`` holds the best point one reached."""
    settled: bool = True
    """False when ``quiet`` was given and the search ran out of starts or evaluations while it
    was still finding new modes."""

    @property
    def weights(self) -> np.ndarray:
        """Each mode's share of the total Laplace evidence."""
        log_z = np.array([m.log_z for m in self.modes])
        return np.exp(log_z - np.logaddexp.reduce(log_z))




class _Counter:
    """-log p and its gradient for SciPy, counting calls and stopping at a limit."""

    def __init__(self, target: Target, limit: float):
        self.target = target
        self.calls = 0
        self.limit = limit

    def __call__(self, x):
        if self.calls >= self.limit:  # out of evaluations: refuse the point without evaluating it
            return math.inf, np.zeros(self.target.dim)
        self.calls += 1
        try:
            lp, g = self.target.logp_and_grad(x)
        except ArithmeticError:  # a user density under Numba's default error model
            return math.inf, np.zeros(self.target.dim)
        if not (math.isfinite(lp) and np.all(np.isfinite(g))):
            return math.inf, np.zeros_like(g)
        return -lp, -g


def _ascend(target: Target, x0: np.ndarray, max_calls: int) -> tuple[np.ndarray, float, int]:
    """L-BFGS-B on -log p from x0: (optimum, log p there, gradient evaluations); log p is
    -inf when the run did not converge (out of evaluations, or a line search that failed
    far from a stationary point)."""
    fun = _Counter(target, max_calls)
    res = optimize.minimize(
        fun, x0, jac=True, method="L-BFGS-B",
        options={"maxiter": LBFGS_MAXITER, "maxfun": max(int(max_calls), 2), "gtol": 1e-8, "ftol": 1e-13},
    )
    converged = res.success or np.max(np.abs(res.jac)) <= 1e-5 * max(1.0, abs(float(res.fun)))
    return np.asarray(res.x, dtype=float), (-float(res.fun) if converged else -math.inf), fun.calls


def hessian_by_differences(target: Target, x, rel_step: float = 1e-5, diagonal: bool = False) -> np.ndarray:
    """The Hessian of log p at x by central differences of the gradient (2 d gradients),
    symmetrised; with ``diagonal`` only its diagonal (d,), in O(d) memory."""
    d = target.dim
    out = np.empty(d) if diagonal else np.empty((d, d))
    y = np.array(x, dtype=float)
    for k in range(d):
        h = rel_step * max(1.0, abs(y[k]))
        orig = y[k]
        y[k] = orig + h
        _, g_up = target.logp_and_grad(y)
        y[k] = orig - h
        _, g_down = target.logp_and_grad(y)
        y[k] = orig
        column = (g_up - g_down) / (2.0 * h)
        if diagonal:
            out[k] = column[k]
        else:
            out[:, k] = column
    return out if diagonal else 0.5 * (out + out.T)


PROBES_MAX = 32
PROBES_RTOL = 0.02
"""The probe estimate of a Hessian's diagonal is used when, after at most ``PROBES_MAX`` probes,
its standard error is below ``PROBES_RTOL`` of its value in every coordinate."""


def curvature_grad_evals(dim: int) -> int:
    """Gradient evaluations a mode's curvature takes at most, short of the column fallback."""
    return 2 * dim if dim <= FULL_HESSIAN_MAX_DIM else 2 * PROBES_MAX


def search_rng(seed: int) -> np.random.Generator:
    """The random stream of a method's mode search, derived from its run's ``seed`` apart from
    the streams its fit draws from (so adding or removing the search leaves the fit's draws
    as they were)."""
    return np.random.default_rng(np.random.SeedSequence([seed, 0x30DE5]))


def min_grad_evals(dim: int) -> int:
    """Gradient evaluations the first run needs at the least: a short L-BFGS run and its curvature."""
    return curvature_grad_evals(dim) + 200


def diagonal_by_probes(target: Target, x, rel_step: float = 1e-5) -> tuple[np.ndarray, bool, int]:
    """The diagonal of the Hessian of log p at x from random probes, and the gradients used.

    Bekas, Kokiopoulou and Saad (2007, eq. 3): with Rademacher probes v (entries +-1),
    E[v * (H v)] = diag(H), and one probe's error in coordinate j is sum_{k != j} H_jk v_k v_j.
    Each H v is a central difference of the gradient along v (2 gradients, whatever d), with
    each coordinate's step scaled as ``hessian_by_differences`` scales it. Probes are added
    until the estimate's standard error is below ``PROBES_RTOL`` of its value everywhere: a
    (block-)diagonal Hessian settles after two probes (4 gradients instead of 2 d). Returns
    (estimate, settled, gradients); not settled after ``PROBES_MAX`` probes means strong
    coupling between coordinates."""
    y = np.asarray(x, dtype=float)
    step = rel_step * np.maximum(1.0, np.abs(y))
    rng = np.random.default_rng(0x9E3779B9)  # fixed probes: the search stays reproducible
    total = np.zeros(target.dim)
    total_sq = np.zeros(target.dim)
    for k in range(1, PROBES_MAX + 1):
        v = rng.choice(np.array([-1.0, 1.0]), size=target.dim)
        _, g_up = target.logp_and_grad(y + step * v)
        _, g_down = target.logp_and_grad(y - step * v)
        estimate = v * (g_up - g_down) / (2.0 * step)
        total += estimate
        total_sq += estimate * estimate
        if k >= 2:
            mean = total / k
            se = np.sqrt(np.maximum(total_sq / k - mean * mean, 0.0) / (k - 1))
            if np.all(se <= PROBES_RTOL * np.abs(mean)):
                return mean, True, 2 * k
    return total / PROBES_MAX, False, 2 * PROBES_MAX


def curvature(target: Target, x: np.ndarray, rel_step: float = 1e-5,
              max_grad_evals: float = math.inf) -> tuple[np.ndarray, int]:
    """The Hessian of log p at x, (d, d), or its diagonal (d,) above FULL_HESSIAN_MAX_DIM, and
    the gradient evaluations it took (0 for the target's analytic Hessian). The diagonal comes
    from probes when they settle, else from 2 d more gradients when ``max_grad_evals`` allows
    them, else it is the probes' unsettled estimate."""
    if target.dim <= FULL_HESSIAN_MAX_DIM:
        if target.hessian is not None:
            return np.asarray(target.hessian(x), dtype=float), 0
        return hessian_by_differences(target, x, rel_step), 2 * target.dim
    diag, settled, used = diagonal_by_probes(target, x, rel_step)
    if settled or used + 2 * target.dim > max_grad_evals:
        return diag, used
    return hessian_by_differences(target, x, rel_step, diagonal=True), used + 2 * target.dim


DEGENERATE_SD = 1e-6
"""An optimum whose Laplace scale in some unconstrained coordinate is below this is degenerate
(a funnel's neck), not a mode: real posteriors are not that narrow on the unconstrained space.
(At 1e-8 the Brownian motion's mode search kept a neck at log sigma = -17.7, latent sds
1.4e-8, and MeanFieldVI started from it ended 30 posterior sds off; rejecting a real but that
narrow mode costs less: the fit then starts from the initial point.)"""


def laplace_summary(target: Target, x: np.ndarray, logp: float,
                    max_grad_evals: float = math.inf) -> tuple[np.ndarray | None, float, int]:
    """(mean-field scales 1/sqrt(-H_jj), Laplace log evidence, gradients used) at x; the scales
    are None (and the evidence NaN) when -H is not positive definite there."""
    hess, used = curvature(target, x, max_grad_evals=max_grad_evals)
    d = target.dim
    if not np.all(np.isfinite(hess)):
        return None, math.nan, used
    if hess.ndim == 2:
        diag = -np.diag(hess)
        try:
            chol = np.linalg.cholesky(-hess)
        except np.linalg.LinAlgError:
            return None, math.nan, used
        log_det = 2.0 * float(np.sum(np.log(np.diag(chol))))
    else:
        diag = -hess
        if not np.all(diag > 0):
            return None, math.nan, used
        log_det = float(np.sum(np.log(diag)))
    log_z = logp + 0.5 * d * math.log(2.0 * math.pi) - 0.5 * log_det
    return 1.0 / np.sqrt(diag), log_z, used


def find_modes(
    target: Target,
    rng: np.random.Generator,
    *,
    starts: int = 50,
    spread: float = 10.0,
    merge: float = 2.0,
    max_grad_evals: int | None = None,
    x0: np.ndarray | None = None,
    quiet: int | None = None,
    min_search_grad_evals: int = 0,
    quiet_top: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ModeSearch:
    """Search ``target`` for modes (see the module docstring).

    Parameters
    ----------
    starts : further starts after the first run from ``x0`` (the target's initial point), at most.
    quiet : stop when the last max(quiet, n / 2) of n starts found no new mode (None: make
        every start).
    min_search_grad_evals : with ``quiet``, the evaluations spent before the search may stop
        for being quiet.
    quiet_top : with ``quiet``, only a mode that enters the best ``quiet_top`` by Laplace
        evidence counts as new (the modes a fit with that many components would use).
    spread : the ladder of start radii reaches ``spread * max(sqrt(d), 3)`` first-mode sds.
    merge : optima within this many local sds of a mode in every coordinate are that mode.
    max_grad_evals : stop starting new runs when this many gradients are spent.
    on_progress : called as on_progress(gradients spent, max_grad_evals) after each start (a
        caller's progress report or time estimate).

    Raises NonFiniteDensityError when no start at all reaches a point with finite density and a
    positive definite curvature.
    """
    d = target.dim
    x0 = target.initial_point if x0 is None else np.asarray(x0, dtype=float)
    limit = math.inf if max_grad_evals is None else int(max_grad_evals)
    used = 0
    failed = 0
    saddles = 0
    unconverged = 0
    modes: list[dict] = []
    best_unconverged = [None, -math.inf]  # the fallback: the highest point an unfinished ascent reached

    def consider(x_start, budget_left) -> bool:
        """Run one start; True when it found a new mode."""
        nonlocal used, failed, saddles, unconverged
        used += 1  # the check of the start
        try:
            target.check_point(x_start)
        except NonFiniteDensityError:
            failed += 1
            return False
        # the ascent leaves room for the curvature at its optimum
        reserve = curvature_grad_evals(d) + 1
        x, lp, calls = _ascend(target, x_start, min(budget_left - reserve, LBFGS_MAX_CALLS_PER_DIM * (d + 20)))
        used += calls
        if not math.isfinite(lp):
            unconverged += 1
            reached = target.logp(x) if np.all(np.isfinite(x)) else -math.inf
            if math.isfinite(reached) and reached > best_unconverged[1]:
                best_unconverged[:] = [x, reached]
            return False
        for m in modes:  # an optimum already known: no curvature needed
            if np.all(np.abs(x - m["x"]) < merge * m["sd"]):
                m["hits"] += 1
                if lp > m["logp"]:
                    m["x"], m["logp"] = x, lp
                return False
        sd, log_z, calls = laplace_summary(target, x, lp, budget_left - 1 - calls)
        used += calls
        if sd is None or np.min(sd) < DEGENERATE_SD:
            # a saddle, or the neck of a funnel: on a hierarchical posterior L-BFGS "converges"
            # where a group scale has run off to exp(-30..-80) and its latents sit on their mean
            # with sds of 1e-13..1e-36 (the Brownian motion's "modes"): not a mode of any use
            saddles += 1
            return False
        modes.append({"x": x, "logp": lp, "sd": sd, "log_z": log_z, "hits": 1})
        return quiet_top is None or sum(m["log_z"] > log_z for m in modes) < quiet_top

    n_started = 1
    last_new = 1 if consider(x0, max(limit, min_grad_evals(d))) else 0  # the start that found the newest mode
    if modes:
        scale = modes[0]["sd"]
    else:  # the initial point led nowhere usable: spread starts on the unit scale
        scale = np.ones(d)
    log_rho_max = math.log(spread * max(math.sqrt(d), 3.0))

    def quiet_enough() -> bool:
        return (quiet is not None and used >= min_search_grad_evals
                and n_started - last_new >= max(quiet, n_started // 2))

    for _ in range(starts):
        if quiet_enough():
            break
        if limit - used < min_grad_evals(d):
            break
        rho = math.exp(rng.uniform(0.0, log_rho_max))
        n_started += 1
        if consider(x0 + scale * rng.standard_normal(d) * rho, limit - used):
            last_new = n_started
        if on_progress is not None and math.isfinite(limit):
            on_progress(used, int(limit))
    settled = quiet is None or quiet_enough()
    fallback = False
    if not modes and (best_unconverged[0] is not None or saddles):
        # No ascent converged, or every optimum was degenerate. On a hierarchical posterior this
        # is the rule, not bad luck: as a group scale goes to 0 with its latents collapsed onto
        # their mean, log p grows without bound and there is no mode (the funnel of eight
        # schools, stochastic volatility, a Brownian motion's innovation scale). The best point
        # an ascent reached is then deep in that neck, the worst start a fit could take
        # (measured: FullRankVI from there ended 21.7 reference sds off on the Brownian motion,
        # 0.27 from the initial point). So the fit starts where ADVI starts: the initial point,
        # with unit scales.
        lp0, _ = target.logp_and_grad(x0)
        if math.isfinite(lp0):
            used += 1
            modes.append({"x": np.array(x0, dtype=float), "logp": lp0, "sd": np.ones(d), "log_z": lp0, "hits": 0})
            fallback = True
    if not modes:
        raise NonFiniteDensityError(
            f"the mode search on {target.name!r} found no point with a finite density and a positive "
            f"definite curvature in {n_started} starts ({failed} with a non-finite density, {unconverged} "
            f"runs that did not converge, {saddles} saddles or flat directions), and the density is not "
            "finite at the initial point either; give init='box' or a start with init_from=...",
            x0, math.nan,
        )
    modes.sort(key=lambda m: -m["log_z"])
    return ModeSearch(
        modes=[Mode(m["x"], m["logp"], m["sd"], m["log_z"], m["hits"]) for m in modes],
        grad_evals=int(used),
        starts=n_started,
        failed=failed,
        saddles=saddles,
        unconverged=unconverged,
        fallback=fallback,
        settled=settled,
    )
