"""Accuracy and efficiency metrics: pure functions of (result, target).

``evaluate(result, target)`` returns one flat dict (a row of a study table). Every key is
always present; a metric that does not apply is NaN:

=====================  ================================================================
key                    meaning
=====================  ================================================================
n_draws                pooled draws (all chains)
partial                True when the run was interrupted (Ctrl-C): every estimate is of a partial run
grad_evals, ...        the result's cost: grad_evals, logp_evals, wall_seconds, compile_seconds
mean_err_max / _mean   |mean_hat - mean| / sd, max and mean over coordinates (sd units)
sd_err_max / _mean     |sd_hat / sd - 1|, max and mean over coordinates (relative)
w1_max / w1_mean       1-D Wasserstein-1 distance per marginal / sd, worst and mean
sliced_w1              sliced Wasserstein-1 of the joint, on coordinates standardised by sd
log_z_err              result.log_z - truth.log_z (signed), where both exist
log_z_z                log_z_err / result.log_z_se: the error in its own standard errors
mode_weight_err_max    max_k |share of draws nearest peak k - w_k| (mixtures)
ess_bulk_min           min over coordinates of ArviZ's bulk ESS; Kish ESS for weighted draws
ess_tail_min           min tail ESS, ArviZ's convention (NaN for weighted draws)
r_hat_max              max rank-normalised split R-hat (NaN for weighted draws or one chain)
ess_per_second         ess_bulk_min / wall_seconds
ess_per_1k_grad        1000 x ess_bulk_min / grad_evals (NaN when no gradients were used)
b2_max / b2_avg        squared error of the running second moments in units of their
                       variance, worst and mean over coordinates, median over chains (``b2.py``)
lpd_err                held-out log predictive density per point, the method's less the
                       truth's or reference's (targets whose ``identified`` gives one: a BNN)
=====================  ================================================================

A target whose coordinates are not identified but some functions of them are (``identified``:
a BNN's outputs, not its weights) is scored on those functions: every metric above is then of
the quantities (``scored_on`` says so), and ESS and R-hat too.

Mean, sd and the marginal metrics need ``target.truth`` (or ``reference`` draws): NaN
without. The Wasserstein metrics compare against draws from ``truth.sampler`` (or the
given reference draws), so they have a Monte Carlo floor of order 1/sqrt(n) even for
exact draws.

Why sliced Wasserstein for the joint (rather than MMD): it costs O(L n log n) for L
projections (MMD is O(n^2)), handles importance weights directly, has no kernel bandwidth
to choose (MMD's value depends on it), and is in the same units as the marginal W1 (sd
units after standardising), so the two read side by side. It is a distance between the
joint distributions, not only their marginals: a wrong correlation or a missing mode
shows in projections that mix coordinates.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..result import Result
from ..target import Target
from .b2 import final_b2, scoring_second_moments
from .distances import sliced_wasserstein, wasserstein_per_marginal
from .mcmc import ess_and_rhat

FIT_MEAN_ERR_MAX = 0.5
"""A fitted approximation whose mean is further than this (in posterior sds) from the truth or
reference gets a ``fit_warning`` in its row (flag "far from the answer" in the health column)."""

METRIC_KEYS = (
    "n_draws",
    "partial",
    "grad_evals",
    "logp_evals",
    "wall_seconds",
    "compile_seconds",
    "mean_err_max",
    "mean_err_mean",
    "sd_err_max",
    "sd_err_mean",
    "w1_max",
    "w1_mean",
    "sliced_w1",
    "log_z_err",
    "log_z_z",
    "mode_weight_err_max",
    "ess_bulk_min",
    "ess_tail_min",
    "r_hat_max",
    "ess_per_second",
    "ess_per_1k_grad",
    "b2_max",
    "b2_avg",
    "lpd_err",
)

_REFERENCE_FLOATS = 25_000_000  # cap on reference draws x dim (200 MB)


def reference_draws(target: Target, n: int, seed: int = 0) -> np.ndarray | None:
    """Exact draws for the distance metrics (None without an exact sampler).

    Seeded from a stream distinct from every method's chains, so that an ``Exact`` run
    with the same seed is not compared with itself.
    """
    if target.truth is None or target.truth.sampler is None:
        return None
    rng = np.random.default_rng([seed, 0x5EED_4EF])
    return target.truth.sample(n, rng)


def _resample(w: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Indices of ``n`` draws resampled by their weights (for a quantity that takes equal draws)."""
    return np.random.default_rng([seed, 0x1D]).choice(len(w), size=n, p=w / w.sum())


