"""``DADVI``: deterministic ADVI (Giordano, Ingram and Broderick, "Black Box Variational
Inference with a Deterministic Objective: Faster, More Accurate, and Even More Accurate",
JMLR 2024, arXiv 2304.05527). The objective kernel is ``workbench/vi/fixed_draws.py``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .. import modes as M
from ..approximations import Gaussian
from ..errors import NonFiniteDensityError
from ..fitting.health import PARETO_K_OK, PSISResampled, funnel_message, khat_reserve, pareto_check, without_reserve
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.method import Examples, Method
from ..running.threads import one_blas_thread, run_in_threads
from ..running.validation import check_positive, check_positive_int
from ..sampling.chain_sampler import initial_points
from ..target import Target
from ..vi import fixed_draws as FD

# above this many variational parameters the Hessian (one forward difference of the gradient per
# parameter, N gradients each) is not built: no linear response and no standard errors
HESSIAN_MAX_PARAMS = 400


@dataclass(frozen=True)
class DADVI(PSISResampled, Method):
    """Gaussian VI on a fixed set of base draws, optimised to convergence.

    Draw eta_1..N ~ N(0, I) once; the ELBO averaged over them is a deterministic function of
    q's parameters (``vi/fixed_draws.py``, the paper's eq. 5), minimised here by SciPy's
    trust-region Newton-CG (``trust-ncg``) with Hessian-vector products from forward
    differences of the gradient, as the paper and pymc-extras' ``fit_dadvi`` do (with exact
    second derivatives there). No learning rate, no schedule, and a convergence test that
    means something (the gradient's norm below ``gtol``): the reason to prefer it to
    stochastic ADVI, which on latent-variable models stops where its schedule ends.

    Parameters
    ----------
    n_draws : the fixed base draws N; None (default) gives the paper's 30 for the mean-field family
        and 10 d for the full-rank one. The full-rank objective needs N > d (with N <= d the free
        entries of L map every draw close to the mode and the fixed-draw ELBO is unbounded:
        N = 30 at d = 32 ran off to errors of 67 posterior sds), and even then its optimum on
        N(0, I) is L = R^-1 with R R^T = C, the draws' sample covariance (tested), whose
        variances are N / (N - d - 1) too large on average (N = 2 d at d = 5: sds up to 2.7x);
        10 d keeps that near 1.1 (sds about 5% high). The optimum's error in the means is
        O(1/sqrt(N)), reported in ``stats["mean_mcse"]``.
    antithetic : draw the base draws in pairs (eta, -eta) (default: for the mean-field family,
        not for the full-rank one). The pairs cancel the odd powers of eta in the objective, so
        the error of the optimum's means from the draws' own mean is gone: on a Gaussian
        posterior the mean-field optimum is then exact (the linear regression's worst mean
        error, N = 30, 2 seeds: 0.45 and 0.15 sd without, 0.016 with; the breast-cancer
        logistic regression: 0.31 and 0.38 without, 0.15 and 0.23 with, the rest being the
        mean-field family's own error there). The pairs are the independent units of the
        standard errors. The full-rank optimum is set by the draws' second moments (above),
        which the pairs estimate from N / 2 draws: its sds came out 0.43-0.76 off against
        0.23-0.28 without, so the full-rank family does not use them by default.
    full_rank : the full-rank family N(mu, L L^T) instead of the mean-field one (default).
    linear_response : the mean-field fit's covariance corrected by linear response (the paper's
        sec. 3.2: Cov_LR = (H^-1)_{mu mu}, H the objective's Hessian at the optimum), which recovers
        the posterior correlations and variances mean-field VI underestimates. Needs the Hessian:
        up to ``HESSIAN_MAX_PARAMS`` (400) parameters, i.e. d <= 200 mean-field.
    gtol : trust-ncg stops when the gradient's norm is below this.
    max_iter : Newton iterations at most.
    draws, chains : draws from q returned as ``Result.draws``.

    The start is the target's initial point with unit scales (ADVI's start), or where the
    density is not finite there, a point jittered around it by uniform(-2, 2) (as the
    samplers start, up to 100 tries, counted). ``result.stats``
    holds ``mean_mcse``, the Monte Carlo standard error of each posterior mean from the fixed
    draws (the sandwich H^-1 S H^-1 / N of the paper's sec. 3.3, S the draws' gradient
    covariance); ``info["converged"]`` says whether the gradient test was met. Every gradient
    of the optimiser, the Hessian and the k-hat check is counted.
    """

    family = "VI"
    colour, marker = "#DDCC77", "H"
    examples = Examples(quick={"draws": 300}, budget=600, long={"n_draws": 20_000})

    n_draws: int | None = None
    antithetic: bool | None = None
    full_rank: bool = False
    linear_response: bool = True
    gtol: float = 1e-5
    max_iter: int = 200
    draws: int = 4000
    psis: bool = False
    chains: int = 1

    def __post_init__(self):
        if self.n_draws is not None:
            check_positive_int("n_draws", self.n_draws, minimum=2)
        check_positive_int("max_iter", self.max_iter)
        check_positive_int("draws", self.draws)
        check_positive_int("chains", self.chains)
        check_positive("gtol", self.gtol)

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """The base draws (10 d x d for full rank), the parameters and their Hessian."""
        d = target.dim
        n = self.n_draws if self.n_draws is not None else (10 * d if self.full_rank else 30)
        p = FD.n_params(d, self.full_rank)
        return {"draws": 8 * self.chains * self.draws * d, "base draws": 8 * n * d, "parameters": 8 * 10 * p,
                "Hessian": 8 * 3 * p * p if p <= HESSIAN_MAX_PARAMS else 0}

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        khat_draws = khat_reserve(budget)
        budget = without_reserve(budget, khat_draws)
        clock = RunClock()
        d = target.dim
        kernel = clock.compile(FD.fixed_draws_objective, target)
        n_draws = self.n_draws if self.n_draws is not None else (10 * d if self.full_rank else 30)
        if self.full_rank and n_draws <= d:
            raise ValueError(f"{self.name}: full_rank=True needs n_draws > d = {d} (the fixed-draw objective of the "
                             f"full-rank family is unbounded with {n_draws} draws); give n_draws = {10 * d} or None")
        rng = chain_rngs(seed, 1)[0]
        if self._antithetic():
            if n_draws % 2:
                raise ValueError(f"{self.name}: antithetic draws come in pairs (eta, -eta), so n_draws must be even; "
                                 f"got {n_draws} (give {n_draws + 1}, or antithetic=False)")
            half = rng.standard_normal((n_draws // 2, d))
            eta = np.concatenate([half, -half])
        else:
            eta = rng.standard_normal((n_draws, d))
        objective = FD.FixedDrawsObjective(kernel, target, eta, self.full_rank,
                                           None if budget.grad_evals is None else budget.grad_evals - 1)
        # the initial point, or where it is not finite the shared jittered retries (counted)
        try:
            target.check_point(target.initial_point, what="initial point")
            x0, start_evals = target.initial_point, 1
        except NonFiniteDensityError:
            points, start_evals = initial_points(target, [rng], None, 2.0)
            x0, start_evals = points[0], start_evals + 1
        start = FD.pack(x0, np.eye(d), self.full_rank)
        messages: list[str] = []
        controls = np.zeros((1, 2), dtype=np.int64)
        objective.control = controls[0]

        def optimise(_):
            """The optimisation, on a thread: Ctrl-C in the main thread sets controls, the
            objective's kernel stops at its next draw and the best point reached is kept."""
            try:
                fit = optimize.minimize(objective.value_and_grad, start, jac=True, hessp=objective.hessp,
                                        method="trust-ncg", options={"gtol": self.gtol, "maxiter": self.max_iter})
            except FD.BudgetSpent:
                return objective.best[1], False, 0, "budget", None
            except FD.Stopped:
                return objective.best[1], False, 0, "stopped", None
            return fit.x, bool(fit.success), int(fit.nit), "done", fit

        (out,), interrupted = run_in_threads(optimise, controls, 1, False, f"{self.name} on {target.name}")
        lam, converged, iterations, how, fit = out
        budget_spent = how == "budget"
        interrupted = interrupted or how == "stopped"
        if fit is not None and not converged:
            messages.append(f"not converged: trust-ncg stopped after {iterations} iterations ({fit.message}); "
                            f"the gradient's norm is {np.linalg.norm(fit.jac):.3g} > gtol {self.gtol:g}")
        if interrupted:
            if lam is None:  # before the first evaluation ended: what it has is the start
                lam = start
            messages.append(f"interrupted by Ctrl-C: the fit is the best point the optimiser had reached "
                            f"({objective.grad_evals:,} gradients)")
        if lam is None:
            raise ValueError(f"{self.name}: the gradient budget ({budget.grad_evals}) is spent before one evaluation "
                             f"of the objective ({n_draws} gradients)")
        if budget_spent:
            messages.append(f"not converged: the gradient budget ({budget.grad_evals:,}) ended the optimisation; "
                            "the fit is the best point it reached")
        mean, chol = FD.unpack(lam, d, self.full_rank)
        approx = Gaussian.from_cholesky(mean, chol)
        info = {"converged": converged, "iterations": iterations, "n_draws": n_draws,
                "objective": float(objective.best[0])}
        stats = {}
        if lam.size <= HESSIAN_MAX_PARAMS and not (budget_spent or interrupted):
            try:
                approx, mcse = self._errors_and_covariance(objective, lam, approx, d, info, messages)
                stats["mean_mcse"] = mcse
            except FD.BudgetSpent:
                messages.append("the budget ended before the Hessian: no linear response, no standard errors")
        elif lam.size > HESSIAN_MAX_PARAMS:
            messages.append(f"{lam.size} variational parameters > {HESSIAN_MAX_PARAMS}: no linear response "
                            "covariance and no standard errors (the Hessian would cost a gradient per parameter "
                            "and draw)")
        clock.stop()
        draws = np.stack([approx.sample(self.draws, rng) for _ in range(self.chains)])
        khat, khat_messages, khat_evals = pareto_check(target, approx, draws.reshape(-1, d), khat_draws)
        info["pareto_k"], info["khat_grad_evals"] = khat, khat_evals
        spent = start_evals + objective.grad_evals + khat_evals
        funnel_evals = self._funnel_check(target, seed, budget, spent, khat, khat_messages, x0)
        info["funnel_check_grad_evals"] = funnel_evals
        if "mean_mcse" in stats:
            info["mean_mcse"] = stats["mean_mcse"]
        return self.result(
            target, seed, draws, clock,
            # the k-hat check's calls are paid from the budget
            grad_evals=spent + funnel_evals,
            logp_evals=spent + funnel_evals,
            approximation=approx,
            log_z=-float(objective.best[0]),  # the fixed-draw ELBO: a noisy lower bound on log Z
            stats=stats,
            messages=messages + khat_messages,
            info=info,
            interrupted=interrupted,
        )

    def _funnel_check(self, target: Target, seed: int, budget: Budget, spent: int, khat: float,
                      messages: list, x0: np.ndarray) -> int:
        """A fit that k-hat says is not good (> 0.5) on a posterior with no mode is the funnel's:
        one L-BFGS ascent from the fit's start ``x0`` (where the density is finite; as
        FullRankVI's start) tells, and the messages say so. Returns the gradients it spent
        (none on a good fit, or when the budget cannot pay for it)."""
        needed = M.min_grad_evals(target.dim)
        if not khat > PARETO_K_OK or (budget.grad_evals is not None and budget.grad_evals - spent < needed):
            return 0
        rng = M.search_rng(seed)
        with one_blas_thread():  # L-BFGS-B's small BLAS calls
            search = M.find_modes(target, rng, starts=0, max_grad_evals=needed, x0=x0)
        if search.fallback:
            messages.extend(funnel_message(khat, above=PARETO_K_OK))
        return search.grad_evals

    def _antithetic(self) -> bool:
        return (not self.full_rank) if self.antithetic is None else bool(self.antithetic)

    def _errors_and_covariance(self, objective, lam, approx, d, info, messages):
        """The Hessian at the optimum gives the linear-response covariance (mean-field) and,
        with the draws' gradient spread, the Monte Carlo standard errors of the means."""
        hess = objective.hessian(lam)
        try:
            inv = np.linalg.inv(hess)
        except np.linalg.LinAlgError:
            messages.append("the objective's Hessian at the optimum is singular: no linear response, no standard errors")
            return approx, np.full(d, math.nan)
        rows = objective.per_draw_gradients(lam)
        if self._antithetic():  # the independent units are the pairs (eta, -eta): their mean gradients
            half = rows.shape[0] // 2
            rows = 0.5 * (rows[:half] + rows[half:])
        spread = np.cov(rows, rowvar=False)
        sandwich = inv @ spread @ inv / rows.shape[0]
        mcse = np.sqrt(np.clip(np.diag(sandwich)[:d], 0.0, None))
        if self.linear_response and not self.full_rank:
            cov = 0.5 * (inv[:d, :d] + inv[:d, :d].T)
            try:
                approx = Gaussian(approx.mean, cov)
                info["linear_response"] = True
            except ValueError:
                messages.append("the linear-response covariance is not positive definite (the optimum is not a "
                                "minimum of the objective in every direction): q's own covariance is kept")
        return approx, mcse
