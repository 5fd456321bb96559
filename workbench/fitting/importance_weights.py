"""Importance weights of draws under a target, shared by importance sampling and every fitted
approximation that checks itself by them (Laplace, VI, Pathfinder, NN4Post's components):

- the log ratios log w = log p'(x) - log q(x), computed in a compiled kernel on threads, in the
  log domain (nothing overflows in thousands of dimensions), NaN densities counted;
- the log evidence log mean w with its delta-method standard error;
- the Pareto k-hat of the weights and their smoothed form, from ArviZ's PSIS (Vehtari et al.
  2024, "Pareto smoothed importance sampling"; k > 0.7: an estimate from them is unreliable);
- resampling (multinomial or systematic) to equally weighted draws.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

import numpy as np
from numba import types
from scipy.special import logsumexp

from ..jit import C_PROGRESS, C_STOP, INDEX, VEC, target_kernel
from ..running.threads import run_in_threads
from ..target import Target


def _log_ratios(logp_grad, data, draws, logq, out, control):
    """out[i] = log p'(x_i) - log q(x_i), NaN where the density is NaN (the caller counts
    those). Polls ``control`` (Ctrl-C) and counts its progress there; returns the draws done."""
    g = np.empty(draws.shape[1])
    done = 0
    for i in range(draws.shape[0]):
        if control[C_STOP] != 0:
            break
        out[i] = logp_grad(draws[i], g, data) - logq[i]
        done = i + 1
        control[C_PROGRESS] = done
    return done


log_ratios = target_kernel(
    lambda t: types.int64(t.logp_grad, t.data, types.float64[:, ::1], VEC, VEC, INDEX)
)(_log_ratios)


class LogRatios(NamedTuple):
    """What :func:`evaluate_log_ratios` computed: ``values`` (n,) are log p'(x) - log q(x)
    with -inf for NaN densities (weight zero), meaningful where ``evaluated``; a run cut short
    (Ctrl-C, or the density raising: ``error``) evaluated only some draws."""

    values: np.ndarray
    evaluated: np.ndarray  # bool (n,)
    n_nan: int  # draws where the density was NaN (among the evaluated)
    interrupted: bool
    error: BaseException | None

    def nan_message(self) -> str:
        n = int(self.evaluated.sum())
        return (f"NaN density: the target's log density was NaN (or +inf, an overflow) at {self.n_nan} of {n} draws; they get "
                "weight zero (NaN is a fault of the density, not the edge of its support: check where it fails)")


def _proposal_logpdf(proposal, x: np.ndarray) -> np.ndarray:
    logq = np.ascontiguousarray(np.asarray(proposal.logpdf(x), dtype=float).reshape(-1))
    if logq.shape[0] != x.shape[0]:
        raise ValueError(f"the proposal's logpdf returned {logq.shape[0]} values for {x.shape[0]} points")
    if np.any(np.isnan(logq)) or np.any(logq == math.inf):
        raise ValueError("the proposal's logpdf is NaN or +inf at some of its own draws")
    return logq


def evaluate_log_ratios(target: Target, proposal, x: np.ndarray, *, progress=None, threads: int | None = None,
                        description: str = "log ratios") -> LogRatios:
    """log p'(x) - log q(x) for draws x (n, d), on threads in contiguous blocks (the values do
    not depend on how many). Ctrl-C or an exception in the density stops every block and
    keeps what was evaluated; NaN densities are counted and get weight zero."""
    logq = _proposal_logpdf(proposal, x)
    n = x.shape[0]
    x = np.ascontiguousarray(x, dtype=float)
    out = np.full(n, np.nan)
    kernel = log_ratios.for_target(target)
    n_blocks = max(1, min(threads or os.cpu_count() or 1, n // 256))  # at least 256 draws a block
    edges = np.linspace(0, n, n_blocks + 1).astype(int)
    controls = np.zeros((n_blocks, 2), dtype=np.int64)
    errors: dict = {}

    def run_block(b):
        rows = slice(edges[b], edges[b + 1])
        return kernel(target.kernel_logp_grad, target.kernel_data, x[rows], logq[rows], out[rows], controls[b])

    _, interrupted = run_in_threads(run_block, controls, int(np.diff(edges).max()), progress, description,
                                    threads, errors)
    evaluated = np.zeros(n, dtype=bool)
    for b in range(n_blocks):  # each block evaluated a prefix of its rows
        evaluated[edges[b]: edges[b] + controls[b, C_PROGRESS]] = True
    nan = np.isnan(out) & evaluated
    out[nan] = -math.inf
    if np.isposinf(out[evaluated]).any():
        raise ValueError(
            f"{int(np.isposinf(out).sum())} of {n} importance weights are infinite: the proposal's "
            "logpdf is -inf where the target has mass; use a proposal with wider support (heavier tails)"
        )
    error = errors[min(errors)] if errors else None
    return LogRatios(out, evaluated, int(nan.sum()), interrupted, error)


def compute_log_ratios(target: Target, proposal, x: np.ndarray) -> np.ndarray:
    """log p'(x) - log q(x) for draws x (n, d), -inf where the density is NaN, with clear
    errors for a bad proposal; an exception of the density (or Ctrl-C) is raised."""
    ratios = evaluate_log_ratios(target, proposal, x, progress=False)
    if ratios.error is not None:
        raise ratios.error
    if ratios.interrupted:
        raise KeyboardInterrupt
    return ratios.values


def log_evidence(log_w: np.ndarray) -> tuple[float, float]:
    """(log mean w, its delta-method standard error sd(w) / (sqrt(n) mean(w)))."""
    n = log_w.size
    log_z = float(logsumexp(log_w) - math.log(n))
    w = np.exp(log_w - log_w.max())
    se = float(np.std(w, ddof=1) / (math.sqrt(n) * np.mean(w))) if n > 1 else math.inf
    return log_z, se


def pareto_khat(log_w: np.ndarray) -> tuple[np.ndarray, float]:
    """(PSIS-smoothed normalised log weights, k-hat) from ArviZ (note its sign convention)."""
    from arviz_stats.base import array_stats

    finite = np.isfinite(log_w)
    if finite.sum() < 20:  # PSIS fits a tail of 3 sqrt(n) draws: too few here to say anything,
        # unless there were draws enough and most have zero weight: then the weights are degenerate
        return log_w - logsumexp(log_w), math.inf if log_w.size >= 20 else math.nan
    try:
        # psislw is the LOO routine: its input is a log-likelihood, i.e. MINUS the log ratio
        smoothed, khat = array_stats.psislw(-log_w[finite])
    except ValueError:  # all tail values equal: the weights are equal (q == p)
        return log_w - logsumexp(log_w), -math.inf
    out = np.full(log_w.shape, -np.inf)
    out[finite] = smoothed
    khat = float(khat)
    if math.isnan(khat):
        # equal weights have no tail at all; otherwise the tail's weights underflowed to zero
        # beside the largest (log ratios hundreds of nats apart): too degenerate to fit, the worst case
        khat = -math.inf if np.ptp(log_w[finite]) < 1e-12 else math.inf
    return out, khat


def resample(log_w: np.ndarray, n: int, rng: np.random.Generator, method: str = "systematic") -> np.ndarray:
    """Indices of ``n`` draws resampled with probabilities proportional to exp(log_w).

    ``"multinomial"``: n independent categorical draws. ``"systematic"``: one uniform u,
    points (u + k) / n against the cumulative weights; lower variance, same expectation.
    """
    w = np.exp(log_w - np.max(log_w))
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    if method == "multinomial":
        return np.searchsorted(cdf, rng.random(n), side="right")
    if method == "systematic":
        return np.searchsorted(cdf, (rng.random() + np.arange(n)) / n, side="right")
    raise ValueError(f"resampling method must be 'multinomial' or 'systematic', got {method!r}")
