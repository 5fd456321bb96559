"""One-coordinate marginals: how well a method's marginal densities match the truth's
(total variation on a grid), and the nn4post paper's transfer argument (sec. 5) measured."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .distances import total_variation

MARGINAL_COORDS = 3  # coordinates scored per cell
MARGINAL_GRID = 200
KDE_DRAWS = 4000


def _truth_draws(target, reference, n: int = 20_000):
    if reference is not None:
        return np.asarray(reference)
    return target.truth.sample(n, np.random.default_rng(2024))


def marginal_grid(truth_draws: np.ndarray, k: int, n: int = MARGINAL_GRID) -> np.ndarray:
    """An evaluation grid for coordinate k: the truth's 0.5%..99.5% range, widened by 10%."""
    lo, hi = np.quantile(truth_draws[:, k], [0.005, 0.995])
    pad = 0.1 * (hi - lo)
    return np.linspace(lo - pad, hi + pad, n)


def _kde(x: np.ndarray, weights, grid: np.ndarray) -> np.ndarray | None:
    """A Gaussian KDE of (weighted) draws on the grid; None when the draws are in effect one
    point (Kish ESS < 2, e.g. importance sampling whose weight sits on one draw)."""
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
        if weights.sum() ** 2 / np.sum(weights**2) < 2:
            return None
    if x.shape[0] > KDE_DRAWS:  # thin evenly: the KDE's cost grows with the draws
        idx = np.linspace(0, x.shape[0] - 1, KDE_DRAWS).astype(int)
        x, weights = x[idx], (None if weights is None else weights[idx])
    return stats.gaussian_kde(x, weights=weights)(grid)


_TRUTH_MARGINALS: dict = {}  # (target spec, k, exact) -> (grid, density): per worker process


def _truth_marginal(target, ref: np.ndarray, k: int, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """The grid and the true marginal density of coordinate k on it (cached: some exact
    marginals, like the funnel's, are numerical integrals and slow)."""
    import json

    key = (json.dumps(target.spec, sort_keys=True, default=repr), k, exact, ref.shape)
    if key not in _TRUTH_MARGINALS:
        grid = marginal_grid(ref, k)
        _TRUTH_MARGINALS[key] = (grid, target.truth.marginal_pdf(k, grid) if exact else _kde(ref[:, k], None, grid))
    return _TRUTH_MARGINALS[key]


def marginal_accuracy(result, target, reference=None) -> dict:
    """How well the method's one-coordinate marginals match the truth's, for the first
    ``MARGINAL_COORDS`` coordinates, as total-variation distances on a grid:

    - ``tv_kde``: a Gaussian KDE of the draws (weighted for importance sampling);
    - ``tv_analytic``: the analytic marginal of eq. 6, for methods with a mixture ``approximation``.

    The truth is the exact marginal density where the target has one, else a KDE of the
    reference draws. Means over the coordinates; the densities go to "_arrays" for figures.
    Weighted draws in effect on one point (Kish ESS < 2) count as a point mass: TV 1.
    """
    truth = target.truth
    exact = truth is not None and truth.marginal_pdf_fn is not None
    if not exact and reference is None:
        raise ValueError(f"target {target.name!r} has no exact marginals and no reference draws")
    ref = _truth_draws(target, reference)
    x, w = result.flat_draws(), result.weights()
    q = result.approximation
    analytic = q is not None and hasattr(q, "marginal_pdf")
    coords = range(min(MARGINAL_COORDS, target.dim))
    grids, p_true, p_kde, p_analytic, tv_kde, tv_analytic = [], [], [], [], [], []
    for k in coords:
        grid, p = _truth_marginal(target, ref, k, exact)
        pk = _kde(x[:, k], w, grid)
        if pk is None:  # a point mass: total variation 1 from any density
            pk, tv = np.zeros_like(grid), 1.0
        else:
            tv = total_variation(grid, p, pk)
        grids.append(grid), p_true.append(p), p_kde.append(pk)
        tv_kde.append(tv)
        if analytic:
            pa = q.marginal_pdf(k, grid)
            p_analytic.append(pa)
            tv_analytic.append(total_variation(grid, p, pa))
    arrays = {"grid": np.array(grids), "pdf_truth": np.array(p_true), "pdf_kde": np.array(p_kde)}
    if analytic:
        arrays["pdf_analytic"] = np.array(p_analytic)
    return {
        "tv_kde": float(np.mean(tv_kde)),
        "tv_analytic": float(np.mean(tv_analytic)) if analytic else math.nan,
        "truth_marginal": "exact" if exact else "KDE of reference",
        "_arrays": arrays,
    }


def mixture_marginal_target(target, indices):
    """The exact marginal of a ``gaussian_mixture`` target on ``indices``: again a Gaussian mixture."""
    from ..targets import gaussian_mixture

    ex = target.truth.extras
    idx = list(indices)
    return gaussian_mixture(dim=len(idx), weights=ex["component_weights"], means=ex["component_means"][:, idx],
                            scales=ex["component_scales"][:, idx])


TRANSFER_COORDS = (0, 1)
TRANSFER_DRAWS = 4000


def marginal_transfer(result, target, reference=None) -> dict:
    """The paper's transfer argument (sec. 5) measured: q's analytic marginal on two
    coordinates, reused as the importance-sampling proposal for the target's exact
    marginal on them, against the default proposal (a wide Student-t) on the same problem.

    Columns ``transfer_*``: ESS fraction, Pareto k-hat and marginal W1 (in sd units) of both.
    Also the marginal accuracy columns. Needs a ``gaussian_mixture`` target (exact marginal).
    """
    from ..methods import ImportanceSampling
    from .accuracy import evaluate

    out = marginal_accuracy(result, target, reference)
    sub = mixture_marginal_target(target, TRANSFER_COORDS)
    for name, proposal in (("q_marginal", result.approximation.marginal(list(TRANSFER_COORDS))), ("default", None)):
        r = ImportanceSampling(proposal=proposal, n=TRANSFER_DRAWS).run(sub, seed=1)
        row = evaluate(r, sub, seed=1)
        out[f"transfer_{name}_ess_frac"] = float(r.info["ess_fraction"])
        out[f"transfer_{name}_khat"] = float(r.info["pareto_k"])
        out[f"transfer_{name}_w1"] = float(row["w1_mean"])
    return out
