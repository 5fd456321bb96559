"""What one phase of a phased warmup hands the next (``sampling/flow_metric.py``): the diagonal
metric and step size the chains ended with, or a low-rank metric estimated from every chain's
draws at once, for the next phase to start where the chains are."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..mcmc.adaptation import fisher_metric
from ..mcmc.metric import metric_transform
from ..result import Result


class Resume(NamedTuple):
    """A metric for each chain of a Hamiltonian sampler to go on with (``mcmc.metric.MetricTransform``,
    low-rank or dense) and the step size to start its adaptation from. A phase given one keeps the
    metric and adapts the step size alone in its warmup (``Phases.run(resume=...)``)."""

    transforms: list
    step_sizes: list


def adapted(run: Result, same_metric: bool = False) -> dict:
    """What a phase's warmup adapted, for the next phase to start from where the chains are: the
    diagonal metric each chain ended with and their median step size (a phase started from the
    identity metric and a fresh step-size search sent its first proposals far out: on a regression
    whose coefficients' scales span orders of magnitude, to where the density underflowed). With
    ``same_metric`` (the next phase samples with the same diagonal metric), the target acceptance
    its divergences raised too (``NUTS(adapt_target=True)``): a short last warmup has no time to
    learn it again (non-centred eight schools: 18 of 20 seeds pass posteriordb's standard with it,
    8 of 20 without). Under another metric the divergences of the diagonal one do not carry over
    (the diabetes regression's low-rank phase lost half its ESS per gradient at the raised target)."""
    out = {}
    inv_mass = run.info.get("inv_mass")
    if inv_mass is not None and np.all(np.isfinite(inv_mass)) and np.all(np.asarray(inv_mass) > 0):
        out["inv_metric"] = np.asarray(inv_mass, dtype=float)
    steps = [s for s in run.info.get("step_size", []) if math.isfinite(s) and s > 0]
    if steps:
        out["step_size"] = float(np.median(steps))
    raised = run.info.get("target_accept_raised_to") if same_metric else None
    if raised:
        out["target_accept"] = float(max(raised))
    return out


def pooled_low_rank(draws: np.ndarray, grads: np.ndarray, chains: int, step_size: float, gamma: float,
                    cutoff: float, max_rank: int | None = None) -> Resume | None:
    """The diagonal-plus-low-rank metric of Seyboldt, Carlson and Carpenter (2026), estimated once
    from the draws (n, d) of every chain and their gradients (``adaptation.fisher_metric``), for each
    chain to go on with; None when the estimate is unusable. Every chain's draws at once: a chain's
    own windows hold a few dozen draws (``adaptation``'s schedule), the first phase's draws pooled
    hold hundreds, and the metric they give needs no windows of its own."""
    n, d = draws.shape
    rank = min(d, 2 * n) if max_rank is None else min(max_rank, d)
    transform = metric_transform(d, rank)
    k = fisher_metric(np.ascontiguousarray(draws, dtype=float), np.ascontiguousarray(grads, dtype=float), gamma,
                      cutoff, rank, transform.sigma, transform.vecs, transform.sqrt_vals)
    if k < 0 or not np.all(np.isfinite(transform.sigma)) or not np.all(transform.sigma > 0):
        return None
    transform.rank[0] = k
    return Resume([transform] * chains, [float(step_size)] * chains)  # the phase copies each chain's
