"""Importance sampling (self-normalised, with PSIS and resampling) and rejection sampling.

Both draw from a proposal q (any object with ``logpdf`` and ``sample``: a fitted Laplace
or VI approximation, ``wb.approximations.StudentT``, a scipy distribution) and compute the
log ratios log w = log p'(x) - log q(x) in a Numba kernel, in the log domain, so nothing
overflows in thousands of dimensions.

Importance sampling (bayesian-inference-methods-note): with w_i = p'(x_i) / q(x_i),
Z ~ mean(w) (log Z with a delta-method standard error sd(w) / (sqrt(n) mean(w))), and
E_p f ~ sum w_i f(x_i) / sum w_i. Diagnostics: Kish's ESS = (sum w)^2 / sum w^2 and the
Pareto k-hat of the weights from ArviZ's PSIS (k > 0.7: the estimate is unreliable).
Weighted resampling (SIR) turns the weighted draws into equally weighted ones.

Rejection sampling: accept x ~ q with probability p'(x) / (M q(x)). With a true envelope
(M q >= p' everywhere) the accepted draws are exact and Z = M x acceptance rate. M is given,
or estimated from a pilot sample as the largest ratio seen (warned: not a guarantee); a
draw with p'(x) > M q(x) is a violation: counted, warned, and the result is approximate.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numba import types
from scipy.special import logsumexp

from ..approximations import StudentT, check_proposal, draw_from
from ..diagnostics import kish_ess
from ..jit import C_PROGRESS, C_STOP, INDEX, VEC, target_kernel
from ..result import Budget, Result
from ..target import Target
from .base import Method, RunClock, chain_rngs, check_positive_int, density_raised, run_in_threads

PARTIAL_KEEP_SHARE = 0.1
"""A run whose density raised part-way keeps its draws (with a warning) when at least this
share of them was evaluated; with fewer it raises ``DensityError``, as a sampler does when its
density raises before its warmup ends: a handful of draws is not an estimate."""


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


def default_proposal(target: Target) -> StudentT:
    """A wide default: Student-t (df = 3) around the initial point, scale 3 per coordinate."""
    return StudentT(target.initial_point, 9.0 * np.eye(target.dim), df=3.0)


@dataclass(frozen=True)
class ImportanceSampling(Method):
    """Self-normalised importance sampling with any proposal (default: a wide Student-t).

    ``Result.draws`` is (1, n, d) with ``log_weights`` (PSIS-smoothed if ``psis=True``);
    with ``resample="systematic"`` or ``"multinomial"`` it holds n equally weighted draws
    instead (sampling-importance-resampling). ``log_z`` and ``log_z_se`` estimate the
    evidence; ``info`` has Kish's ESS, the Pareto k-hat and the raw log weights.

    The densities are evaluated on ``threads`` (default one per core) with a progress bar
    (``progress``: None shows it on a terminal). A draw where the density is NaN gets weight
    zero and is counted in ``result.messages``; Ctrl-C, or an exception raised by the density,
    stops the run and keeps the draws evaluated before (the message says how many).
    """

    proposal: Any = None
    n: int = 4000
    psis: bool = False
    resample: str | None = None
    progress: bool | None = None
    threads: int | None = None

    def __post_init__(self):
        check_positive_int("n", self.n)
        if self.threads is not None:
            check_positive_int("threads", self.threads)
        if self.proposal is not None:
            check_proposal(self.proposal)
        if self.resample not in (None, "multinomial", "systematic"):
            raise ValueError(f"resample must be None, 'multinomial' or 'systematic', got {self.resample!r}")

    def settings(self) -> dict:
        return {**super().settings(), "proposal": type(self.proposal).__name__ if self.proposal is not None else "default StudentT(df=3)"}

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """The proposal's draws, and their resampled copy."""
        return {"proposal draws": 8 * 2 * self.n * target.dim}

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        rng = chain_rngs(seed, 1)[0]
        proposal = self.proposal if self.proposal is not None else default_proposal(target)
        n = self.n if budget.grad_evals is None else min(self.n, budget.grad_evals)
        clock = RunClock()
        clock.compile(log_ratios, target)
        x = draw_from(proposal, n, rng, target.dim)
        ratios = evaluate_log_ratios(target, proposal, x, progress=self.progress, threads=self.threads,
                                     description=f"{self.name} on {target.name}")
        messages = []
        evaluated = ratios.evaluated
        n_done = int(evaluated.sum())
        if ratios.error is not None or ratios.interrupted:
            why = (f"density raised: {ratios.error!r} from the target's density" if ratios.error is not None
                   else "interrupted by Ctrl-C")
            note = f"{why}; stopped after {n_done} of {n} draws"
            if n_done == 0 and ratios.error is None:
                raise KeyboardInterrupt
            if ratios.error is not None and n_done < PARTIAL_KEEP_SHARE * n:
                # too few draws to be an estimate: lost, as a sampler whose density raises before its
                # warmup ends (the same DensityError, naming the draw and the point)
                at = int(np.argmin(evaluated)) if not evaluated.all() else n_done
                err = density_raised(self.name, target, ratios.error, 0, at + 1, x[min(at, n - 1)], "draw")
                err.add_note(f"{note}: fewer than {PARTIAL_KEEP_SHARE:.0%} of the draws, nothing kept")
                raise err from ratios.error
            messages.append(f"{note}: the estimates use those {n_done}")  # >= 10 %: kept, and said
            warnings.warn(f"{self.name} on {target.name}: {messages[-1]}", RuntimeWarning, stacklevel=3)
        if ratios.n_nan:
            messages.append(ratios.nan_message())
            warnings.warn(f"{self.name} on {target.name}: {messages[-1]}", RuntimeWarning, stacklevel=3)
        x, log_w = x[evaluated], ratios.values[evaluated]
        if not np.isfinite(log_w).any():
            raise ValueError(f"every importance weight is zero: the proposal misses target {target.name!r}"
                             + (f" (the density was NaN at {ratios.n_nan} draws)" if ratios.n_nan else ""))
        log_z, log_z_se = log_evidence(log_w)
        smoothed, khat = pareto_khat(log_w)
        ess = kish_ess(np.exp(log_w - log_w.max()))
        used = smoothed if self.psis else log_w
        if khat > 0.7:
            messages.append(f"Pareto k-hat {khat:.2f} > 0.7: the importance weights are unreliable "
                            f"(their ESS is {ess:.3g} of {n_done:,} draws)")
        if self.resample is not None:
            idx = resample(used, n_done, rng, self.resample)
            draws, result_lw = x[idx][None], None
        else:
            draws, result_lw = x[None], used[None]
        clock.stop()
        return self.result(
            target, seed, draws, clock, grad_evals=n_done,
            log_weights=result_lw,
            log_z=log_z,
            log_z_se=log_z_se,
            messages=messages,
            info={"ess": ess, "ess_fraction": ess / n_done, "pareto_k": khat, "log_ratios": log_w,
                  "proposal": proposal, "nan_density_evals": ratios.n_nan},
            interrupted=bool(ratios.interrupted),
        )


