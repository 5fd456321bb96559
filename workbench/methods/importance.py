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
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..approximations import StudentT, check_proposal, draw_from
from ..diagnostics import kish_ess
from ..fitting.importance_weights import compute_log_ratios, evaluate_log_ratios, log_evidence, log_ratios, pareto_khat, resample
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.faults import density_raised
from ..running.method import Examples, Method
from ..running.validation import check_positive_int
from ..target import Target

PARTIAL_KEEP_SHARE = 0.1
"""A run whose density raised part-way keeps its draws (with a warning) when at least this
share of them was evaluated; with fewer it raises ``DensityError``, as a sampler does when its
density raises before its warmup ends: a handful of draws is not an estimate."""


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

    family = "importance and SMC"
    colour, marker = "#D55E00", "D"
    examples = Examples(quick={"n": 5000}, budget=2000, long={"n": 10**6})

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
        proposal = type(self.proposal).__name__ if self.proposal is not None else "default StudentT(df=3)"
        return {**super().settings(), "proposal": proposal}

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

    family = "importance and SMC"
    colour, marker = "#CC79A7", "P"
    examples = Examples(quick={"n": 3000}, budget=2000, long={"n": 10**6, "log_m": 3.0})

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
