"""``FullRankVI``: a full-covariance Gaussian fitted by the reparameterised ELBO (ADVI's
full-rank family, Kucukelbir et al. 2017). The kernels are ``workbench/vi/natural_gradient.py``
(the default optimiser) and ``workbench/vi/full_rank.py`` (Adam)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .. import modes as M
from ..approximations import Gaussian
from ..density_faults import original
from ..errors import BudgetTooSmallError
from ..fitting.health import (
    DEFAULT_STEPS,
    PARETO_K_OK,
    RUNAWAY_NATS,
    PSISResampled,
    VIDivergenceError,
    best_window_elbo,
    diverged_message,
    fit_messages,
    funnel_message,
    khat_reserve,
    not_converged_first,
    note_rejected_steps,
    pareto_check,
    ran_away,
    without_reserve,
)
from ..jit import C_PROGRESS
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.faults import density_raised
from ..running.method import Examples, Method
from ..running.threads import one_blas_thread, run_in_threads
from ..running.validation import check_positive, check_positive_int
from ..target import Target
from ..vi import fit as F
from ..vi import full_rank as FR
from ..vi import natural_gradient as NG
from .pathfinder import pathfinder_start

INITS = ("laplace", "mode", "point")
OPTIMIZERS = ("natural", "adam")
NATURAL_RATE, NATURAL_RATE_FINAL = 0.1, 0.01
ADAM_RATE_FINAL = 0.1
# The natural-gradient fit's step cap without a budget. Its stopping rule ends it sooner (when
# the ELBO and the mean have both stopped moving); a 103-d stochastic-volatility posterior needs
# 8,000-15,000 steps to come within 0.04 reference sds of the family's optimum, 5,000 left it
# 0.12-0.16 away.
NATURAL_STEPS = 20_000


@dataclass(frozen=True)
class FullRankVI(PSISResampled, Method):
    """Full-rank Gaussian VI: q = N(mu, L L^T), L lower triangular with a positive diagonal.

    Parameters
    ----------
    steps : optimisation steps; None (default) gives 20,000 ("natural") or 5,000 ("adam"), or
        under a gradient budget as many as the budget pays for (the stopping rule ends the fit
        sooner when it has converged).
    samples : reparameterised draws per step (each one gradient).
    optimizer : "natural" (default): natural-gradient steps inside a KL trust region (Tan 2021,
        eq. 7; ``workbench/vi/natural_gradient.py``), which do not depend on the posterior's
        scales or correlations. "adam": Adam with each coordinate's steps in units of its
        marginal sd (``workbench/vi/full_rank.py``). On a 103-d stochastic-volatility posterior
        "natural" ends within 0.03-0.05 reference sds of the family's optimum (found by L-BFGS
        on 4,000 fixed draws) in its worst mean, in 10,000-15,000 steps; 5,000 steps of "adam"
        from the same start end 1.4 nats below that optimum, 1.2 posterior sds off. On a
        Bayesian neural network the ELBOs were -25 and -64; on Gaussians and regressions the
        two are level within 0.3 nats, "natural" ahead.
    learning_rate : the step's rate. "natural": the fraction of the natural-gradient step, None
        giving 0.1 (the trust region cuts it where the gradients are large). "adam": in units
        of each coordinate's current marginal sd, None giving min(0.05, sqrt(2 / P)) for
        P = d (d + 3) / 2 free parameters (Adam's steps at a noisy optimum jitter every
        parameter by about the rate, which costs about P rate^2 / 2 nats of KL).
    lr_final : the ratio the rate decays to, exponentially over the steps; None gives 0.01
        ("natural") or 0.1 ("adam").
    init : "laplace" (default): L-BFGS from the target's initial point to a mode, and L the
        Cholesky factor of the Laplace covariance (-H)^-1 there (the target's Hessian, or
        central differences of its gradient: 2 d gradients; up to d = 500, above which, and
        where -H is not positive definite, the diagonal of "mode"). On a near-Gaussian
        posterior the fit then starts close to its optimum, and the ELBO corrects what the
        curvature at the mode gets wrong. "mode": the same mode with L the diagonal of its
        mean-field sds 1 / sqrt(-H_jj) (the start ``MeanFieldVI`` takes from its first mode).
        "point": the initial point with L = ``init_scale`` I (ADVI's start). Every gradient of
        the start is counted. ``init_from`` overrides all three: any object with ``mean`` and
        ``cov`` (a Laplace or Pathfinder fit, or a result holding one).
    converge_window, converge_patience, converge_tol : the stopping rule
        (``workbench/vi/stopping.py``); tol = 0 switches it off.
    draws, chains : draws from q returned as ``Result.draws``.

    ``result.approximation`` is a :class:`~workbench.approximations.Gaussian` (analytic
    marginals); ``result.log_z`` is the ELBO (a lower bound on log Z, mean of the last
    window); ``result.stats`` holds the traces (ELBO, rate, gradient norms); the Pareto k-hat
    of q against the target is in ``result.info["pareto_k"]``, with a warning above 0.7.
    """

    family = "VI"
    colour, marker = "#117733", ">"
    examples = Examples(quick={"steps": 2000, "draws": 300}, budget=3000, long={"steps": 10**6, "init": "point"})

    steps: int | None = None
    samples: int = 10
    optimizer: str = "natural"
    learning_rate: float | None = None
    lr_final: float | None = None
    init: str = "laplace"
    init_scale: float = 1.0
    init_from: Any = None
    converge_window: int = 200
    converge_patience: int = 5
    converge_tol: float = 1e-4
    draws: int = 4000
    psis: bool = False
    chains: int = 1
    progress: bool | None = None

    def __post_init__(self):
        if self.steps is not None:
            check_positive_int("steps", self.steps)
        check_positive_int("samples", self.samples)
        check_positive_int("draws", self.draws)
        check_positive_int("chains", self.chains)
        check_positive_int("converge_window", self.converge_window)
        check_positive_int("converge_patience", self.converge_patience)
        check_positive("learning_rate", self.learning_rate, allow_none=True)
        check_positive("init_scale", self.init_scale)
        if self.lr_final is not None and not (0 < self.lr_final <= 1):
            raise ValueError(f"lr_final must lie in (0, 1] or be None, got {self.lr_final!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {list(OPTIMIZERS)}, got {self.optimizer!r}")
        if not (self.converge_tol >= 0 and math.isfinite(self.converge_tol)):
            raise ValueError(f"converge_tol must be >= 0 and finite (0 switches the rule off), got {self.converge_tol!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {list(INITS)}, got {self.init!r}")
        if self.init_from is not None:
            approx = getattr(self.init_from, "approximation", self.init_from)
            if not (hasattr(approx, "mean") and hasattr(approx, "cov")):
                raise ValueError(
                    f"init_from must have a mean and a cov (a Laplace or Pathfinder fit), got {type(self.init_from).__name__}"
                )

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """The d (d + 1) parameters, about ten vectors of them in the fit, and the covariance."""
        d = target.dim
        return {"draws": 8 * self.chains * self.draws * d, "fit (d^2 parameters)": 8 * 11 * d * (d + 1)}

    def rate(self, dim: int) -> float:
        """The learning rate: the one given, else 0.1 ("natural") or min(0.05, sqrt(2 / P)),
        P = d (d + 3) / 2 ("adam")."""
        if self.learning_rate is not None:
            return float(self.learning_rate)
        if self.optimizer == "natural":
            return NATURAL_RATE
        return min(0.05, math.sqrt(2.0 / (dim * (dim + 3) / 2)))

    def rate_final(self) -> float:
        """The ratio the rate decays to: the one given, else 0.01 ("natural") or 0.1 ("adam")."""
        if self.lr_final is not None:
            return float(self.lr_final)
        return NATURAL_RATE_FINAL if self.optimizer == "natural" else ADAM_RATE_FINAL

    def _start(self, target: Target, seed: int, budget: Budget) -> tuple[np.ndarray, np.ndarray, int, str | None]:
        """(mean, Cholesky factor, gradients spent, message) of the start."""
        d = target.dim
        if self.init_from is not None:
            approx = getattr(self.init_from, "approximation", self.init_from)
            mean = np.asarray(approx.mean, dtype=float).ravel()
            cov = np.asarray(approx.cov, dtype=float)
            if mean.shape != (d,) or cov.shape != (d, d):
                raise ValueError(f"init_from has dimension {mean.size}, the target {target.name!r} has {d}")
            return mean, np.linalg.cholesky(0.5 * (cov + cov.T)), 0, None
        if self.init == "point":
            target.check_point(target.initial_point)
            return target.initial_point.copy(), self.init_scale * np.eye(d), 1, None
        needed = M.min_grad_evals(d)
        if budget.grad_evals is not None and budget.grad_evals < 2 * needed:
            raise BudgetTooSmallError(
                f"grad_budget={budget.grad_evals} is too small for init={self.init!r} on {target.name!r} (d={d}): "
                f"the ascent to the mode needs up to {needed} gradient evaluations and the fit as many again; "
                f"give grad_budget >= {2 * needed} or init='point'"
            )
        rng = M.search_rng(seed)
        with one_blas_thread():  # L-BFGS-B's small BLAS calls
            search = M.find_modes(target, rng, starts=0, max_grad_evals=needed)
        mode = search.modes[0]
        if search.fallback:
            # no mode (a hierarchical posterior, or an ascent cut short): where the ascent stopped
            # lies down a funnel's neck; the initial point with unit scales is the start (and the
            # fit is checked against Pathfinder's Gaussian after it: _run)
            return (target.initial_point.copy(), np.eye(d), search.grad_evals,
                    f"{NO_MODE}; started from the initial point with unit scales ({search.grad_evals} gradients)")
        message = f"started at a mode found by L-BFGS ({search.grad_evals} gradients)"
        chol, spent = np.diag(mode.sd), search.grad_evals
        if self.init == "laplace" and d <= M.FULL_HESSIAN_MAX_DIM:
            hess, used = M.curvature(target, mode.x)
            spent += used
            try:
                chol = np.linalg.cholesky(np.linalg.inv(-hess))
                message = f"started at the Laplace approximation of a mode found by L-BFGS ({spent} gradients)"
            except np.linalg.LinAlgError:
                message += "; -H is not positive definite there: the start is its mean-field diagonal"
        return mode.x.copy(), chol, spent, message

    def _fit(self, target: Target, kernel, mean, chol, rng, steps: int, fit_budget: int, rate: float) -> Fit:
        """One fit from (mean, chol): the kernel on a thread, with Ctrl-C and a progress bar."""
        d = target.dim
        params = FR.pack(mean, chol)
        if not np.all(np.isfinite(params)):
            raise ValueError(f"{self.name}: the initial parameters are not finite (check init_from / init_scale)")
        state = FR.new_state(params.size)
        average = np.empty_like(params)
        traces = np.zeros((steps, len(FR.TRACE_NAMES)))
        controls = np.zeros((1, 2), dtype=np.int64)

        def run_one(_):
            try:
                return kernel(target.kernel_logp_grad, target.kernel_data, params, rng, steps, self.samples, fit_budget,
                              self.converge_window, self.converge_patience, rate, self.rate_final(),
                              self.converge_tol, state, average, traces, controls[0])
            except Exception as exc:  # the user's density raised inside the fit
                raise density_raised(self.name, target, exc, 0, int(controls[0, C_PROGRESS]) + 1, params[:d],
                                     "fit") from original(exc)

        (out,), interrupted = run_in_threads(run_one, controls, steps, self.progress, f"{self.name} on {target.name}")
        done, n_grad, status, rejected = out
        # the running average of the iterates (the last finite iterate when the fit diverged)
        return Fit(params if status == F.STATUS_NONFINITE else average, traces[:done], int(done), int(n_grad),
                   int(status), int(rejected), bool(interrupted))

    def _steps(self, budget: Budget, spent: int) -> tuple[int, int, bool]:
        """(steps, the fit's gradient budget or -1, whether the budget set the steps)."""
        steps = budget.steps if budget.steps is not None else self.steps
        if steps is None and budget.grad_evals is None:
            steps = NATURAL_STEPS if self.optimizer == "natural" else DEFAULT_STEPS
        fit_budget = -1 if budget.grad_evals is None else max(budget.grad_evals - spent, 0)
        budget_cut = False
        if fit_budget >= 0:
            affordable = max(1, fit_budget // self.samples)
            budget_cut = steps is None or affordable < steps
            steps = affordable if steps is None else min(steps, affordable)
        return steps, fit_budget, budget_cut

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        khat_draws = khat_reserve(budget)
        budget = without_reserve(budget, khat_draws)
        clock = RunClock()
        d = target.dim
        kernel = clock.compile(NG.full_rank_natural_kernel if self.optimizer == "natural" else FR.full_rank_kernel, target)
        mean, chol, start_grads, start_message = self._start(target, seed, budget)
        rng = chain_rngs(seed, 1)[0]
        steps, fit_budget, budget_cut = self._steps(budget, start_grads)
        fit = self._fit(target, kernel, mean, chol, rng, steps, fit_budget, self.rate(d))
        spent, retry_message = start_grads + fit.grad_evals, None
        final, best = _final_elbo(fit, self.converge_window), best_window_elbo(fit.traces[:, 0], self.converge_window)
        no_mode = bool(start_message and start_message.startswith(NO_MODE))
        if not fit.interrupted and self.init_from is None and self.init != "point" and (
                no_mode or fit.status == F.STATUS_NONFINITE or ran_away(final, best)):
            # a fit that diverged, ran away, or (with no mode to start at) ended below the ELBO of
            # Pathfinder's Gaussian is run once more, from that Gaussian and at half the rate: on
            # the S&P 500 volatility posterior the start at the initial point (log volatilities
            # 6-10 below the posterior's) left the fit 170 posterior sds off, still climbing
            left = None if budget.grad_evals is None else max((budget.grad_evals - spent) // 10, 20)
            approx, pf_elbo, pf_spent = pathfinder_start(target, seed, left)
            spent += pf_spent
            behind = math.isfinite(pf_elbo) and final < pf_elbo - max(RUNAWAY_NATS, 0.01 * abs(pf_elbo))
            steps, fit_budget, budget_cut = self._steps(budget, spent)
            if (fit.status == F.STATUS_NONFINITE or ran_away(final, best) or behind) and steps > 0 and (
                    fit_budget < 0 or fit_budget >= self.samples):
                why = (diverged_message(-math.inf if fit.status == F.STATUS_NONFINITE else final, best, "")
                       if fit.status == F.STATUS_NONFINITE or ran_away(final, best)
                       else f"diverged: the fit ended at an ELBO of {final:.4g}, below Pathfinder's Gaussian's "
                            f"{pf_elbo:.4g}; ")
                retry_message = why + f"started again from Pathfinder's Gaussian ({pf_spent} gradients) at half the rate"
                fit = self._fit(target, kernel, np.asarray(approx.mean, dtype=float).copy(), _cholesky(approx.cov),
                                rng, steps, fit_budget, 0.5 * self.rate(d))
                spent += fit.grad_evals
                final, best = _final_elbo(fit, self.converge_window), best_window_elbo(fit.traces[:, 0],
                                                                                    self.converge_window)
        clock.stop()
        status = fit.status
        if status == F.STATUS_STEPS and budget_cut:
            status = F.STATUS_BUDGET  # the steps were those the budget pays for
        traces, done = fit.traces, fit.steps
        mu, chol = FR.unpack(fit.params)
        with np.errstate(over="ignore", invalid="ignore"):
            cov = chol @ chol.T
        if not np.all(np.isfinite(cov)):
            raise VIDivergenceError(
                f"{self.name}: the covariance overflowed at step {done} (try a smaller learning_rate)", done, None
            )
        approx = Gaussian.from_cholesky(mu, chol)
        draws = np.stack([approx.sample(self.draws, rng) for _ in range(self.chains)])
        elbo = traces[:, 0]
        tail = elbo[-min(len(elbo), self.converge_window):]
        messages, slope_info = fit_messages(elbo, status, self.converge_tol, self.converge_window)
        diverged = status != F.STATUS_NONFINITE and not fit.interrupted and ran_away(final, best)
        if diverged:
            messages.insert(0, diverged_message(final, best, "trust its draws less, or start it elsewhere (init_from)"))
        if retry_message:
            messages.insert(0, retry_message)
        if start_message:
            messages.insert(0, start_message)
        khat, khat_messages, khat_evals = pareto_check(target, approx, draws.reshape(-1, d), khat_draws)
        if start_message and start_message.startswith(NO_MODE) and not diverged:
            # above 0.5, as DADVI's: at its family's optimum on a funnel q's k-hat can be 0.6
            khat_messages += funnel_message(khat, above=PARETO_K_OK,
                                            converged=not any(m.startswith("not converged") for m in messages))
        result = self.result(
            target, seed, draws, clock,
            grad_evals=spent + khat_evals,  # the k-hat check's calls are paid from the budget
            logp_evals=spent + khat_evals,
            approximation=approx,
            log_z=float(np.mean(tail)) if len(tail) else None,
            log_z_se=float(np.std(tail) / math.sqrt(len(tail))) if len(tail) > 1 else None,
            stats={name: traces[:, j].copy() for j, name in enumerate(FR.TRACE_NAMES)},
            messages=not_converged_first(messages + khat_messages),
            info={"status": int(status), "steps": int(done), "start_grad_evals": int(start_grads),
                  "khat_grad_evals": khat_evals, "restarted": retry_message is not None,
                  "pareto_k": khat, **slope_info},
        )
        note_rejected_steps(result, fit.rejected)
        result.interrupted = bool(fit.interrupted or status == F.STATUS_STOPPED)
        if status == F.STATUS_NONFINITE:
            raise VIDivergenceError(
                f"{self.name}: the loss or a parameter became NaN or infinite at step {done}; the last finite "
                "parameters are in .result (try a smaller learning_rate, or init='mode')",
                done, result,
            )
        return result


NO_MODE = ("the ascent found no mode (on a hierarchical posterior there may be none: log p grows without bound "
           "as a scale goes to 0)")


class Fit(NamedTuple):
    """One run of the fit's kernel: the parameters it ended with, its traces and counts."""

    params: np.ndarray
    traces: np.ndarray
    steps: int
    grad_evals: int
    status: int
    rejected: int
    interrupted: bool


def _final_elbo(fit: Fit, window: int) -> float:
    """The mean ELBO of the fit's last window (-inf for a fit with no step)."""
    tail = fit.traces[-min(len(fit.traces), window):, 0] if len(fit.traces) else np.zeros(0)
    return float(np.mean(tail)) if len(tail) else -math.inf


def _cholesky(cov) -> np.ndarray:
    cov = np.asarray(cov, dtype=float)
    return np.linalg.cholesky(0.5 * (cov + cov.T))
