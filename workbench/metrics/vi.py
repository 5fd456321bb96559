"""The quality of a variational fit: its loss measured well (the negative ELBO from fresh
draws, the KL where log Z is known, an importance-sampling estimate of log Z with its Pareto
k-hat), the peak weights of a mixture fit, and the sd shrinkage of mean-field fits."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp


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
    from ..fitting.importance_weights import compute_log_ratios, pareto_khat

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
        arrays.update(trace_iteration=it, trace_neg_elbo=-elbo)
        if "min_c" in result.stats:  # the mixture's smallest weight (NN4Post's fits only)
            arrays["trace_min_c"] = _block_means(result.stats["min_c"], TRACE_POINTS)[1]
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
