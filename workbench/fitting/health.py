"""What every VI method says about its fit: how it stopped (the ELBO's slope when a budget or
step count ended it first), the steps it rejected, and the Pareto k-hat of q against the
target (Yao, Vehtari, Simpson and Gelman 2018), with the draws that check costs kept back from
the budget, and ``psis=True``'s importance-resampled draws. Shared by NN4Post/MeanFieldVI,
FullRankVI, DADVI and BatchAndMatch.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..diagnostics import kish_ess
from ..errors import WorkbenchError
from ..result import Budget, Result
from ..running.peaks import approximation_peaks, peak_reserve
from ..target import Target
from ..vi import fit as F
from .importance_weights import compute_log_ratios, pareto_khat, resample

PARETO_K_GOOD = 0.7
PARETO_K_OK = 0.5  # Yao et al. (2018, sec. 3): below, q is good; 0.5-0.7, usable with importance weights
PSIS_MIN_DRAWS = 100
DEFAULT_STEPS = 5000


class VIDivergenceError(WorkbenchError, FloatingPointError):
    """The loss or a parameter became NaN or infinite. ``iteration`` says when; ``result``
    holds the fit with the last finite parameters (nothing is lost)."""

    def __init__(self, message, iteration, result):
        super().__init__(message)
        self.iteration = iteration
        self.result = result


def _tail_length(n: int) -> int:
    """How many of the last ELBO values the convergence check reads: a fifth, 50 to 2,000."""
    return int(min(n, max(50, min(2000, n // 5))))


def elbo_slope(elbo: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of the ELBO trace's tail (per 1,000 steps) and its t statistic."""
    n = _tail_length(len(elbo))
    if n < 10:
        return math.nan, math.nan
    y = np.asarray(elbo[-n:], dtype=float)
    if not np.all(np.isfinite(y)) or np.abs(y).max() > 1e150:  # a trace this wild has no slope to report
        return math.nan, math.nan
    x = np.arange(n, dtype=float)
    x -= x.mean()
    slope = float(x @ (y - y.mean()) / (x @ x))
    resid = y - y.mean() - slope * x
    se = float(np.sqrt(resid @ resid / (n - 2) / (x @ x)))
    if se > 0:
        return 1000.0 * slope, slope / se
    return 1000.0 * slope, (math.copysign(math.inf, slope) if slope != 0 else 0.0)  # an exactly flat tail: t = 0


def not_converged(elbo, slope: float, slope_t: float, tol: float) -> bool:
    """The ELBO still rises, clearly (t > 3) and by more than the stopping rule's tolerance over the tail."""
    if not (math.isfinite(slope) and slope_t > 3):
        return False
    rise = slope / 1000.0 * _tail_length(len(elbo))
    return rise > max(0.01, tol * (1.0 + abs(float(np.mean(elbo[-_tail_length(len(elbo)):])))))


def fit_messages(elbo: np.ndarray, status: int, tol: float, window: int | None = None) -> tuple[list[str], dict]:
    """What a VI fit says about how it stopped: the status line, and a warning when it
    stopped on its budget or step count while its ELBO was still rising, or when the budget
    ended it before its stopping rule (means over windows of ``window`` steps, compared) had two
    windows to judge by; with the slope numbers for ``result.info``."""
    n = len(elbo)
    messages = {
        F.STATUS_CONVERGED: [f"stopped at step {n}: the ELBO's running mean stopped improving "
                             "(and the learning rate was then annealed to its final value)"],
        F.STATUS_BUDGET: [f"gradient budget spent after {n} steps"],
        F.STATUS_STOPPED: [f"interrupted after {n} steps"],
    }.get(status, [])
    slope, slope_t = elbo_slope(elbo)
    if status == F.STATUS_BUDGET and window is not None and n < 2 * window:
        messages.append(
            f"not converged: the gradient budget ended the fit after {n} steps, before its stopping rule "
            f"(the ELBO's mean over windows of {window} steps) could judge it; give more budget"
        )
    elif status in (F.STATUS_BUDGET, F.STATUS_STEPS) and not_converged(elbo, slope, slope_t, tol):
        messages.append(
            f"not converged: the ELBO was still rising by {slope:.3g} per 1,000 steps over the last "
            f"{_tail_length(n)} of {n} steps (t = {slope_t:.1f}) when the "
            f"{'gradient budget' if status == F.STATUS_BUDGET else 'step count'} ended; give more steps or budget"
        )
    return messages, {"elbo_slope_per_1k_steps": slope, "elbo_slope_t": slope_t}


