"""``GMMVI``: Gaussian-mixture VI by natural gradients in trust regions, the "SAMTRON" design of
Arenz, Dahlinger, Ye, Volpp and Neumann, "A Unified Perspective on Natural Gradient Variational
Inference with Gaussian Mixture Models" (TMLR 2023; code OlegArenz/gmmvi): Stein-based
natural-gradient estimates (S), adaptive number of components (A), component-based sample
selection with a sample database (M), trust-region component updates (T), improvement-based
step sizes (R), trust-region weight updates (O), improvement-based weight step size (N).

One iteration (the authors' ``GMMVI.train_iter``):

1. Each component draws max(1, 100 - n_eff) new draws, n_eff the effective sample size of the
   2 x 100 x K newest stored draws under that component; the target is evaluated there (each
   one gradient) and the draws are stored. The newest (reused + new) draws, with the density
   of the distribution that drew them (the background), are this iteration's sample.
2. Each component's step size grows by 1.15 if its last reward improved, else shrinks by 0.85,
   within [0.001, 1]; it takes a natural-gradient step within KL <= its step size, from
   Stein's-lemma estimates of E[grad r] and E[hess r], r = log p - log q
   (``workbench/vi/gmm_updates.py``, paper eq. 14 and 20).
3. The weights take a trust-region step (sec. 4.3) whose size grows by 1.15 when the ELBO
   estimate improved and shrinks by 0.85 otherwise, within [1e-4, 1].
4. Every 30 iterations a component is added at the stored draw that best trades log p
   against log q, with weight 1e-29; after 100 iterations, components whose reward stagnates
   with weight below 1e-6 are removed (``gmmvi_state.py``).

These are the authors' published defaults (their ``module_configs``: Stein.yml, adaptive.yml,
component-based.yml, trust-region.yml, improvement-based.yml). The start is one component at
the target's ``prior`` (the broad Gaussian a target may carry, as the authors start from
their experiments' priors) or else N(initial point, ``init_scale``^2 I). The linear algebra
is NumPy/SciPy (BLAS), the target's density the compiled kernel every method uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..approximations import FullCovarianceMixture, GaussianMixture
from ..density_faults import original
from ..fitting.gmmvi_state import (
    MixtureState,
    SampleDatabase,
    improvement_step_sizes,
    log_det_factor,
    new_component_location,
    stagnating_components,
)
from ..fitting.health import PSISResampled, fit_messages, khat_reserve, not_converged_first, pareto_check, without_reserve
from ..jit import C_PROGRESS, C_STOP
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.faults import density_raised
from ..running.method import Examples, Method
from ..running.threads import one_blas_thread, run_in_threads
from ..running.validation import check_positive, check_positive_int
from ..smc.mutation import evaluate as evaluate_kernel
from ..target import Target
from ..vi import gmm_updates as G
from ..vi.fit import STATUS_BUDGET, STATUS_NONFINITE, STATUS_STEPS

DEFAULT_ITERATIONS = 2000
INITIAL_WEIGHT = 1e-29  # a new component's weight (the authors' add_at_best_location)
COVARIANCES = ("full", "diag")
EPS_RANGE = (0.001, 1.0)  # the components' step sizes (improvement-based.yml)
WEIGHT_EPS_RANGE = (1e-4, 1.0)  # the weights' step size (weight_stepsize_adaptation/improvement-based.yml)


@dataclass(frozen=True)
class GMMVI(PSISResampled, Method):
    """Gaussian-mixture VI, SAMTRON (module docstring; Arenz et al. 2023).

    Parameters
    ----------
    steps : iterations; None (default) gives 2,000, or under a gradient budget B, B / 100: a
        fit that moves spends up to 100 gradients per component an iteration, one that has
        converged reuses its stored draws and spends about one, so the run ends at the budget
        or at B / 100 iterations (or ``steps``, if fewer), whichever comes first
        (``info["steps"]`` and the cost say which).
    n_components : components at the start (1, the authors' default; more start at means
        drawn from the start distribution).
    covariance : "full" (default) or "diag": diagonal components (the authors'
        ``use_diagonal_covs``), whose memory and step cost grow as d rather than d^2 and d^3,
        for high-dimensional targets; the update uses the Hessian estimate's diagonal.
    max_components : the cap on components the adding rule respects.
    samples_per_component : the draws each component's estimate should rest on (100).
    reuse_ratio : stored draws reused per component, as a multiple of samples_per_component (2).
    add_every, delete_after : the component adaptation's periods (30 and 100 iterations).
    min_weight : a stagnating component below this weight is removed (1e-6).
    adapt_components : False keeps the number of components fixed.
    init_scale : the start's sd when the target carries no ``prior``.
    database_size : draws kept for the adding heuristic (their log p, not their gradients).
    draws, chains : draws from q returned as ``Result.draws``.

    ``result.approximation`` is a :class:`~workbench.approximations.FullCovarianceMixture`
    (``covariance="diag"``: a :class:`~workbench.approximations.GaussianMixture`);
    ``result.log_z`` is the last ELBO estimate (mean of the last 50 iterations' importance
    estimates); ``result.stats`` has the per-iteration ELBO estimate and number of components;
    the Pareto k-hat of q against the target is in ``result.info["pareto_k"]``.
    """

    family = "VI"
    colour, marker = "#EE3377", "x"
    examples = Examples(quick={"steps": 100, "draws": 300}, budget=3000, long={"steps": 10**6, "samples_per_component": 1000})

    steps: int | None = None
    n_components: int = 1
    covariance: str = "full"
    max_components: int = 1000
    samples_per_component: int = 100
    reuse_ratio: float = 2.0
    add_every: int = 30
    delete_after: int = 100
    min_weight: float = 1e-6
    adapt_components: bool = True
    init_scale: float = 1.0
    database_size: int = 100_000
    draws: int = 4000
    chains: int = 1
    psis: bool = False
    progress: bool | None = None

    def __post_init__(self):
        if self.steps is not None:
            check_positive_int("steps", self.steps)
        for name in ("n_components", "max_components", "samples_per_component", "add_every", "delete_after",
                     "database_size", "draws", "chains"):
            check_positive_int(name, getattr(self, name))
        check_positive("reuse_ratio", self.reuse_ratio)
        if self.covariance not in COVARIANCES:
            raise ValueError(f"covariance must be one of {list(COVARIANCES)}, got {self.covariance!r}")
        check_positive("init_scale", self.init_scale)
        if not (0 < self.min_weight < 1):
            raise ValueError(f"min_weight must lie in (0, 1), got {self.min_weight!r}")
        if self.n_components > self.max_components:
            raise ValueError(f"n_components ({self.n_components}) must not exceed max_components "
                             f"({self.max_components})")

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """Per component its d x d factor (d sds when diagonal) and, in an iteration, 3 x 100 draws'
        d-vectors (the draws, their gradients, Sigma^-1 (x - mu)) for every component (the
        estimates of all components use all draws); the database; the draws returned. Sized at
        20 components, the most any run of this workbench's studies reached; a run with more
        grows past it."""
        d, k = target.dim, max(self.n_components, 20)
        n = int(k * self.samples_per_component * (1 + self.reuse_ratio))
        components = {"components (K x d)": 8 * 4 * k * d} if self.covariance == "diag" else \
            {"components (K x d x d)": 8 * 4 * k * d * d}
        return {"draws": 8 * self.chains * self.draws * d, "iteration (K x n x d)": 8 * (k + 3) * n * d,
                **components, "database": 8 * self.database_size * (d + 1)}

    def _start(self, target: Target, rng) -> tuple[np.ndarray, np.ndarray, float, int]:
        """(means, Cholesky factors (diagonal: sds), the start's entropy, density calls made) of
        the initial components."""
        d = target.dim
        prior, calls = getattr(target, "prior", None), 0
        if prior is not None:
            centre = np.asarray(prior.mean, dtype=float)
            cov = np.asarray(prior.cov, dtype=float)
            factor = np.sqrt(np.diag(cov)) if self.covariance == "diag" else np.linalg.cholesky(cov)
        else:
            target.check_point(target.initial_point)  # one density call, counted
            calls = 1
            centre, factor = np.asarray(target.initial_point, dtype=float), np.full(d, self.init_scale)
            if self.covariance == "full":
                factor = np.diag(factor)
        if self.n_components == 1:
            means = centre[None].copy()
        elif factor.ndim == 1:
            means = centre + rng.standard_normal((self.n_components, d)) * factor
        else:
            means = centre + rng.standard_normal((self.n_components, d)) @ factor.T
        entropy = 0.5 * d * (math.log(2 * math.pi) + 1.0) + float(log_det_factor(factor[None])[0])
        return means, np.repeat(factor[None], self.n_components, axis=0), entropy, calls

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        khat_draws = khat_reserve(budget)
        budget = without_reserve(budget, khat_draws)
        clock = RunClock()
        d = target.dim
        kernel = clock.compile(evaluate_kernel, target)
        rng = chain_rngs(seed, 1)[0]
        means, chols, start_entropy, start_calls = self._start(target, rng)
        history = 2 * max(2, self.delete_after)  # the authors' reward-history length
        state = MixtureState.new(means, chols, history, EPS_RANGE[1])
        per = self.samples_per_component
        diagonal = self.covariance == "diag"
        db = SampleDatabase(d, self.database_size, diagonal)
        steps = budget.steps if budget.steps is not None else self.steps
        if budget.grad_evals is not None:  # a converged fit reuses its draws: ~1 gradient per component an iteration
            affordable = max(1, budget.grad_evals // per)
            steps = affordable if steps is None else min(steps, affordable)
        steps = steps or DEFAULT_ITERATIONS
        grad_cap = budget.grad_evals
        controls = np.zeros((1, 2), dtype=np.int64)
        elbo_trace, size_trace = [], []
        counts = {"grads": start_calls, "done": 0, "nonfinite": 0, "drawn": 0, "failed_steps": 0, "adds": 0,
                  "status": STATUS_STEPS}
        weight_eps = WEIGHT_EPS_RANGE[1]

        def draw_and_evaluate(n_new):
            comp = np.repeat(np.arange(state.size), n_new)
            z = rng.standard_normal((comp.size, d))
            if diagonal:
                x = state.means[comp] + state.chols[comp] * z
            else:
                x = state.means[comp] + np.einsum("nab,nb->na", state.chols[comp], z)
            grad, lp = np.empty((comp.size, d)), np.empty(comp.size)
            try:
                done = kernel(target.kernel_logp_grad, target.kernel_data, x, grad, lp, controls[0])
            except Exception as exc:  # the user's density raised
                raise density_raised(self.name, target, exc, 0, counts["done"] + 1, x[0], "fit") from original(exc)
            counts["grads"] += done
            counts["drawn"] += done
            ok = np.isfinite(lp) & np.all(np.isfinite(grad), axis=1)
            ok[done:] = False
            counts["nonfinite"] += int(done - ok[:done].sum())
            return x[ok], lp[ok], grad[ok], comp[ok], done < comp.size

        def run_one(_):
            nonlocal weight_eps
            terms_cache = None  # component_terms of the stored draws (db.x) under the current components
            for t in range(steps):
                if controls[0, C_STOP]:
                    break
                # 1. the sample: reused draws, and new ones where the reused are too few
                db.keep_newest(int(self.reuse_ratio * per) * state.size)
                x_old, _, _, bg_old = db.sample()
                n_old = len(x_old)
                if terms_cache is not None and len(terms_cache[0]) >= n_old:
                    # the kept draws are the newest of the last iteration's, whose terms under these
                    # components its weights step computed: a third of an iteration's linear algebra
                    first = len(terms_cache[0]) - n_old
                    old_terms = (terms_cache[0][first:], terms_cache[1][:, first:])
                else:
                    old_terms = G.component_terms(x_old, state.means, state.chols)  # reused in step 2
                terms_cache = None
                if len(x_old):
                    lw = old_terms[0] - bg_old[:, None]
                    w = np.exp(lw - lw.max(axis=0))
                    n_eff = np.floor(w.sum(axis=0) ** 2 / (w**2).sum(axis=0)).astype(int)
                else:
                    n_eff = np.zeros(state.size, dtype=int)
                n_new = np.maximum(1, per - n_eff)
                if grad_cap is not None and counts["grads"] + n_new.sum() > grad_cap:
                    counts["status"] = STATUS_BUDGET
                    break
                x_new, lp_new, g_new, comp_new, stopped = draw_and_evaluate(n_new)
                if stopped:
                    break
                if len(x_new):
                    db.add(x_new, lp_new, g_new, np.bincount(comp_new, minlength=state.size), state.means,
                           state.chols)
                x, logp, grad, background = db.sample()
                if len(x) == 0:
                    counts["failed_steps"] += 1
                    continue
                # 2. the components' natural-gradient steps
                state.eps = improvement_step_sizes(state.eps, state.rewards, *EPS_RANGE)
                # the kept draws come first, then this iteration's: only the new ones' terms are computed
                new_terms = G.component_terms(x[len(x_old):], state.means, state.chols)
                log_q, grad_q, log_comp, prec_diff = G.mixture_from_terms(
                    np.concatenate([old_terms[0], new_terms[0]]), np.concatenate([old_terms[1], new_terms[1]], axis=1),
                    state.log_weights)
                grad_ratio = grad - grad_q
                for k in range(state.size):
                    g, h = G.stein_estimates(log_comp[:, k], background, prec_diff[k], grad_ratio, diagonal)
                    step = G.trust_region_update(state.means[k], state.chols[k], g, h, state.eps[k],
                                                 state.last_eta[k])
                    state.means[k], state.chols[k], state.last_eta[k] = step.mean, step.chol, step.eta
                    counts["failed_steps"] += not step.success
                # 3. the weights' step, from each component's E[log p - log q] after its step; the
                # step's (K, n, d) arrays are let go first, so that at most two are held at once
                old_terms = new_terms = prec_diff = grad_q = None
                terms_cache = G.component_terms(x, state.means, state.chols)
                log_comp = terms_cache[0]
                log_q = G.row_logsumexp(log_comp + state.log_weights)
                ratio = logp - log_q
                iw = log_comp - background[:, None]
                iw = np.exp(iw - G.row_logsumexp(iw.T)[None, :])
                expected = iw.T @ ratio
                elbo = float(state.weights @ expected)
                if len(elbo_trace) >= 2:  # the authors compare the last two iterations' ELBOs, before this one's
                    weight_eps = (min(1.15 * weight_eps, WEIGHT_EPS_RANGE[1]) if elbo_trace[-1] > elbo_trace[-2]
                                  else max(0.85 * weight_eps, WEIGHT_EPS_RANGE[0]))
                state.store_rewards(state.log_weights + expected)
                state.set_log_weights(G.weight_update(state.log_weights, expected, weight_eps))
                elbo_trace.append(elbo)
                size_trace.append(state.size)
                # 4. the number of components
                it = t + 1
                if self.adapt_components:
                    if it > self.delete_after and state.size > 1:
                        bad = stagnating_components(state, self.delete_after, self.min_weight)
                        if bad.any() and not bad.all():
                            state.remove(~bad)
                            terms_cache = None
                    if it > 1 and it % self.add_every == 0 and state.size < self.max_components:
                        mean, chol = new_component_location(state, db, counts["adds"], rng, start_entropy,
                                                           self.database_size)
                        state.add(math.log(INITIAL_WEIGHT), mean, chol)
                        terms_cache = None
                        counts["adds"] += 1
                counts["done"] = it
                controls[0, C_PROGRESS] = it
                if not (np.all(np.isfinite(state.means)) and np.all(np.isfinite(state.log_weights))):
                    counts["status"] = STATUS_NONFINITE
                    break
            return counts["done"]

        total = steps if budget.grad_evals is None else max(1, budget.grad_evals // per)
        # the products are small (d x d, a few hundred draws): BLAS threads fighting over the cores
        # cost 4x in wall time on a 2-core machine (measured on the three-peak benchmark, d = 100)
        with one_blas_thread():
            _, interrupted = run_in_threads(run_one, controls, total, self.progress, f"{self.name} on {target.name}",
                                            estimate_duration=budget.grad_evals is None)
        clock.stop()
        status = counts["status"]
        if status == STATUS_NONFINITE:
            raise ValueError(f"{self.name}: a component's mean or a weight became non-finite after "
                             f"{counts['done']} iterations on {target.name!r}")
        approx = (GaussianMixture(state.weights, state.means, state.chols) if diagonal
                  else FullCovarianceMixture(state.weights, state.means, state.chols))
        draws = np.stack([approx.sample(self.draws, rng) for _ in range(self.chains)])
        elbo = np.asarray(elbo_trace)
        tail = elbo[-min(len(elbo), 50):]
        messages, slope_info = fit_messages(elbo, status, 1e-4)
        if interrupted:
            messages.insert(0, f"interrupted after {counts['done']} iterations")
        if counts["nonfinite"]:
            messages.append(
                f"{counts['nonfinite']} of {counts['drawn']} draws of q ({counts['nonfinite'] / counts['drawn']:.1%}) "
                "met a NaN or infinite density or gradient and were left out of the estimates: that share of q's "
                "mass lies where the target is not finite")
        khat, khat_messages, khat_evals = pareto_check(target, approx, draws.reshape(-1, d), khat_draws)
        result = self.result(
            target, seed, draws, clock,
            grad_evals=counts["grads"] + khat_evals,
            approximation=approx,
            log_z=float(np.mean(tail)) if len(tail) else None,
            log_z_se=float(np.std(tail) / math.sqrt(len(tail))) if len(tail) > 1 else None,
            stats={"elbo": elbo, "n_components": np.asarray(size_trace, dtype=float)},
            messages=not_converged_first(messages + khat_messages),
            info={"status": int(status), "steps": counts["done"], "n_components": state.size,
                  "components_added": counts["adds"], "failed_component_steps": counts["failed_steps"],
                  "nonfinite_draws": counts["nonfinite"], "pareto_k": khat, "khat_grad_evals": khat_evals,
                  **slope_info},
        )
        result.interrupted = bool(interrupted)
        return result
