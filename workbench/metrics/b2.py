"""The b^2 cost-to-accuracy metric of the microcanonical samplers' papers.

Robnik, De Luca, Silverstein and Seljak (2023, sec. 5) and Robnik, Cohn-Gordon and Seljak
(2025, sec. 5.1): for each coordinate, the squared error of the running estimate of its
second moment, in units of that moment's variance,

    b^2_i(n) = (mean_{k <= n} x_{k,i}^2 - E[x_i^2])^2 / Var[x_i^2],

so that b^2 = 0.01 is about the error of 100 effective draws. ``b2_max`` is the worst
coordinate, ``b2_avg`` the mean over coordinates, each the median over chains; the cost of a
method is the gradients after which b^2 stays below 0.01 (tuning included, and apart).

E[x^2] comes from the truth's mean and sd (or the reference's); Var[x^2] from exact or
reference draws when there are enough, else the Gaussian value 2 sd^4 + 4 mean^2 sd^2.
"""

from __future__ import annotations

import math

import numpy as np

B2_THRESHOLD = 0.01
MIN_REFERENCE_DRAWS = 1000
# exact draws that Var[x^2] is estimated from, for a target with an exact sampler: at most this
# many, and at most EXACT_X2_VALUES numbers in all (above d = 2,000 the Gaussian value instead)
EXACT_X2_DRAWS = 20_000
EXACT_X2_VALUES = 2_000_000


def second_moments(mean, sd, reference=None) -> tuple[np.ndarray, np.ndarray]:
    """(E[x^2], Var[x^2]) per coordinate."""
    mean, sd = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
    ex2 = mean ** 2 + sd ** 2
    if reference is not None and len(reference) >= MIN_REFERENCE_DRAWS:
        var_x2 = np.var(np.asarray(reference, dtype=float) ** 2, axis=0)
    else:
        var_x2 = 2.0 * sd ** 4 + 4.0 * mean ** 2 * sd ** 2
    return ex2, np.maximum(var_x2, 1e-300)


def scoring_second_moments(target, mean, sd, reference=None) -> tuple[np.ndarray, np.ndarray]:
    """(E[x^2], Var[x^2]) as every b^2 is scored, the accuracy columns (``b2_max``, ``b2_avg``)
    and the crossings alike, so a page's figures and tables agree: for a target with an exact
    sampler, Var[x^2] from one fixed stream of its draws (the same numbers for every method and
    seed: a banana's x^2 is heavy-tailed, and estimates from each cell's own exact draws differed
    by 10-40%); else from the reference's draws; else the Gaussian value."""
    truth = target.truth
    if truth is not None and truth.sampler is not None:
        n = min(EXACT_X2_DRAWS, EXACT_X2_VALUES // max(target.dim, 1))
        if n >= MIN_REFERENCE_DRAWS:
            reference = truth.sample(n, np.random.default_rng([0, 0xB2]))
    return second_moments(mean, sd, reference)


def b2_curves(draws: np.ndarray, ex2: np.ndarray, var_x2: np.ndarray, points: int = 200):
    """b^2 of the running second moment of each chain at up to ``points`` draw counts (spaced
    geometrically): returns (counts (m,), max over coordinates (chains, m), mean (chains, m)).
    Computed chunk by chunk: (chains, draws, d) is never squared whole."""
    draws = np.asarray(draws, dtype=float)
    chains, n, _ = draws.shape
    if n == 0:
        return np.zeros(0, dtype=int), np.zeros((chains, 0)), np.zeros((chains, 0))
    counts = np.unique(np.geomspace(1, n, min(points, n)).astype(int))
    worst = np.empty((chains, counts.size))
    average = np.empty((chains, counts.size))
    for c in range(chains):
        running = np.zeros(draws.shape[2])
        done = 0
        for j, k in enumerate(counts):
            running += np.sum(draws[c, done:k] ** 2, axis=0)
            done = k
            b2 = (running / k - ex2) ** 2 / var_x2
            worst[c, j] = b2.max()
            average[c, j] = b2.mean()
    return counts, worst, average


def final_b2(draws: np.ndarray, ex2: np.ndarray, var_x2: np.ndarray) -> tuple[float, float]:
    """(b2_max, b2_avg) of all the draws: each chain's whole run, median over chains."""
    draws = np.asarray(draws, dtype=float)
    if draws.shape[1] == 0 or not np.all(np.isfinite(draws)):
        return math.nan, math.nan
    b2 = (np.mean(draws ** 2, axis=1) - ex2) ** 2 / var_x2  # (chains, d)
    return float(np.median(b2.max(axis=1))), float(np.median(b2.mean(axis=1)))


def gradients_to_cross(counts, curve, n_draws: int, grads: float, warmup_grads: float,
                       threshold: float = B2_THRESHOLD) -> tuple[float, float]:
    """The gradients after which ``curve`` (m,), b^2 at the draw counts ``counts`` (the median
    over chains, as the tables and figures show it), stays below ``threshold`` for good: (with
    tuning, sampling alone). The sampling gradients are taken as spread evenly over the draws;
    NaN when the curve ends above the threshold."""
    curve = np.asarray(curve, dtype=float)
    if curve.size == 0:
        return math.nan, math.nan
    above = np.nonzero(curve >= threshold)[0]
    last = above[-1] + 1 if above.size else 0
    if last >= counts.size:
        return math.nan, math.nan
    sampling = (grads - warmup_grads) * counts[last] / n_draws
    return warmup_grads + sampling, sampling


def b2_crossing(result, target, reference=None) -> dict:
    """Study metric: the gradients each of b2_max and b2_avg needs to stay below 0.01, tuning
    included (``grads_to_b2_max``, ``grads_to_b2_avg``) and apart (``sampling_grads_to_b2_*``),
    and the curves for the figures (``_arrays``: draw counts, worst and mean b^2 per chain)."""
    nan = {"grads_to_b2_max": math.nan, "grads_to_b2_avg": math.nan,
           "sampling_grads_to_b2_max": math.nan, "sampling_grads_to_b2_avg": math.nan}
    truth = target.truth
    mean = truth.mean if truth is not None and truth.mean is not None else None
    sd = truth.sd if truth is not None and truth.sd is not None else None
    if mean is None and reference is not None:
        mean, sd = np.mean(reference, axis=0), np.std(reference, axis=0)
    if mean is None or result.log_weights is not None or result.draws.shape[1] == 0 \
            or not np.all(np.isfinite(result.draws)):
        return nan
    ex2, var_x2 = scoring_second_moments(target, mean, sd, reference)
    counts, worst, average = b2_curves(result.draws, ex2, var_x2)
    worst, average = np.median(worst, axis=0), np.median(average, axis=0)  # over chains
    n, grads, warm = result.draws.shape[1], result.cost.grad_evals, result.cost.warmup_grad_evals
    out = {}
    for name, curve in (("max", worst), ("avg", average)):
        total, sampling = gradients_to_cross(counts, curve, n, grads, warm)
        out[f"grads_to_b2_{name}"], out[f"sampling_grads_to_b2_{name}"] = total, sampling
    out["_arrays"] = {"b2_counts": counts.astype(float), "b2_max_curve": worst, "b2_avg_curve": average}
    return out
