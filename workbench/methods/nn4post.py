"""``NN4Post``: the mixture variational inference of the nn4post paper, and ``MeanFieldVI``
(the same with one component: Bayes by Backprop). The loss, its hand-derived gradient and
the optimisation loop are in ``workbench/vi/``; every option the paper discusses is a setting
here, so studies can ablate it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..approximations import GaussianMixture
from ..density_faults import original
from ..fitting.component_adaptation import ComponentAdapter
from ..fitting.health import (
    DEFAULT_STEPS,
    KHAT_DRAWS,
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
from ..fitting.mixture_start import QUIET_STARTS, initial_parameters, mode_search
from ..jit import C_PROGRESS, C_STOP
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.faults import density_raised
from ..running.method import Examples, Method
from ..running.threads import run_in_threads
from ..running.validation import check_positive_int
from ..target import Target
from ..vi import fit as F
from ..vi.elbo import GAUGES
from .pathfinder import pathfinder_start

INITS = ("modes", "box")

@dataclass(frozen=True)
class NN4Post(PSISResampled, Method):
    """Gaussian-mixture VI (nn4post): q = sum_i c_i(a) prod N(mu_i, softplus(zeta_i)).

    Parameters (paper sections in brackets)
    ----------
    n_components : N_c. ``samples`` : draws per component per step.
    steps : optimisation steps; None (default) gives 5,000, or under a gradient budget as many as
        the budget pays for (the stopping rule may end the fit sooner).
    optimizer : "adam" (default) or "gd" (plain gradient descent, as in the paper);
        ``learning_rate`` (None: 0.05, or min(0.05, sqrt(0.2 / d)) from the modes, see ``rate``)
        and ``lr_final`` (the ratio the rate decays to, exponentially over the
        steps, or over the steps a gradient budget pays for; 1 = none). The decay to 0.1 lets
        the weights settle: on the 2-d three-peak mixture it halves the weight error.
    gauge : "fix_c" (c(a - mean a) in the loss, the paper's choice), "mean_grad" (subtract the
        mean of dL/da) or "none" [3.2.1].
    rescale : "constant" (``r``) or "dynamic" (``r_start`` for ``r_warm`` of the steps, then a
        ramp to 1 over ``r_ramp``) [3.2.2].
    frozen_fix : "none", "divide" (gradients of component i / (c_i + epsilon)), "clip" (also
        floor c at epsilon) or "clip_a" (clip dL/da below a_min, ``c_accuracy``) [3.2.3].
    entropy : "exact" (the whole mixture's log q) or "lower_bound" (eq. 17) [3.3.1].
    batch_size : mini-batch size N_m on data-driven targets (None: all data);
        ``batch_factor=False`` drops the N_D / N_m factor on purpose [3.4.1].
    init : "modes" (default) or "box". "modes" searches the target for modes first
        (``workbench/modes.py``: L-BFGS from ``search_starts`` starts spread on a ladder of radii,
        every gradient counted in the budget: it spends ``search_budget`` (5%) of the gradient
        budget, or without one of the gradients the fit's steps will take, and goes on while it
        finds new modes (among the best ``n_components``), until its last max(100, n / 2) of n
        starts found none, at most 2,000 starts and 25% of the budget) and puts a component on
        each of the best modes by Laplace evidence, with the mode's mean-field scales 1 / sqrt(-H_jj) and
        weights from the modes' Laplace evidences; components beyond the modes found start one
        local sd from the heaviest mode with a negligible weight (0.1 ``c_accuracy``), for the
        component adaptation to move to modes the search missed. "box" is the paper's start: means
        uniform in a box of half-width ``init_range`` around the target's initial point (None
        gives sqrt(d), the sec. 7.1.1 scaling), sds ``init_scale`` (ln 2, i.e. zeta = 0).
        ``init_from``, when given, overrides both: a fitted Laplace result (or any
        object with ``mean`` and ``cov``) to centre the components on, jittered by its sds;
        or a ``GaussianMixture`` (or a result holding one, or a dict with its "weights", "means"
        and "scales") with ``n_components`` components, whose weights, means and scales are the
        start (a warm start).
    converge_window, converge_patience, converge_tol : the early-stopping rule (see
        ``workbench/vi/fit.py``); tol = 0 switches it off.
    scale_steps : the means' Adam steps in units of each component's current sds (a step of
        ``learning_rate`` is that fraction of a posterior sd in every coordinate, whatever the
        parameters' units, and it follows the scales as they are fitted). None (default): on for
        the mode search's start, off for the box and ``init_from`` (the paper's absolute steps).
    adapt_components : True (default) moves components that are not needed where they are: one
        whose weight stays below ``c_accuracy``, or that duplicates a heavier one, for two windows
        of ``converge_window`` steps is moved to a mode not yet covered, found by L-BFGS from the
        draw with the largest log p - log q among
        ``adapt_draws`` draws of q widened threefold (variational boosting's residual, Miller, Foti and Adams 2017;
        GMMVI's component adaptation, Arenz et al. 2023); when that ascent finds only covered
        modes, the component is removed (its weight merged into the one it duplicates, its
        parameters frozen). Each component is tried
        at most ``adapt_tries`` times. Every draw and gradient is counted; every move is in
        ``result.stats["component_moves"]`` (per step) and ``result.info["component_moves"]``.
    restarts : independent fits from different random starts, run in parallel, keeping the
        one with the best final ELBO. Fitting is a search problem (sec. 7.1.1): a start may
        miss a peak, and the missed peak lowers the ELBO by about -log(1 - its weight), so the
        ELBO picks the better fit. A gradient budget is split equally; the cost is the sum.
    draws, chains : draws from q returned as ``Result.draws`` (4,000 by default: as many as
        the ``Exact`` rows of the studies, so that sampling noise is the same in comparisons).

    A fit that stops on its budget or step count while its ELBO is still rising says so in
    ``result.messages``, with the slope; every fit reports the Pareto k-hat of q against the
    target from its draws (Yao et al. 2018; ArviZ's PSIS) in ``result.info["pareto_k"]`` and
    warns above 0.7.
    """

    family = "VI"
    colour, marker = "#882255", "*"
    examples = Examples(quick={"n_components": 2, "steps": 2000, "draws": 300}, budget=3000,
                        long={"n_components": 2, "steps": 10**6, "init": "box"})

    n_components: int = 5
    steps: int | None = None
    samples: int = 10
    optimizer: str = "adam"
    learning_rate: float | None = None
    lr_final: float = 0.1
    gauge: str = "fix_c"
    rescale: str = "constant"
    r: float = 1.0
    r_start: float = 0.01
    r_warm: float = 0.3
    r_ramp: float = 0.2
    frozen_fix: str = "none"
    epsilon: float = 1e-8
    c_accuracy: float = 1e-3
    entropy: str = "exact"
    batch_size: int | None = None
    batch_factor: bool = True
    init: str = "modes"
    search_starts: int | None = None
    search_budget: float = 0.05
    init_range: float | None = None
    init_scale: float = math.log(2.0)
    init_weights: Any = None
    init_from: Any = None
    scale_steps: bool | None = None
    adapt_components: bool = True
    adapt_draws: int = 500
    adapt_tries: int = 1
    converge_window: int = 200
    converge_patience: int = 5
    converge_tol: float = 1e-4
    restarts: int = 1
    draws: int = 4000
    psis: bool = False
    chains: int = 1
    progress: bool | None = None

    def __post_init__(self):
        check_positive_int("n_components", self.n_components)
        if self.init_from is not None:
            approx = getattr(self.init_from, "approximation", self.init_from)
            if not (isinstance(approx, dict) and {"weights", "means", "scales"} <= set(approx)) and not (
                    hasattr(approx, "mean") and hasattr(approx, "cov")):
                raise ValueError(f"init_from must be a fit with a mean and a cov (a Laplace, VI or Pathfinder result or "
                                 f"approximation) or a mixture's weights, means and scales; got {self.init_from!r}")
        if self.steps is not None:
            check_positive_int("steps", self.steps)
        check_positive_int("samples", self.samples)
        check_positive_int("draws", self.draws)
        check_positive_int("chains", self.chains)
        check_positive_int("restarts", self.restarts)
        check_positive_int("adapt_draws", self.adapt_draws)
        check_positive_int("adapt_tries", self.adapt_tries, minimum=0)
        check_positive_int("converge_window", self.converge_window)
        check_positive_int("converge_patience", self.converge_patience)
        if self.init not in INITS:
            raise ValueError(f"init must be one of {list(INITS)}, got {self.init!r}")
        if self.init_range is not None and self.init != "box":
            raise ValueError(
                f"init_range={self.init_range!r} sets the box of init='box'; the default init='modes' "
                "searches for modes instead: pass init='box' with it"
            )
        if self.init_range is not None and not (self.init_range > 0 and math.isfinite(self.init_range)):
            raise ValueError(f"init_range must be > 0 and finite, got {self.init_range!r}")
        if self.search_starts is not None:
            check_positive_int("search_starts", self.search_starts, minimum=0)
        if not (0 < self.search_budget < 1):
            raise ValueError(f"search_budget is a fraction of the gradient budget in (0, 1), got {self.search_budget!r}")
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon must be > 0 and finite, got {self.epsilon!r}")
        if not (0 < self.c_accuracy < 1):
            raise ValueError(f"c_accuracy must lie in (0, 1), got {self.c_accuracy!r}")
        if not (self.converge_tol >= 0 and math.isfinite(self.converge_tol)):
            raise ValueError(f"converge_tol must be >= 0 and finite (0 switches the rule off), got {self.converge_tol!r}")
        if self.learning_rate is not None and not (self.learning_rate > 0 and math.isfinite(self.learning_rate)):
            raise ValueError(f"learning_rate must be > 0 and finite (or None for the default), got {self.learning_rate!r}")
        if not (0 < self.lr_final <= 1):
            raise ValueError(f"lr_final must lie in (0, 1], got {self.lr_final!r}")
        for name, value, allowed in [
            ("optimizer", self.optimizer, F.OPTIMIZERS),
            ("gauge", self.gauge, GAUGES),
            ("frozen_fix", self.frozen_fix, F.FROZEN_FIXES),
            ("rescale", self.rescale, ("constant", "dynamic")),
            ("entropy", self.entropy, ("exact", "lower_bound")),
        ]:
            if not isinstance(value, str) or value not in allowed:
                raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
        if not (self.r > 0 and math.isfinite(self.r)):
            raise ValueError(f"r must be a finite number > 0, got {self.r!r}")
        if not (self.r_start > 0 and math.isfinite(self.r_start)):
            raise ValueError(f"r_start must be a finite number > 0, got {self.r_start!r}")
        for name in ("r_warm", "r_ramp"):  # fractions of the steps
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} is a fraction of the steps in [0, 1], got {getattr(self, name)!r}")
        if self.batch_size is not None:
            check_positive_int("batch_size", self.batch_size)
        if not (self.init_scale > 0 and math.isfinite(self.init_scale)):
            raise ValueError(f"init_scale must be > 0, got {self.init_scale!r}")

    def _scales_steps(self) -> bool:
        """``scale_steps`` resolved: by default on for the mode search's start only."""
        if self.scale_steps is not None:
            return bool(self.scale_steps)
        return self.init == "modes" and self.init_from is None

    def rate(self, dim: int) -> float:
        """The learning rate: the one given, else 0.05, or, for a start at the modes, at most
        sqrt(0.2 / d). Adam's steps at a noisy optimum are about the rate in every coordinate (in
        posterior sds there), which costs about d rate^2 / 2 nats of KL per component: the cap
        keeps that near 0.1 nats in any dimension."""
        if self.learning_rate is not None:
            return float(self.learning_rate)
        if self.init == "modes" and self.init_from is None:
            return min(0.05, math.sqrt(0.2 / dim))
        return 0.05

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """The draws, and the fit's vectors of K x d parameters (about a dozen per restart)."""
        d = target.dim
        return {"draws": 8 * self.chains * self.draws * d,
                "fit": 8 * 12 * self.restarts * self.n_components * (2 * d + 1)}

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        khat_draws = khat_reserve(budget)
        budget = without_reserve(budget, khat_draws)
        if self.batch_size is not None:
            if not target.has_batch:
                raise ValueError(
                    f"batch_size={self.batch_size} needs a target with a mini-batch form "
                    f"(logp_grad_batch); {target.name!r} has none"
                )
            if self.batch_size > target.n_data:
                raise ValueError(f"batch_size={self.batch_size} exceeds the target's {target.n_data} data rows")
        k, n_fits = self.n_components, self.restarts
        steps = budget.steps if budget.steps is not None else self.steps
        if steps is None and budget.grad_evals is None:
            steps = DEFAULT_STEPS
        clock = RunClock()
        search = mode_search(self, target, seed, budget)
        search_grads = 0 if search is None else search.grad_evals
        start = None
        if search is not None and search.fallback:
            # no mode (a hierarchical posterior): where the ascents stopped is no start; Pathfinder's
            # best Gaussian along its path lies in the bulk it crossed
            share = None if budget.grad_evals is None else max(budget.grad_evals // 10, 20)
            start, _, spent = pathfinder_start(target, seed, share)
            search_grads += spent
        fit_budget = None if budget.grad_evals is None else (budget.grad_evals - search_grads) // n_fits
        if fit_budget is not None:
            # the learning-rate schedule runs over the steps the budget pays for, not past them
            affordable = max(1, fit_budget // (k * self.samples))
            steps = affordable if steps is None else min(steps, affordable)
        rngs = chain_rngs(seed, self.restarts)
        starts = [initial_parameters(self, target, rng, search, start) for rng in rngs]
        params = [p for p, _ in starts]
        kernel = clock.compile(F.fit_kernel, target)
        with clock.compiling():
            batch_fn = target.kernel_logp_grad_batch

        fit_settings = F.fit_settings(
            k=k, steps=steps, samples=self.samples, gauge=GAUGES[self.gauge], exact=self.entropy == "exact",
            frozen=F.FROZEN_FIXES[self.frozen_fix], optimizer=F.OPTIMIZERS[self.optimizer],
            batch=self.batch_size or 0, n_data=target.n_data or 0, dynamic_r=self.rescale == "dynamic",
            window=self.converge_window, patience=self.converge_patience, scale_by_sigma=self._scales_steps(),
            lr=self.rate(target.dim), lr_final=self.lr_final, r=self.r, r_start=self.r_start, r_warm=self.r_warm,
            r_ramp=self.r_ramp, eps=self.epsilon, c_accuracy=self.c_accuracy, tol=self.converge_tol,
            batch_scale=(target.n_data / self.batch_size if self.batch_factor else 1.0) if self.batch_size else 0.0,
            beta1=0.9, beta2=0.999, adam_eps=1e-8,
        )
        traces = np.zeros((n_fits, steps, len(F.TRACE_NAMES)))
        moves_trace = np.zeros((n_fits, steps))
        controls = np.zeros((n_fits, 2), dtype=np.int64)
        adapt = self.adapt_components and k > 1 and self.adapt_tries > 0
        segment = self.converge_window if adapt else steps

        def run_one(i):
            """One fit, in segments of a window when components are adapted between them."""
            state = F.new_state(params[i].size)
            adapter = ComponentAdapter(self, target, rngs[i]) if adapt else None
            t, n_grad, status, moves, rejected = 0, 0, F.STATUS_STEPS, [], 0
            while t < steps and controls[i, C_STOP] == 0:
                settings = fit_settings._replace(
                    t_start=t, t_stop=min(steps, t + segment),
                    grad_budget=-1 if fit_budget is None else max(fit_budget - n_grad, 0))
                try:
                    t, n, status, rejects = kernel(target.kernel_logp_grad, batch_fn, target.kernel_data, params[i],
                                                   rngs[i], settings, starts[i][1], state, traces[i],
                                                   controls[i])
                except Exception as exc:  # the user's density raised inside the fit
                    means = params[i][k: k + k * target.dim].reshape(k, target.dim)
                    raise density_raised(self.name, target, exc, i, int(controls[i, C_PROGRESS]) + 1,
                                         means[0], "restart") from original(exc)
                n_grad += n
                rejected += int(rejects)
                if status != F.STATUS_STEPS or adapter is None or t >= steps:
                    break
                elbo = float(np.mean(traces[i, max(0, t - self.converge_window) : t, 0]))
                spent = adapter.step(params[i], starts[i][1], state, traces[i, t - 1, 1], t, elbo,
                                     None if fit_budget is None else fit_budget - n_grad)
                n_grad += spent
                for move in adapter.moves[len(moves):]:
                    moves_trace[i, move["step"] - 1] += move["kind"] == "moved"
                moves = list(adapter.moves)
            if controls[i, C_STOP] != 0 and status == F.STATUS_STEPS and t < steps:
                status = F.STATUS_STOPPED
            return t, n_grad, status, moves, rejected

        outputs, interrupted = run_in_threads(run_one, controls, steps, self.progress, f"{self.name} on {target.name}")
        clock.stop()
        best = self._best_fit(outputs, traces)
        done, _, status, moves, rejected = outputs[best]
        n_grad = search_grads + sum(int(out[1]) for out in outputs)
        result = self._result(target, seed, params[best], traces[best, :done], n_grad, clock, status, rngs[best],
                              khat_draws)
        result.stats["component_moves"] = moves_trace[best, :done].copy()
        note_rejected_steps(result, rejected)
        if search is not None:
            result.info["mode_search"] = {
                "modes": len(search.modes), "starts": search.starts, "grad_evals": search.grad_evals,
                "failed_starts": search.failed, "saddles": search.saddles, "unconverged": search.unconverged,
                "log_z": [m.log_z for m in search.modes], "hits": [m.hits for m in search.modes],
            }
            if search.fallback and not result.info.get("diverged"):
                converged = not any(m.startswith("not converged") for m in result.messages)
                result.messages.extend(funnel_message(result.info["pareto_k"], converged=converged))
                result.messages.insert(0, "mode search: no ascent converged to a mode (on a hierarchical "
                                          "posterior there may be none: log p grows without bound as a scale "
                                          "goes to 0); the fit started from Pathfinder's Gaussian")
            result.messages.insert(0, (
                f"mode search: {len(search.modes)} mode(s) from {search.starts} L-BFGS starts "
                f"({search.grad_evals} gradients"
                + (f"; {search.failed} starts skipped: density not finite" if search.failed else "")
                + ")"))
            if not search.settled:
                result.messages.insert(1, (
                    f"search cut short: the mode search's share of the budget ended after {search.starts} start(s), before "
                    f"{QUIET_STARTS} starts in a row found no new mode; modes may be missed: give more budget or "
                    f"steps, or a larger search_budget (now {self.search_budget})"))
        if moves:
            result.info["component_moves"] = moves
            moved = sum(m["kind"] == "moved" for m in moves)
            result.messages.append(f"component adaptation: {moved} component(s) moved to new modes, "
                                   f"{len(moves) - moved} removed")
        if n_fits > 1:
            result.info["restart_elbos"] = [self._final_elbo(traces[i, : out[0]]) for i, out in enumerate(outputs)]
            result.info["best_restart"] = best
            result.messages.append(f"kept restart {best} of {n_fits} (best final ELBO)")
        result.messages[:] = not_converged_first(result.messages)
        result.interrupted = bool(interrupted or status == F.STATUS_STOPPED)
        if status == F.STATUS_NONFINITE:
            raise VIDivergenceError(
                f"{self.name}: the loss or a parameter became NaN or infinite at iteration {done}; "
                "the last finite parameters are in .result (try a smaller learning_rate)",
                done,
                result,
            )
        return result

    def _final_elbo(self, trace) -> float:
        """Mean ELBO over the last window: the number restarts are ranked by."""
        elbo = trace[-min(len(trace), max(self.converge_window, 1)) :, 0]
        return float(np.mean(elbo)) if len(elbo) else -math.inf

    def _best_fit(self, outputs, traces) -> int:
        """The restart with the best final ELBO; a fit that diverged ranks last."""
        scores = [
            -math.inf if out[2] == F.STATUS_NONFINITE else self._final_elbo(traces[i, : out[0]])
            for i, out in enumerate(outputs)
        ]
        finite = [s if math.isfinite(s) else -math.inf for s in scores]
        return int(np.argmax(finite)) if any(math.isfinite(s) for s in finite) else 0

    def _result(self, target, seed, params, traces, n_grad, clock, status, rng, khat_draws=KHAT_DRAWS) -> Result:
        k, d = self.n_components, target.dim
        a = params[:k]
        r_final = traces[-1, 1] if len(traces) else self.r
        z = r_final * (a - (a.mean() if self.gauge == "fix_c" else 0.0))
        c = np.exp(z - np.logaddexp.reduce(z))
        mu = params[k : k + k * d].reshape(k, d).copy()
        sigma = np.logaddexp(0.0, params[k + k * d :].reshape(k, d))
        approx = GaussianMixture(c, mu, sigma)
        draws = np.stack([approx.sample(self.draws, rng) for _ in range(self.chains)])
        elbo = traces[:, 0]
        tail = elbo[-min(len(elbo), max(self.converge_window, 1)) :]
        messages, slope_info = fit_messages(elbo, status, self.converge_tol, self.converge_window)
        info = {"status": int(status), "steps": len(traces), "params": params.copy(),
                "draws_per_step": self.n_components * self.samples, **slope_info}
        final, best = self._final_elbo(traces), best_window_elbo(elbo, self.converge_window)
        if status != F.STATUS_NONFINITE and len(traces) and ran_away(final, best):
            info["diverged"] = True
            messages.insert(0, diverged_message(final, best, "trust its draws less; give a smaller learning_rate "
                                                              "or another start (init_from)"))
        pooled = draws.reshape(-1, d)
        info["pareto_k"], khat_messages, khat_evals = pareto_check(target, approx, pooled, khat_draws)
        info["khat_grad_evals"] = khat_evals
        messages += khat_messages
        return self.result(
            target, seed, draws, clock,
            grad_evals=int(n_grad) + khat_evals,  # the k-hat check's calls are paid from the budget
            logp_evals=int(n_grad) + khat_evals,
            approximation=approx,
            # -ELBO >= -log Z: the ELBO (mean of the last window) is a lower bound on log Z
            log_z=float(np.mean(tail)) if len(tail) else None,
            log_z_se=float(np.std(tail) / math.sqrt(len(tail))) if len(tail) > 1 else None,
            stats={name: traces[:, j].copy() for j, name in enumerate(F.TRACE_NAMES)},
            messages=messages,
            info=info,
        )


@dataclass(frozen=True)
class MeanFieldVI(NN4Post):
    """Mean-field Gaussian VI (Bayes by Backprop): ``NN4Post`` with one component."""

    family = "VI"
    colour, marker = "#44AA99", "h"
    examples = Examples(quick={"steps": 2000, "draws": 300}, budget=3000, long={"steps": 10**6, "init": "box"})

    n_components: int = 1

    def __post_init__(self):
        if self.n_components != 1:
            raise ValueError("MeanFieldVI has exactly one component; use NN4Post for mixtures")
        super().__post_init__()