def evaluate(
    result: Result,
    target: Target,
    *,
    reference: np.ndarray | None = None,
    n_reference: int | None = None,
    n_projections: int = 64,
    seed: int = 0,
) -> dict:
    """All metrics of ``result`` against ``target``'s truth, as a flat dict (see module doc).

    Parameters
    ----------
    reference : array (n, d), Reference, False or None
        Draws standing in for the truth (e.g. a long NUTS run): used for the Wasserstein
        metrics and, when the truth has no mean/sd, for those too. None (the default): exact
        draws when the truth has a sampler; else the reference the truth carries
        (``Truth.source == "reference"``); else, for a target without a truth, the target's
        reference posterior (``wb.reference(target)``: loaded from its cache, or run and
        cached), with a warning when it fails posteriordb's standard. False: no reference
        (metrics that need one are NaN). Rows with NaN or inf are left out, with a warning
        and the row's ``reference_warning`` saying how many.
    n_reference : int, optional
        Exact reference draws to generate (default: twice the result's draws, at least
        4,000 and at most 20,000, capped at 200 MB).
    """
    if not isinstance(result, Result):
        raise TypeError(f"evaluate needs a Result (what method.run returns) as result, got {type(result).__name__}")
    if not isinstance(target, Target):
        raise TypeError(f"evaluate needs a workbench Target as target, got {type(target).__name__}")
    if isinstance(n_projections, bool) or not isinstance(n_projections, (int, np.integer)) or n_projections < 1:
        raise ValueError(f"n_projections must be an integer >= 1, got {n_projections!r}")
    if n_reference is not None and (isinstance(n_reference, bool) or not isinstance(n_reference, (int, np.integer))
                                    or n_reference < 1):
        raise ValueError(f"n_reference must be an integer >= 1 (or None), got {n_reference!r}")
    if result.dim != target.dim:
        raise ValueError(f"result has dim {result.dim}, target {target.name!r} has dim {target.dim}")
    row = dict.fromkeys(METRIC_KEYS, math.nan)
    x = result.flat_draws()
    w = result.weights()
    row["n_draws"] = x.shape[0]
    row["partial"] = bool(result.interrupted)  # the health column says "interrupted" too
    for key in ("grad_evals", "logp_evals", "wall_seconds", "compile_seconds"):
        row[key] = getattr(result.cost, key)
    if x.shape[0] == 0:  # e.g. a budget spent in warmup: nothing to score, every metric NaN
        return row

    truth = target.truth
    if reference is None and truth is not None and truth.source == "reference":
        reference = truth.extras.get("reference_draws")
    elif reference is None and truth is None:
        from ..references import reference as target_reference

        reference = target_reference(target)
    if reference is False:
        reference = None
    elif reference is not None and hasattr(reference, "passes"):  # a Reference
        if not reference.passes:
            warnings.warn(f"the reference posterior of {target.name!r} fails posteriordb's standard "
                          f"({reference.why_not}): scores against it are indicative only", UserWarning, stacklevel=2)
        reference = reference.draws
    elif reference is None:
        if n_reference is None:
            n_reference = int(np.clip(2 * x.shape[0], 4000, 20000))
        n_reference = max(500, min(n_reference, _REFERENCE_FLOATS // target.dim))
        reference = reference_draws(target, n_reference, seed)
    else:
        try:
            reference = np.asarray(reference, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"reference must be an array (n, {target.dim}) of draws, a Reference, False or None; "
                             f"got {type(reference).__name__}") from None
        if reference.ndim != 2 or reference.shape[1] != target.dim:
            raise ValueError(f"reference must be (n, {target.dim}), got {reference.shape}")

    if reference is not None:
        bad = ~np.all(np.isfinite(reference), axis=1)
        if bad.all():
            raise ValueError(f"every row of the reference draws for {target.name!r} has NaN or inf: nothing to score against")
        if bad.any():  # one NaN row would turn every metric into NaN without a word
            note = (f"{int(bad.sum())} of {bad.size} reference rows have NaN or inf: left out, the scores use "
                    f"the other {int((~bad).sum())}")
            warnings.warn(f"evaluate on {target.name!r}: {note}", UserWarning, stacklevel=2)
            row["reference_warning"] = note
            reference = reference[~bad]

    true_mean = truth.mean if truth is not None and truth.mean is not None else None
    true_sd = truth.sd if truth is not None and truth.sd is not None else None
    names = target.param_names
    chain_draws = result.draws
    identified = target.identified
    if identified is not None and np.all(np.isfinite(x)):
        # score what the posterior identifies (a BNN's outputs), not its unidentified coordinates
        held_out = identified.held_out_log_density
        if held_out is not None and reference is not None:
            own = x if w is None else x[_resample(w, len(x), seed)]
            row["lpd_err"] = held_out(own) - held_out(reference)
        # once per draw: x is the chains' draws pooled (``Result.flat_draws``), so its quantities
        # are the chains' pooled (a BNN's outputs on 100k draws take 0.7 s)
        chain_draws, names = identified(result.draws), identified.names
        x = chain_draws.reshape(-1, len(names))
        reference = identified(reference) if reference is not None else None
        true_mean = true_sd = None
        row["scored_on"] = "identified quantities: " + (identified.description or ", ".join(names[:3]))
    if true_mean is None and reference is not None:
        true_mean = reference.mean(axis=0)
    if true_sd is None and reference is not None:
        true_sd = reference.std(axis=0)

    finite = np.all(np.isfinite(x))
    if true_mean is not None and true_sd is not None and finite:
        est_mean = np.average(x, axis=0, weights=w)
        est_sd = np.sqrt(np.average((x - est_mean) ** 2, axis=0, weights=w))
        mean_err = np.abs(est_mean - true_mean) / true_sd
        sd_err = np.abs(est_sd / true_sd - 1.0)
        row.update(
            mean_err_max=float(mean_err.max()),
            mean_err_mean=float(mean_err.mean()),
            sd_err_max=float(sd_err.max()),
            sd_err_mean=float(sd_err.mean()),
        )
        if w is None:  # equally weighted draws, per chain
            ex2, var_x2 = scoring_second_moments(target, true_mean, true_sd, reference)
            row["b2_max"], row["b2_avg"] = final_b2(chain_draws, ex2, var_x2)
        if reference is not None:
            w1 = wasserstein_per_marginal(x, reference, w) / true_sd
            row.update(w1_max=float(w1.max()), w1_mean=float(w1.mean()))
            row["sliced_w1"] = sliced_wasserstein(
                (x - true_mean) / true_sd, (reference - true_mean) / true_sd, n_projections, w, seed
            )

    if result.approximation is not None and row["mean_err_max"] > FIT_MEAN_ERR_MAX:
        # a fitted approximation (VI, Laplace) that ends far from the answer is a failure of the
        # method here, whatever its own diagnostics said: the row must say so
        worst = int(np.argmax(mean_err))
        against = "exact posterior" if truth is not None and truth.source == "exact" else "reference"
        row["fit_warning"] = (
            f"far from the answer: the fitted mean of {names[worst]} is {mean_err[worst]:.2f} sd from "
            f"the {against}'s (> {FIT_MEAN_ERR_MAX}); {result.method} failed on this posterior"
        )

    if truth is not None and truth.log_z is not None and result.log_z is not None:
        row["log_z_err"] = float(result.log_z - truth.log_z)
        if result.log_z_se is not None and result.log_z_se > 0:
            row["log_z_z"] = row["log_z_err"] / float(result.log_z_se)

    if truth is not None and "assign_component" in truth.extras and finite:
        comp = truth.extras["assign_component"](x)
        true_w = truth.extras["component_weights"]
        share = np.bincount(comp, weights=w, minlength=true_w.size)
        share = share / share.sum()
        row["mode_weight_err_max"] = float(np.max(np.abs(share - true_w)))

    if finite:
        ess_bulk, ess_tail, rhat = ess_and_rhat(result, chain_draws if identified is not None else None)
        row.update(ess_bulk_min=ess_bulk, ess_tail_min=ess_tail, r_hat_max=rhat)
        if result.cost.wall_seconds > 0:
            row["ess_per_second"] = ess_bulk / result.cost.wall_seconds
        if result.cost.grad_evals > 0:
            row["ess_per_1k_grad"] = 1000.0 * ess_bulk / result.cost.grad_evals
    return row
