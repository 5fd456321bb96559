"""``Pathfinder``: quasi-Newton variational inference (Zhang, Carpenter, Gelman and Vehtari
2022, JMLR 23(306)), single-path (Algorithm 1) and multi-path with importance resampling
(Algorithm 2). The path and its Gaussians are in ``workbench/vi/pathfinder.py``."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..density_faults import original
from ..errors import BudgetTooSmallError, WorkbenchError
from ..fitting.health import PARETO_K_GOOD, mean_shift_message, outside_support_message, weighted_mean_shift
from ..fitting.importance_weights import compute_log_ratios, log_evidence, log_ratios, pareto_khat, resample
from ..jit import C_PROGRESS, C_STOP
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.faults import density_raised
from ..running.method import Examples, Method
from ..running.peaks import approximation_peaks, search_limit
from ..running.threads import one_blas_thread, run_in_threads
from ..running.validation import check_positive, check_positive_int
from ..sampling.chain_sampler import initial_points
from ..target import Target
from ..vi import pathfinder as P

# Paths whose best Gaussians' centres lie further apart than this, in the resampled draws' sds,
# found different optima: measured, on eight schools (non-centred) 1.7-2.4 where the draws end
# 0.54-0.82 sd off, and at most 0.63 on regressions and Gaussians where they end within 0.3.
PATH_SPREAD_FLAG = 1.0
BUDGET_STOP = "gradient budget spent"
"""Why a path stopped when its share of the budget ended (its report's ``lbfgs`` entry)."""


def paths_disagree_message(spread: np.ndarray, names) -> list[str]:
    """The warning when the paths' Gaussians sit more than ``PATH_SPREAD_FLAG`` sd apart."""
    if not len(spread) or spread.max() <= PATH_SPREAD_FLAG:
        return []
    j = int(np.argmax(spread))
    return [f"paths disagree: the paths' Gaussians are centred {spread[j]:.1f} sd apart in {names[j]} (the "
            "resampled draws' sd): they found different optima (several modes, a funnel or a long ridge), "
            "and the draws are only as good as the importance weights between them; trust them less or "
            "compare with a sampler"]


class PathfinderError(WorkbenchError, RuntimeError):
    """No path produced a usable Gaussian; ``paths`` says what each one did."""

    def __init__(self, message, paths):
        super().__init__(message)
        self.paths = paths


@dataclass(frozen=True)
class Pathfinder(Method):
    """Pathfinder: the best Gaussian along an L-BFGS path, by its ELBO.

    Each path runs L-BFGS (SciPy's L-BFGS-B, ``history_size`` pairs) on -log p from the
    target's initial point jittered by uniform(-``init_jitter``, ``init_jitter``) per
    coordinate (its own jitter per path), builds at every iterate the Gaussian
    N(x + H grad log p, H) from the L-BFGS inverse Hessian H (diagonal plus rank
    2 ``history_size``), estimates its ELBO from ``elbo_draws`` draws, and keeps the iterate
    with the best ELBO. Iterates whose curvature pairs or inverse Hessian are not positive
    definite are skipped (counted in ``info``).

    With ``paths`` > 1 the paths run in parallel, each gives ``draws`` draws from its best
    Gaussian, and the pool is importance-resampled (systematic) to ``draws`` draws with
    Pareto-smoothed weights p / q_path (ArviZ's PSIS); the Pareto k-hat is in
    ``result.info["pareto_k"]`` with a warning above 0.7. Two more signals need no truth:
    with one path, how far the importance weights move each mean, in q's sds
    (``info["mean_shift"]``; "weights move the mean" above 0.3 while k-hat <= 0.7: a Gaussian at
    the joint mode sits 0.9 sd from a regression's noise scale's mean, and k-hat alone does
    not say so); with several, how far apart the paths' Gaussians are centred, in the draws'
    sds (``info["path_spread"]``; "paths disagree" above 1). A path that fails (no finite density
    along it, or no positive definite Gaussian) is dropped and reported; all paths failing
    raises :class:`PathfinderError`.

    Defaults: ``history_size`` 6 and ``elbo_draws`` 5 as in the paper's experiments;
    ``draws`` 1,000, ``max_iters`` 1,000 and ``ftol`` as Stan's. ``gtol`` (SciPy's bound on the
    largest gradient coordinate) is 1e-12, not 1e-8: the last pairs near the optimum carry
    the curvature, and stopping one iteration early left sd errors of 0.29 and 0.68 on
    100-d equicorrelated Gaussians (rho 0.5, 0.9) that one or two more iterations (6
    gradients) bring to 0.002. Where the gradient cannot get that small, the line search
    ends the path; the best Gaussian so far is kept either way.

    Cost: every call of the target (L-BFGS's evaluations, the ELBO draws, and with several
    paths the densities of the pooled draws) is one gradient evaluation, since ``logp_grad``
    computes both; a single path's k-hat diagnostic at its draws is counted as density
    evaluations only. Under a gradient budget each path gets an equal share, stops L-BFGS
    when the next iterate's ELBO could not be paid, and keeps its best Gaussian so far.

    Result: ``approximation`` is the best path's :class:`~workbench.approximations.LowRankGaussian`
    (mean, cov, sd, logpdf, sample, marginal_pdf); ``log_z`` its ELBO (a lower bound; with
    several paths the importance estimate log mean(p / q) of the pool, with its standard error);
    ``stats`` the ELBO along the best path; ``info`` each path's iterations, evaluations,
    best iterate and how it ended (with several paths also the pool's normalised log weights
    and their ESS fraction).
    """

    family = "VI"
    colour, marker = "#332288", "<"
    examples = Examples(quick={"paths": 2, "draws": 200}, budget=1000)

    paths: int = 1
    history_size: int = 6
    elbo_draws: int = 5
    draws: int = 1000
    max_iters: int = 1000
    init_jitter: float = 2.0
    ftol: float = 1e-12
    gtol: float = 1e-12
    progress: bool | None = None

    def __post_init__(self):
        check_positive_int("paths", self.paths)
        check_positive_int("history_size", self.history_size)
        check_positive_int("elbo_draws", self.elbo_draws)
        check_positive_int("draws", self.draws)
        check_positive_int("max_iters", self.max_iters)
        check_positive("ftol", self.ftol)
        check_positive("gtol", self.gtol)
        if not (self.init_jitter >= 0 and math.isfinite(self.init_jitter)):
            raise ValueError(f"init_jitter must be a finite number >= 0, got {self.init_jitter!r}")

    def _path_budget(self, target: Target, budget: Budget) -> int | None:
        """Each path's share of the gradient budget for L-BFGS and the ELBO (None: no limit)."""
        if budget.grad_evals is None:
            return None
        pooled = self.draws  # the densities of its draws (the pool's weights; one path's k-hat and evidence)
        share = budget.grad_evals // self.paths - pooled
        needed = 2 + 2 * self.elbo_draws
        if share < needed:
            raise BudgetTooSmallError(
                f"grad_budget={budget.grad_evals} is too small for {self.name}(paths={self.paths}) on "
                f"{target.name!r}: each path needs at least {needed + pooled} gradient evaluations "
                f"({needed} for a first Gaussian and its ELBO" + (f", {pooled} for its draws' densities" if pooled else "")
                + "); give a larger budget, fewer paths or fewer draws"
            )
        return share

    def _one_path(self, target: Target, x0: np.ndarray, rng: np.random.Generator, limit: int | None, control) -> dict:
        """Run one path: L-BFGS with the ELBO of each iterate's Gaussian; keep the best."""
        gaussians = P.PathGaussians(target.dim, self.history_size)
        log_ratio_kernel = log_ratios.for_target(target)
        no_stop = np.zeros(2, dtype=np.int64)  # the kernel's control: this path stops between iterates instead
        out = {"best": None, "elbo": -math.inf, "elbo_trace": [], "skipped": 0, "evals": 0, "best_iter": -1}

        def logp_and_grad(x):
            if limit is not None and out["evals"] >= limit:
                raise P.StopPath(BUDGET_STOP)
            out["evals"] += 1
            return target.logp_and_grad(x)

        def on_iterate(x, lp, g) -> None:
            q = gaussians.add(x, g)
            it = len(out["elbo_trace"])
            control[C_PROGRESS] = it + 1
            if q is None:
                out["elbo_trace"].append(math.nan)
                out["skipped"] += it > 0 and bool(gaussians.s)  # a history, but no PD Gaussian from it
            else:
                phi, log_q = q.sample_with_logpdf(self.elbo_draws, rng)
                ratios = np.empty(self.elbo_draws)
                log_ratio_kernel(target.kernel_logp_grad, target.kernel_data, np.ascontiguousarray(phi), log_q, ratios, no_stop)
                ratios[np.isnan(ratios)] = -math.inf
                out["evals"] += self.elbo_draws
                elbo = float(np.mean(ratios))  # -inf when a draw's density is not finite
                out["elbo_trace"].append(elbo)
                if elbo > out["elbo"]:
                    out.update(best=q, elbo=elbo, best_iter=it)
            if control[C_STOP] != 0:
                raise P.StopPath("interrupted")
            # go on only if the next iterate (an evaluation or a few) and its ELBO can be paid
            if limit is not None and out["evals"] + 1 + self.elbo_draws > limit:
                raise P.StopPath(BUDGET_STOP)

        path = P.lbfgs_path(logp_and_grad, x0, self.history_size, self.max_iters, on_iterate=on_iterate,
                            ftol=self.ftol, gtol=self.gtol)
        out.update(iterations=max(len(path.x) - 1, 0), message=path.message, rejected_pairs=gaussians.rejected_pairs)
        return out

    def _guarded_path(self, target, x0, rng, limit, control, i):
        """One path; the user's density raising in it becomes a DensityError naming the path."""
        try:
            return self._one_path(target, x0, rng, limit, control)
        except (WorkbenchError, KeyboardInterrupt, np.linalg.LinAlgError):
            raise
        except Exception as exc:  # the user's density raised (our kernels raise nothing)
            raise density_raised(self.name, target, exc, i, int(control[C_PROGRESS]) + 1, x0,
                                 "path") from original(exc)

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        clock = RunClock()
        clock.compile(log_ratios, target)
        rngs = chain_rngs(seed, self.paths)
        x0, start_evals = initial_points(target, rngs, None, self.init_jitter)
        if budget.grad_evals is not None:  # the starts are paid from the budget
            budget = dataclasses.replace(budget, grad_evals=max(budget.grad_evals - start_evals, 0))
        limit = self._path_budget(target, budget)
        controls = np.zeros((self.paths, 2), dtype=np.int64)
        with one_blas_thread():  # the paths' small BLAS calls, on their threads (gauss100: 0.24 s -> 0.19 s)
            outputs, interrupted = run_in_threads(
                lambda i: self._guarded_path(target, x0[i], rngs[i], limit, controls[i], i),
                controls, self.max_iters, self.progress, f"{self.name} on {target.name}",
                estimate_duration=False,  # L-BFGS usually converges long before max_iters
            )
        spent = start_evals + sum(o["evals"] for o in outputs)
        report = [
            {"iterations": o["iterations"], "grad_evals": o["evals"], "best_iteration": o["best_iter"],
             "elbo": o["elbo"], "skipped_iterates": o["skipped"], "rejected_pairs": o["rejected_pairs"], "lbfgs": o["message"]}
            for o in outputs
        ]
        good = [i for i, o in enumerate(outputs) if o["best"] is not None and math.isfinite(o["elbo"])]
        if not good:
            raise PathfinderError(
                f"{self.name}: no path produced a Gaussian with a finite ELBO on {target.name!r} "
                f"({'; '.join(f'path {i}: ' + r['lbfgs'] + f', {r['iterations']} iterations' for i, r in enumerate(report))}); "
                "check the density and its gradient near the initial point, or give a different init",
                report,
            )
        messages = []
        if interrupted:
            messages.append("interrupted: kept the best Gaussian each path had reached")
        cut = [i for i, r in enumerate(report) if r["lbfgs"] == BUDGET_STOP]
        if cut and not interrupted:  # the path's best Gaussian may be far from the mode L-BFGS was heading for
            messages.append(f"not converged: the gradient budget ended L-BFGS on {len(cut)} of {self.paths} path(s) "
                            "before it converged; give more budget")
        dropped = [i for i in range(self.paths) if i not in good]
        if dropped:
            messages.append(f"dropped path(s) {dropped}: no Gaussian with a finite ELBO along them "
                            f"({'; '.join(report[i]['lbfgs'] for i in dropped)})")
        skipped = sum(r["skipped_iterates"] for r in report)
        if skipped:
            messages.append(f"skipped {skipped} iterate(s) whose inverse Hessian estimate was not positive definite")
        best = max(good, key=lambda i: outputs[i]["elbo"])
        approx = outputs[best]["best"]
        info = {"paths": report, "best_path": best, "start_grad_evals": int(start_evals)}
        rng = rngs[best]
        if self.paths == 1:
            draws = approx.sample(self.draws, rng)
            clock.stop()
            log_ratio = compute_log_ratios(target, approx, draws)
            with np.errstate(invalid="ignore"):  # -inf where q has mass outside the support: the ELBO is -inf
                log_z, log_z_se = float(np.mean(log_ratio)), float(np.std(log_ratio) / math.sqrt(self.draws))
            khat = pareto_khat(log_ratio)[1]
            info["log_z_importance"], info["log_z_importance_se"] = log_evidence(log_ratio)
            shift = weighted_mean_shift(draws, log_ratio)
            info["mean_shift"] = shift  # what the weights would move each mean by, in q's sds
            messages += mean_shift_message(shift, target.param_names, khat)
            messages += outside_support_message(log_ratio)
            diagnostic_evals = self.draws
        else:
            pool = [outputs[i]["best"].sample(self.draws, rngs[i]) for i in good]
            log_w = np.concatenate([compute_log_ratios(target, outputs[i]["best"], x) for i, x in zip(good, pool)])
            spent += self.draws * len(good)
            pool = np.concatenate(pool)
            if not np.isfinite(log_w).any():
                raise PathfinderError(f"{self.name}: every pooled draw has zero weight on {target.name!r}", report)
            smoothed, khat = pareto_khat(log_w)
            draws = pool[resample(smoothed, self.draws, rng, "systematic")]
            # how far apart the paths' Gaussians sit, in the weighted draws' sds (0: they agree)
            centres = np.array([outputs[i]["best"].mean for i in good])
            spread = centres.max(axis=0) - centres.min(axis=0)
            sd = draws.std(axis=0)
            info["path_spread"] = np.where(sd > 0, spread / np.where(sd > 0, sd, 1.0), 0.0)
            messages += paths_disagree_message(info["path_spread"], target.param_names)
            clock.stop()
            log_z, log_z_se = log_evidence(log_w)
            log_weights = smoothed - np.logaddexp.reduce(smoothed)
            info["log_weights"] = log_weights  # the pool's normalised PSIS weights, path by path
            info["ess_fraction"] = float(1.0 / np.sum(np.exp(2 * log_weights)) / len(log_weights))
            diagnostic_evals = 0
        info["pareto_k"] = khat
        if khat > PARETO_K_GOOD:
            messages.append(
                f"Pareto k-hat {khat:.2f} > {PARETO_K_GOOD}: the Gaussian misses mass of the posterior "
                "(its tails are too light, the paths found different modes, or the posterior is a funnel); "
                "trust the draws less"
            )
        # the peaks the draws miss (peaks.py): Pathfinder's paths follow one ascent each
        limit = search_limit(target, budget)
        if budget.grad_evals is not None and limit is not None:
            limit = min(limit, max(budget.grad_evals - spent - diagnostic_evals, 0))
        peak_messages, peak_evals = ([], 0) if interrupted else approximation_peaks(target, draws[None], seed, limit)
        messages += peak_messages
        spent += peak_evals
        info["peaks_grad_evals"] = peak_evals
        trace = np.array(outputs[best]["elbo_trace"], dtype=float)
        return self.result(
            target, seed, draws[None], clock,
            grad_evals=spent + diagnostic_evals, logp_evals=spent + diagnostic_evals,
            approximation=approx,
            log_z=log_z, log_z_se=log_z_se,
            stats={"elbo": trace},
            messages=messages,
            info=info,
            interrupted=bool(interrupted),
        )


# the draws a start from Pathfinder evaluates its Gaussian's ELBO on (each one gradient)
START_DRAWS = 200


def pathfinder_start(target: Target, seed: int, grad_budget: int | None = None) -> tuple[Any, float, int]:
    """(Pathfinder's Gaussian, its ELBO, gradients spent): a start for a fit where the ascent to a
    mode found none (a hierarchical posterior, whose log density grows as a scale goes to 0). The
    best Gaussian along one L-BFGS path lies in the bulk the path crossed, before it runs down a
    funnel, where a start at the end of the ascent lies far out (Zhang et al. 2022, sec. 2)."""
    fit = Pathfinder(draws=START_DRAWS, progress=False).run(
        target, seed=int(np.random.SeedSequence([seed, 0x5EED]).generate_state(1)[0]), grad_budget=grad_budget)
    return fit.approximation, float(fit.log_z), int(fit.cost.grad_evals)