def note_rejected_steps(result: Result, rejected: int) -> None:
    """Record the steps a fit rejected (draws where the density was NaN or -inf, or an
    overflowing update; each halved the rate) in ``info`` and say so; and, where the fit
    counts them (``stats["skipped_draws"]``), the draws left out of accepted steps, with the
    share of q's draws they were: about that share of q's mass lies where p is not finite."""
    result.info["rejected_steps"] = int(rejected)
    if rejected:
        result.messages.append(
            f"{rejected} step(s) rejected: draws of q met a NaN or -inf density (or the update overflowed); "
            "each halved the learning rate, which came back over the next ten accepted steps"
        )
    skipped = result.stats.get("skipped_draws")
    if skipped is not None and np.size(skipped) and skipped.sum() > 0:
        total = int(skipped.sum())
        drawn = max(1, int(result.info.get("draws_per_step", 0)) * int(np.size(skipped)))
        share = total / drawn if drawn > 1 else float("nan")
        result.info["skipped_draws"] = total
        result.messages.append(
            f"{total} draws of q ({share:.1%} of the accepted steps' draws) met a NaN or -inf density and were "
            "left out of their steps' estimates: about that share of q's mass lies where the target is not finite"
        )


KHAT_DRAWS = 1000
"""Draws of q the Pareto k-hat check evaluates the target at (each one density and gradient
call, paid from the run's budget: at most a tenth of it)."""
KHAT_MIN_DRAWS = 100


