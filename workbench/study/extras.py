"""Extra per-cell quantities for the scientific studies (``Cell(extra="workbench.study.extras:NAME")``).

Each function takes ``(result, target, reference)`` (reference: draws standing in for a
missing truth, or None) and returns a dict of table columns; arrays for the figures go
under "_arrays". They run in the worker, beside the method.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats
from scipy.integrate import trapezoid
from scipy.special import logsumexp

# ----------------------------------------------------------------------------- mini-batches


def mean_field_sd(cov: np.ndarray) -> np.ndarray:
    """The sds of the KL(q||p)-optimal mean-field Gaussian for a Gaussian p: 1 / sqrt((Sigma^-1)_jj)."""
    return 1.0 / np.sqrt(np.diag(np.linalg.inv(cov)))


def posterior_sd_ratios(result, target, reference=None) -> dict:
    """q's sds over the exact posterior sds and over the mean-field optimum's (medians over
    coordinates); needs a Gaussian truth with a covariance (e.g. the conjugate regression)."""
    q = result.approximation
    sd_q = np.asarray(q.sd if q is not None else result.flat_draws().std(axis=0), dtype=float)
    truth = target.truth
    return {
        "sd_ratio_exact": float(np.median(sd_q / truth.sd)),
        "sd_ratio_mean_field": float(np.median(sd_q / mean_field_sd(truth.cov))),
    }


# ----------------------------------------------------------------------------- marginals

MARGINAL_COORDS = 3  # coordinates scored per cell
MARGINAL_GRID = 200
KDE_DRAWS = 4000


def total_variation(grid: np.ndarray, p: np.ndarray, q: np.ndarray) -> float:
    """0.5 * integral |p - q| over the grid (trapezoid rule): 0 = equal, 1 = disjoint. Capped
    at 1: a spike narrower than the grid spacing can make the rule overshoot."""
    return float(min(1.0, 0.5 * trapezoid(np.abs(p - q), grid)))


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
    from .. import metrics
    from ..methods import ImportanceSampling

    out = marginal_accuracy(result, target, reference)
    sub = mixture_marginal_target(target, TRANSFER_COORDS)
    for name, proposal in (("q_marginal", result.approximation.marginal(list(TRANSFER_COORDS))), ("default", None)):
        r = ImportanceSampling(proposal=proposal, n=TRANSFER_DRAWS).run(sub, seed=1)
        row = metrics.evaluate(r, sub, seed=1)
        out[f"transfer_{name}_ess_frac"] = float(r.info["ess_fraction"])
        out[f"transfer_{name}_khat"] = float(r.info["pareto_k"])
        out[f"transfer_{name}_w1"] = float(row["w1_mean"])
    return out


# ----------------------------------------------------------------------------- dimension scaling


def chain_scaling(result, target, reference=None) -> dict:
    """Per-run quantities the scaling theory is about: mean acceptance, the (adapted) step
    size or proposal scale, and the expected squared jump distance per coordinate in units
    of the target's variance (ESJD, the efficiency criterion of Roberts, Gelman and Gilks
    1997). For importance sampling, the ESS fraction and Pareto k-hat instead."""
    out = {"acceptance": math.nan, "step_size": math.nan, "esjd": math.nan, "ess_frac": math.nan, "khat": math.nan}
    info = result.info or {}
    if "ess_fraction" in info:
        out.update(ess_frac=float(info["ess_fraction"]), khat=float(info["pareto_k"]))
        return out
    if "accept_prob" in result.stats:
        out["acceptance"] = float(np.mean(result.stats["accept_prob"]))
    if "scale" in info:  # random-walk Metropolis: the proposal scale (the same for every step)
        out["step_size"] = float(np.median(info["scale"]))
    elif "step_size" in result.stats:
        out["step_size"] = float(np.median(result.stats["step_size"]))
    x = result.draws
    if x.shape[1] > 1:
        var = target.truth.sd**2 if target.truth is not None and target.truth.sd is not None else x.reshape(-1, x.shape[2]).var(0)
        out["esjd"] = float(np.mean(np.mean(np.diff(x, axis=1) ** 2, axis=1) / var))
    return out


# ----------------------------------------------------------------------------- VI quality

VI_DRAWS = 4000
TRACE_POINTS = 200


def _block_means(values: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """(last iteration of each block, mean over the block): a per-iteration trace cut to
    ``points`` blocks (the mean takes out most of the Monte Carlo noise of the ELBO estimate)."""
    values = np.asarray(values, dtype=float)
    n = values.size
    edges = np.unique(np.linspace(0, n, min(points, n) + 1).astype(int))
    means = np.array([values[a:b].mean() for a, b in zip(edges[:-1], edges[1:])])
    return edges[1:].astype(float), means


def vi_quality(result, target, reference=None) -> dict:
    """The fitted q's loss, measured well: ``neg_elbo`` = E_q[log q - log p] from ``VI_DRAWS``
    fresh draws of q (with its standard error), ``kl`` = neg_elbo + log Z when the target's
    evidence is known (KL(q||p) >= 0), and ``log_z_is`` = the importance-sampling estimate of
    log Z with q as proposal (a lower bound in expectation; ``log_z_is_khat`` is its Pareto
    k-hat diagnostic). The per-iteration ELBO estimate
    and smallest weight c_i, in block means, go to "_arrays"."""
    from ..methods.importance import compute_log_ratios, pareto_khat

    q = result.approximation
    x = q.sample(VI_DRAWS, np.random.default_rng(777))
    log_ratio = compute_log_ratios(target, q, x)  # log p - log q
    truth = target.truth
    out = {
        "neg_elbo": float(-np.mean(log_ratio)),
        "neg_elbo_se": float(np.std(log_ratio, ddof=1) / math.sqrt(VI_DRAWS)),
        "log_z_is": float(logsumexp(log_ratio) - math.log(VI_DRAWS)),
        "log_z_is_khat": float(pareto_khat(log_ratio)[1]),  # > 0.7: the IS estimate is unreliable
        "kl": math.nan,
        "iterations": int(np.size(result.stats.get("elbo", []))),
    }
    if truth is not None and truth.log_z is not None:
        out["kl"] = out["neg_elbo"] + float(truth.log_z)
    arrays = {}
    if "elbo" in result.stats and np.size(result.stats["elbo"]):
        it, elbo = _block_means(result.stats["elbo"], TRACE_POINTS)
        arrays.update(trace_iteration=it, trace_neg_elbo=-elbo, trace_min_c=_block_means(result.stats["min_c"], TRACE_POINTS)[1])
    out["_arrays"] = arrays
    return out


def vi_ablation(result, target, reference=None) -> dict:
    """``vi_quality`` plus, on mixture targets, the largest error of q's peak weights."""
    out = vi_quality(result, target, reference)
    truth = target.truth
    if truth is not None and "assign_component" in truth.extras:
        x = result.approximation.sample(VI_DRAWS, np.random.default_rng(778))
        share = np.bincount(truth.extras["assign_component"](x), minlength=truth.extras["component_weights"].size)
        out["weight_err_max"] = float(np.max(np.abs(share / share.sum() - truth.extras["component_weights"])))
    return out


