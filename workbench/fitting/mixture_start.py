"""Where an ``NN4Post`` fit starts: the mode search of ``init="modes"`` (its modes, weighted, as
the components), the paper's box, or a given fit (``init_from``); where the search finds no mode
(a hierarchical posterior, whose log density grows as a scale goes to 0), Pathfinder's Gaussian.
"""

from __future__ import annotations

import math

import numpy as np

from .. import modes as M
from ..approximations import GaussianMixture
from ..errors import BudgetTooSmallError
from ..result import Budget
from ..running.threads import PaceWatch, one_blas_thread
from ..target import Target
from .component_adaptation import components_from_modes, softplus_inv
from .health import DEFAULT_STEPS

MAX_SEARCH_STARTS = 2000
SPARE_WEIGHT_FRACTION = 0.1
"""Components beyond the modes found start at this fraction of ``c_accuracy``: below it, so the
component adaptation sees them as free."""
QUIET_STARTS = 100
"""Past its share, the mode search stops when its last max(100, n / 2) starts found no new mode."""
MAX_SEARCH_SHARE = 0.25
"""The most of the budget the search may take while it keeps finding new modes."""


def initial_parameters(method, target: Target, rng, search: M.ModeSearch | None, start=None):
    """The flat start [a, mu, zeta] of ``method`` (an NN4Post) and the per-parameter step scales (1
    but for the means). ``start``: a Gaussian to start from in place of the mode search's modes
    (Pathfinder's, where the search found none)."""
    k, d = method.n_components, target.dim
    scale_mu = np.ones((k, d))
    a = np.zeros(k)
    approx = start if method.init_from is None else getattr(method.init_from, "approximation", method.init_from)
    if isinstance(approx, dict):  # {"weights", "means", "scales"}: a JSON-able warm start (study specs)
        approx = GaussianMixture(approx["weights"], approx["means"], approx["scales"])
    if isinstance(approx, GaussianMixture) and len(approx.weights) == k:
        # warm start from an earlier fit (or any mixture of the same size, sec. 5)
        if approx.means.shape != (k, d):
            raise ValueError(f"init_from: a mixture of shape {approx.means.shape}, expected {(k, d)}")
        a = np.log(np.maximum(approx.weights, 1e-300))
        a -= a.mean()
        mu = np.array(approx.means, dtype=float)
        zeta = softplus_inv(approx.scales)
        scale_mu = np.array(approx.scales, dtype=float)
    elif approx is not None:
        if np.shape(approx.mean) != (d,):
            raise ValueError(f"init_from has dimension {np.size(approx.mean)}, the target {target.name!r} has {d}")
        centre = np.asarray(approx.mean, dtype=float)
        sd = np.sqrt(np.diag(np.asarray(approx.cov, dtype=float)))
        mu = centre + (sd * rng.standard_normal((k, d)) if k > 1 else 0.0)
        zeta = np.tile(softplus_inv(sd), (k, 1))
        scale_mu = np.tile(sd, (k, 1))
    elif search is not None:
        a, mu, sd = components_from_modes(search, k, rng, SPARE_WEIGHT_FRACTION * method.c_accuracy)
        zeta = softplus_inv(sd)
        scale_mu = sd
    else:
        half = method.init_range if method.init_range is not None else math.sqrt(d)
        mu = target.initial_point + rng.uniform(-half, half, size=(k, d))
        zeta = np.full((k, d), float(softplus_inv(method.init_scale)))
    if method.init_weights is not None:
        w = np.asarray(method.init_weights, dtype=float).ravel()
        if w.shape != (k,) or np.any(w <= 0) or not np.all(np.isfinite(w)):
            raise ValueError(f"init_weights must be {k} positive finite numbers, got {method.init_weights!r}")
        a = np.log(w / w.sum())
        a -= a.mean()
    params = np.ascontiguousarray(np.concatenate([a, mu.ravel(), zeta.ravel()]))
    if not method._scales_steps():
        scale_mu = np.ones((k, d))
    lr_scale = np.ascontiguousarray(np.concatenate([np.ones(k), scale_mu.ravel(), np.ones(k * d)]))
    if not (np.all(np.isfinite(params)) and np.all(lr_scale > 0) and np.all(np.isfinite(lr_scale))):
        raise ValueError(f"{method.name}: the initial parameters are not finite (check init_from / init_weights)")
    return params, lr_scale



def mode_search(method, target: Target, seed: int, budget: Budget) -> M.ModeSearch | None:
    """The mode search of ``method``'s init="modes" (None for the other starts)."""
    if method.init != "modes" or method.init_from is not None:
        return None
    d = target.dim
    needed = M.min_grad_evals(d)
    if budget.grad_evals is None:
        # without a budget the search's shares are of what the fit will spend
        steps = budget.steps if budget.steps is not None else (method.steps or DEFAULT_STEPS)
        planned = steps * method.n_components * method.samples
    else:
        if budget.grad_evals < 2 * needed:
            raise BudgetTooSmallError(
                f"grad_budget={budget.grad_evals} is too small for init='modes' on {target.name!r} (d={d}): "
                f"its mode search needs at least {needed} gradient evaluations and the fit as many again; "
                f"give grad_budget >= {2 * needed} or init='box'"
            )
        planned = budget.grad_evals
    share = int(method.search_budget * planned)
    limit = max(needed, share, int(MAX_SEARCH_SHARE * planned))
    starts = MAX_SEARCH_STARTS if method.search_starts is None else method.search_starts
    rng = M.search_rng(seed)
    pace = PaceWatch(f"{method.name}'s mode search on {target.name} (up to {limit:,} gradients, "
                     f"{MAX_SEARCH_SHARE:.0%} of the run's; it stops sooner once it finds no new modes)",
                     unit="gradients", advice="give it fewer steps or a budget, or init='box' to skip it")
    with one_blas_thread():  # L-BFGS-B's small BLAS calls
        return M.find_modes(target, rng, starts=starts, max_grad_evals=limit, quiet=QUIET_STARTS,
                            min_search_grad_evals=share, quiet_top=method.n_components, on_progress=pace)