def khat_reserve(budget: Budget) -> int:
    """The evaluations a VI fit keeps back from its budget for the k-hat check: ``KHAT_DRAWS``,
    at most a tenth of the budget, none when that is below ``KHAT_MIN_DRAWS``."""
    if budget.grad_evals is None:
        return KHAT_DRAWS
    n = min(KHAT_DRAWS, budget.grad_evals // 10)
    return n if n >= KHAT_MIN_DRAWS else 0


def without_reserve(budget: Budget, reserve: int) -> Budget:
    """The budget the fit itself may spend."""
    if budget.grad_evals is None or reserve == 0:
        return budget
    return dataclasses.replace(budget, grad_evals=budget.grad_evals - reserve)


def pareto_check(target: Target, approx, draws: np.ndarray, n: int = KHAT_DRAWS) -> tuple[float, list[str], int]:
    """The Pareto k-hat of q against the target from the first ``n`` of q's draws (Yao et al.
    2018; ArviZ's PSIS), with a warning above 0.7. Returns (k-hat, messages, density
    evaluations spent: one per draw); with ``n`` below ``KHAT_MIN_DRAWS`` nothing is evaluated
    and k-hat is NaN."""
    draws = draws[:n]
    if len(draws) < KHAT_MIN_DRAWS:
        return math.nan, [f"Pareto k-hat not computed: the budget leaves fewer than {KHAT_MIN_DRAWS} evaluations "
                          "for it (a tenth of the budget is kept for it)"], 0
    log_r = compute_log_ratios(target, approx, draws)
    khat = pareto_khat(log_r)[1]
    # q's own draws weighted toward p: where they move a mean, q sits off the posterior though
    # k-hat is fine (a mixture whose components sit on every peak in the wrong shares)
    outside = outside_support_message(log_r) + (
        mean_shift_message(weighted_mean_shift(draws, log_r), target.param_names, khat) if np.isfinite(log_r).any() else [])
    if khat > PARETO_K_GOOD:
        return khat, [
            f"Pareto k-hat of q against the target is {khat:.2f} > {PARETO_K_GOOD}: q misses mass of the "
            "posterior (its tails are too light, a mode is missing, or the posterior is a funnel); "
            "importance-correct it or trust it less"
        ] + outside, len(draws)
    if khat > PARETO_K_OK:
        return khat, [
            f"Pareto k-hat of q against the target is {khat:.2f}, between {PARETO_K_OK} and {PARETO_K_GOOD}: q is "
            "usable with importance weights (psis=True), its own moments less so"
        ] + outside, len(draws)
    return khat, outside, len(draws)


def outside_support_message(log_r: np.ndarray) -> list[str]:
    """A health message (flag "NaN density") when some of the fitted q's draws lie where the
    target's log density is NaN or -inf (their log ratio is -inf): that share of q's mass is
    outside the posterior's support, and q's own draws include such points."""
    n = int(np.size(log_r))
    outside = int(np.sum(~(log_r > -np.inf)))
    if not outside:
        return []
    return [f"NaN density: {outside} of {n:,} draws of the fitted q ({outside / n:.1%}) lie where the target's "
            "log density is NaN or -inf: about that share of q's mass is outside the posterior's support, and "
            "q's own draws include such points (psis=True gives them weight 0)"]


# Where the importance weights p / q move a coordinate's mean by more than this many of q's sds,
# q sits off the posterior there, though k-hat may not say so: measured on Pathfinder's single
# path on log-log regressions, whose noise scale's Gaussian sits at the joint mode, 0.9 sd from
# the posterior mean, with k-hat 0.5-0.6 (the flag's rates are in docs/methods.md).
MEAN_SHIFT_FLAG = 0.3


def weighted_mean_shift(draws: np.ndarray, log_r: np.ndarray) -> np.ndarray:
    """Per coordinate, how far the Pareto-smoothed importance weights p / q move the mean of
    q's ``draws``, in units of their sd: an estimate of q's bias that needs no truth, as good
    as the weights are (k-hat below 0.7). Zero where the weights are equal."""
    smoothed, _ = pareto_khat(log_r)
    finite = np.isfinite(smoothed)
    x = draws[finite]
    w = np.exp(smoothed[finite] - smoothed[finite].max())
    w /= w.sum()
    sd = x.std(axis=0)
    return np.where(sd > 0, (w @ x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)


def mean_shift_message(shift: np.ndarray, names, khat: float) -> list[str]:
    """The warning when the weights move a mean by more than ``MEAN_SHIFT_FLAG`` sd (only when
    they can be trusted, k-hat <= 0.7: above, the k-hat warning says more)."""
    if not khat <= PARETO_K_GOOD or not len(shift) or np.abs(shift).max() <= MEAN_SHIFT_FLAG:
        return []
    j = int(np.argmax(np.abs(shift)))
    return [f"weights move the mean: importance weights p / q move the mean of {names[j]} by {shift[j]:+.2f} of "
            f"q's sd (k-hat {khat:.2f}, so the weights are usable): q sits off the posterior there; "
            "importance-resample its draws (psis=True, or Pathfinder(paths=4)) or trust that coordinate less"]


def apply_psis(target: Target, result: Result, seed: int, budget: Budget) -> None:
    """``psis=True`` of the VI methods: replace ``result.draws`` (draws of q) by the same number
    of draws importance-resampled with Pareto-smoothed weights p / q (Yao et al. 2018, sec. 4;
    ArviZ's PSIS), so a user sees how much weighting rescues the fit. Costs one density
    evaluation per draw, counted, and within the budget: fewer draws are weighted when the
    budget has not that many left (none below ``PSIS_MIN_DRAWS``, with a message)."""
    x = result.flat_draws()
    n = len(x)
    if budget.grad_evals is not None:
        n = min(n, max(budget.grad_evals - result.cost.grad_evals, 0))
    if n < PSIS_MIN_DRAWS:
        result.messages.append(f"psis: not applied, the budget leaves {n} evaluations (fewer than {PSIS_MIN_DRAWS})")
        return
    x = x[:n]
    log_r = compute_log_ratios(target, result.approximation, x)
    smoothed, khat = pareto_khat(log_r)
    chains = result.draws.shape[0]
    per_chain = n // chains
    idx = resample(smoothed, per_chain * chains, np.random.default_rng([seed, 0x9515]))
    result.draws = np.ascontiguousarray(x[idx].reshape(chains, per_chain, x.shape[1]))
    result.cost = dataclasses.replace(result.cost, grad_evals=result.cost.grad_evals + n,
                                      logp_evals=result.cost.logp_evals + n)
    finite = np.isfinite(smoothed)
    ess = kish_ess(np.exp(smoothed[finite] - smoothed[finite].max())) if finite.any() else 0.0
    result.info["psis"] = {"khat": float(khat), "ess": float(ess), "evaluations": int(n)}
    rescued = "the weights cannot rescue q: read its draws with care" if khat > PARETO_K_GOOD else \
        "the weighted draws correct q"
    result.messages.append(f"psis: the draws are {per_chain * chains} draws of q resampled by Pareto-smoothed "
                           f"weights p / q (k-hat {khat:.2f}, ESS {ess:.0f} of {n}); {rescued}")


def funnel_message(khat: float, above: float = PARETO_K_GOOD, converged: bool = True) -> list[str]:
    """When no mode was found (log p unbounded as a scale goes to 0) and the fit misses mass
    (k-hat above ``above``): the hierarchical funnel, which no Gaussian or mixture of a few
    fits. Empty otherwise. A fit that had not ``converged`` is not blamed on the family: the
    first cause measured is that it stopped early, and the funnel is only a suspicion."""
    if not khat > above:
        return []
    if not converged:
        return [
            f"possibly a funnel: no mode was found and k-hat is {khat:.2f}, but the fit stopped before it "
            "converged (see 'not converged'), so that comes first: give it more steps or budget; if k-hat stays "
            "high once it converges, the posterior is a hierarchical funnel this family cannot fit"
        ]
    return [
        f"funnel: no mode was found and k-hat is {khat:.2f}: the posterior looks like a hierarchical funnel "
        "(log p grows without bound as a group scale goes to 0), which this family cannot fit, so the fit "
        "has failed here; a non-centred parametrisation is the cure, or NUTS with a high target_accept"
    ]


# a fit whose ELBO ends this far below its best window's (or its start's), in nats (at least 1% of
# the ELBO), ran away: it was at a better q and left it (the natural-gradient steps on a centred
# stochastic-volatility posterior, from a start far from the bulk, went to 54 sds of sigma)
RUNAWAY_NATS = 10.0


def best_window_elbo(elbo: np.ndarray, window: int) -> float:
    """The highest mean of ELBO estimates over consecutive blocks of ``window`` steps, the last
    block counted back from the end (-inf for an empty trace). Block by block, not by a running
    sum: a fit's first ELBOs can be 10^74, and a cumulative sum loses every later digit to them."""
    e = np.asarray(elbo, dtype=float)
    e = e[np.isfinite(e)]
    if len(e) == 0:
        return -math.inf
    w = max(1, min(window, len(e)))
    blocks = e[len(e) % w:].reshape(-1, w)
    return float(np.max(blocks.mean(axis=1)))


def ran_away(final_elbo: float, best_elbo: float) -> bool:
    """Whether a fit ended far below an ELBO it had (its best window's, or its start's)."""
    if not math.isfinite(final_elbo):
        return True
    return math.isfinite(best_elbo) and final_elbo < best_elbo - max(RUNAWAY_NATS, 0.01 * abs(best_elbo))


def diverged_message(final_elbo: float, best_elbo: float, what: str) -> str:
    if not math.isfinite(final_elbo):
        return f"diverged: the fit's parameters or ELBO became NaN or infinite; {what}"
    return (f"diverged: the fit ran away (its ELBO ended at {final_elbo:.4g}, below the {best_elbo:.4g} it had "
            f"reached); {what}")


def not_converged_first(messages: list[str]) -> list[str]:
    """The messages with a 'not converged' warning moved to the front: the first cause measured
    is the one a reader should meet first (k-hat and the funnel follow from it)."""
    first = [m for m in messages if m.startswith("not converged")]
    return first + [m for m in messages if not m.startswith("not converged")]


class PSISResampled:
    """Mixin of the VI methods: the fit within its budget less a reserve, then the search for
    peaks q missed (``peaks.approximation_peaks``) in that reserve, then, with a ``psis`` setting,
    :func:`apply_psis`."""

    def run(self, target, seed=None, grad_budget=None, *, budget=None):
        full = budget if budget is not None else Budget(grad_evals=grad_budget)
        if grad_budget is not None and budget is not None:
            full = dataclasses.replace(budget, grad_evals=grad_budget)
        reserve = peak_reserve(target, full)
        fit_budget = full if full.grad_evals is None else dataclasses.replace(full, grad_evals=full.grad_evals - reserve)
        result = super().run(target, seed, budget=fit_budget)
        if not result.interrupted and result.approximation is not None:
            add_peaks_check(target, result, reserve)
        if getattr(self, "psis", False) and not result.interrupted and result.approximation is not None:
            apply_psis(target, result, result.seed, full)
        return result


def add_peaks_check(target: Target, result: Result, limit: int) -> None:
    """The search for peaks q's draws miss, its messages and gradients added to ``result``."""
    messages, spent = approximation_peaks(target, result.draws, result.seed, limit)
    result.messages.extend(messages)
    if spent:
        result.info["peaks_grad_evals"] = spent
        result.cost = dataclasses.replace(result.cost, grad_evals=result.cost.grad_evals + spent,
                                          logp_evals=result.cost.logp_evals + spent)