@dataclass(frozen=True)
class RejectionSampling(Method):
    """Rejection sampling from a proposal with envelope M q >= p'.

    ``log_m``: log M, if known. Otherwise it is estimated as the largest log ratio over
    ``pilot`` proposal draws (plus ``pilot_margin``), with a warning that this is not a
    guarantee. Draws until ``n`` are accepted (or ``max_proposals`` are spent).
    ``info`` reports the acceptance rate and the envelope violations seen.
    """

    proposal: Any = None
    n: int = 1000
    log_m: float | None = None
    pilot: int = 10_000
    pilot_margin: float = math.log(1.5)
    max_proposals: int = 10_000_000
    batch: int = 4096

    def __post_init__(self):
        if self.proposal is None:
            raise ValueError("RejectionSampling needs a proposal with logpdf and sample")
        check_proposal(self.proposal)
        check_positive_int("n", self.n)
        check_positive_int("pilot", self.pilot)
        check_positive_int("batch", self.batch)
        if not (self.pilot_margin >= 0 and math.isfinite(self.pilot_margin)):
            raise ValueError(f"pilot_margin must be a finite number >= 0 (added to the pilot's log M), got {self.pilot_margin!r}")
        check_positive_int("max_proposals", self.max_proposals)
        if self.log_m is not None and not math.isfinite(self.log_m):
            raise ValueError(f"log_m must be finite, got {self.log_m!r}")

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        rng = chain_rngs(seed, 1)[0]
        clock = RunClock()
        clock.compile(log_ratios, target)
        n_evals = 0
        messages = []
        log_m = self.log_m
        if log_m is None:
            # the pilot is paid from the budget too: at most a quarter of it
            pilot = self.pilot if budget.grad_evals is None else max(1, min(self.pilot, budget.grad_evals // 4))
            x = draw_from(self.proposal, pilot, rng, target.dim)
            log_m = float(np.max(compute_log_ratios(target, self.proposal, x))) + self.pilot_margin
            n_evals += pilot
            warnings.warn(
                f"RejectionSampling: envelope log M = {log_m:.4g} estimated from {pilot} pilot draws; "
                "this is not a guarantee (a violation makes the result approximate)",
                UserWarning,
                stacklevel=3,
            )
            messages.append("envelope M estimated from a pilot sample (not a guarantee)")
        max_proposals = (self.max_proposals if budget.grad_evals is None
                         else min(self.max_proposals, budget.grad_evals - n_evals))
        accepted, proposed, violations, interrupted = [np.empty((0, target.dim))], 0, 0, False
        while sum(len(a) for a in accepted) < self.n and proposed < max_proposals:
            m = min(self.batch, max_proposals - proposed)
            x = draw_from(self.proposal, m, rng, target.dim)
            ratios = evaluate_log_ratios(target, self.proposal, x, progress=False)
            log_w, done = ratios.values, int(ratios.evaluated.sum())
            x, log_w = x[ratios.evaluated], log_w[ratios.evaluated]
            proposed += done
            violations += int(np.sum(log_w > log_m))
            keep = np.log(rng.random(done)) < log_w - log_m
            accepted.append(x[keep])
            if ratios.error is not None:
                raise ratios.error
            if ratios.interrupted:  # Ctrl-C: keep what was accepted
                interrupted = True
                messages.append(f"interrupted by Ctrl-C after {proposed} proposals")
                break
        n_evals += proposed
        draws = np.concatenate(accepted)[: self.n]
        n_accepted = int(sum(len(a) for a in accepted))
        rate = n_accepted / proposed
        if violations:
            msg = (
                f"{violations} of {proposed} proposals had p'(x) > M q(x): the envelope is violated and "
                "the draws are only approximately from the target"
            )
            warnings.warn(msg, UserWarning, stacklevel=3)
            messages.append(msg)
        if len(draws) < self.n:
            messages.append(f"stopped after {proposed} proposals with {len(draws)} of {self.n} draws accepted")
        if len(draws) == 0:
            if interrupted:
                raise KeyboardInterrupt
            raise ValueError(f"no proposal accepted in {proposed} tries (acceptance rate 0): M is far too large")
        clock.stop()
        se = math.sqrt((1 - rate) / max(n_accepted, 1))  # delta method on log(rate)
        return self.result(
            target, seed, draws[None], clock, grad_evals=n_evals,
            log_z=log_m + math.log(rate),
            log_z_se=se,
            messages=messages,
            info={"acceptance_rate": rate, "violations": violations, "proposals": proposed, "log_m": log_m},
            interrupted=interrupted,
        )