# ----------------------------------------------------------------------------- Theorem 1

PREDICT_DRAWS = 2000
PREDICT_POINTS = 50


def _model(target) -> str:
    """Which built-in model a target is ("linear_regression", "bnn", ...), from its spec."""
    return (target.spec or {}).get("factory", target.name)


def prediction_inputs(target) -> np.ndarray:
    """The inputs x at which <f>(x) is compared: the data rows for a regression, an evenly
    spaced grid over the data's range for a one-input BNN."""
    X = target.data[0]
    if _model(target) == "bnn" and X.shape[1] == 1:
        lo, hi = X.min(), X.max()
        return np.linspace(lo, hi, PREDICT_POINTS)[:, None]
    return X


def predictions(target, thetas: np.ndarray, X: np.ndarray) -> np.ndarray:
    """f(x; theta) for every theta (rows) and input x (rows of X): (n_theta, n_x)."""
    thetas = np.atleast_2d(thetas)
    model = _model(target)
    if model == "linear_regression":
        return thetas @ X.T
    if model == "logistic_regression":
        return 1.0 / (1.0 + np.exp(-(thetas @ X.T)))
    if model == "bnn":
        from ..targets.bnn import bnn_predict, layer_sizes

        sizes = layer_sizes(target)
        return np.array([bnn_predict(np.ascontiguousarray(t), X, sizes) for t in thetas])
    raise ValueError(f"no model function f(x; theta) known for target {target.name!r}")


def relative_prediction_error(f_exact: np.ndarray, f_q: np.ndarray) -> float:
    """||<f> - <f>_q|| / ||<f>|| over the inputs: Theorem 1's delta<f>/<f>, as one number
    (a pointwise ratio is unstable where <f>(x) crosses zero)."""
    return float(np.linalg.norm(f_exact - f_q) / np.linalg.norm(f_exact))


def predictive_mean(target, reference=None, X=None) -> np.ndarray:
    """The exact posterior predictive mean <f>(x): in closed form for the (linear) conjugate
    regression, else the mean over the reference draws."""
    X = prediction_inputs(target) if X is None else X
    truth = target.truth
    if _model(target) == "linear_regression" and truth is not None:
        return X @ truth.mean
    if reference is None:
        raise ValueError(f"target {target.name!r} needs reference draws for its predictive mean")
    ref = np.asarray(reference)
    idx = np.linspace(0, ref.shape[0] - 1, min(ref.shape[0], 4 * PREDICT_DRAWS)).astype(int)
    return predictions(target, ref[idx], X).mean(axis=0)


def theorem1_quantities(result, target, reference=None) -> dict:
    """``vi_quality`` (the loss) plus ``rel_error``, the relative error of q's predictive mean
    <f>_q(x) against the exact <f>(x) (Theorem 1's left side). For a linear f, <f>_q = f(mean of q)
    exactly; otherwise it is averaged over ``PREDICT_DRAWS`` draws of q."""
    out = vi_quality(result, target, reference)
    X = prediction_inputs(target)
    f_exact = predictive_mean(target, reference, X)
    q = result.approximation
    if _model(target) == "linear_regression":
        f_q = X @ q.mean
    else:
        f_q = predictions(target, q.sample(PREDICT_DRAWS, np.random.default_rng(779)), X).mean(axis=0)
    out["rel_error"] = relative_prediction_error(f_exact, f_q)
    return out
