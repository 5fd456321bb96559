"""The microcanonical samplers: MCLMC (unadjusted) and MAMS (Metropolis adjusted).

Kernels in ``workbench/mcmc/microcanonical.py``, dynamics in ``workbench/mcmc/isokinetic.py``.
Each chain runs its tuning as a sequence of kernel calls, the schedule fixed before the loop,
as BlackJAX does (``blackjax/adaptation/mclmc_adaptation.py``, ``adjusted_mclmc_adaptation.py``):

MCLMC (Robnik, De Luca, Silverstein and Seljak 2023, sec. 4): three stages of ``warmup / 3``
steps each. (1) The step size from the energy error: Var[E] / d held at 5e-4; (2) the same,
while the draws' variances accumulate: they become the diagonal preconditioner, L becomes
sqrt(d) (the preconditioned posterior's size), and the step size re-tunes for a third of a
stage; (3) L = 0.4 eps (steps / ESS), the distance over which the chain decorrelates, from
ArviZ's ESS of that stage's draws. The sampler is unadjusted: its draws carry a bias that
grows with the step size. ``result.info["energy_var_per_dim"]`` reports the realised
Var[E] / d, the quantity that controls it.

MAMS (Robnik, Cohn-Gordon and Seljak 2025, sec. 4): the step by dual averaging toward an
acceptance of 0.9 (the authors' recommendation) throughout. Stage 1, half the warmup: L follows
the step, and the second half collects the draws and gradients of the diagonal preconditioner
(skipped where one is given); stage 2, a quarter: the step alone, for L = sqrt(d), the length
that spans the preconditioned posterior; stage 3: L lengthened from the chain's ESS per
transition, then the step again. The Metropolis test makes it exact for the target. By default
(``metric="auto"``) a run goes in phases that first choose the preconditioner
(``sampling/flow_metric.py``).

Both honour a gradient budget: the tuning stages take at most 40% of it, the rest samples.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..convergence import ess as bulk_ess
from ..errors import BudgetTooSmallError
from ..mcmc import isokinetic as I
from ..mcmc import microcanonical as K
from ..mcmc.adaptation import gradient_based_variance
from ..mcmc.affine import affine_target, dense_factor
from ..result import Budget, Result
from ..running.clock import PhasedClock
from ..running.method import Examples
from ..running.phases import Phases
from ..running.validation import check_positive, check_positive_int
from ..sampling.chain_sampler import ChainSampler, checked_inv_metric, deferred_chain_health, inv_metric_rows, start_chains
from ..sampling.flow_metric import run_flow
from ..target import Target

TUNING_SHARE = 0.4  # under a budget, the share the tuning stages may spend


class _ChainState:
    """One chain's state between kernel calls: position, velocity, preconditioner, the
    tuner's numbers, the variance sums, and what has been spent."""

    def __init__(self, x0, rng, budget):
        d = x0.size
        self.x = np.ascontiguousarray(x0, dtype=float).copy()
        self.u = np.empty(d)
        I.random_unit_vector(rng, self.u)
        self.sigma = np.ones(d)
        self.tune = np.array([0.0, 0.0, math.inf, 0.0, 0.0])
        self.welford = np.zeros((5, d))  # mean and M2 of x, then of grad log p, then the count
        self.rng = rng
        self.budget = budget  # per chain; -1: none
        self.grads = 0
        self.rows = 0

    def left(self, cap=None) -> int:
        """Gradients the next call may spend (-1: no limit)."""
        limit = self.budget if cap is None or self.budget < 0 else min(self.budget, cap)
        return -1 if limit < 0 else max(limit - self.grads, 0)

    def variances(self) -> np.ndarray:
        """The preconditioner's variances: sqrt(Var x / Var grad) per coordinate, the diagonal
        that minimises the Fisher divergence for a Gaussian (Seyboldt, Carlson and Carpenter
        2026; NUTS's "diag"), exact for a Gaussian from a handful of draws where Var x alone
        needs many effective ones (on a 100-d Gaussian the draws' variances left MAMS 10x
        less efficient)."""
        out = np.full(self.x.size, np.nan)  # NaN where a variance is zero: the caller keeps sigma
        if self.welford[4, 0] >= 3:
            gradient_based_variance(self.welford[1], self.welford[3], out)  # NUTS's own estimator
        return out


def _ess_per_coordinate(draws: np.ndarray) -> np.ndarray:
    """ArviZ's bulk ESS of one chain's draws (n, d), the finite positive values only (none
    below 20 draws): how fast the chain decorrelates, for the L stages of both samplers."""
    if len(draws) < 20:
        return np.zeros(0)
    ess = np.asarray(bulk_ess(draws[None]), dtype=float)
    return ess[np.isfinite(ess) & (ess > 0)]


@dataclass(frozen=True)
class _Microcanonical(ChainSampler):
    keeps_warmup_draws = False  # its tuning stages keep none: a run in phases learns from draws alone

    integrator: str = "minimal_norm"
    step_size: float | None = None
    L: float | None = None

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.integrator, str) or self.integrator not in I.INTEGRATORS:
            raise ValueError(f"integrator must be one of {sorted(I.INTEGRATORS)}, got {self.integrator!r}")
        check_positive("step_size", self.step_size, allow_none=True)
        check_positive("L", self.L, allow_none=True)

    def _call(self, chains, target, st, control, n, *, tune, collect=False, eps, big_l, warmup, draws=None,
              stats=None, thin=1, cap=None, l_over_eps=0.0):
        """One kernel call of ``n`` transitions; returns (done, step size after)."""
        if draws is None:  # a tuning stage keeps no draws
            draws, stats, thin = np.zeros((1, target.dim)), np.zeros((1, len(K.STAT_NAMES))), n + 1
        settings = K.microcanonical_settings(
            n_steps=n, adjusted=self._adjusted, integrator=I.INTEGRATORS[self.integrator], tune=tune,
            collect=collect, thin=thin, grad_budget=st.left(cap), progress_offset=st.rows, grads_offset=st.grads,
            warmup=warmup, step_size=eps, big_l=big_l, l_over_eps=l_over_eps, target_accept=getattr(self, "target_accept", 0.9),
            desired_energy_var=getattr(self, "desired_energy_var", 5e-4),
        )
        done, spent, eps = chains.kernel(target.kernel_logp_grad, target.kernel_data, st.x, st.u, st.sigma, st.rng,
                                         settings, st.tune, st.welford, draws, stats, control)
        st.grads += spent
        return done, eps

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        if target.dim < 2:
            raise ValueError(f"{self.name} needs a target of dimension >= 2 (its velocity lives on a sphere); "
                             f"{target.name!r} has {target.dim}")
        chains = start_chains(self, None if self._phased() else K.microcanonical_chain, target, seed, budget)
        return self._sample(chains)

    def _phased(self) -> bool:
        """Whether the run goes in phases (each a run of its own, which compiles its kernel)."""
        return False

    def _sample(self, chains) -> Result:
        """Tune and sample the chains set up by ``start_chains``."""
        target = chains.target
        chains.n_warmup = 0  # the tuning stages keep no draws
        per_chain = chains.grad_budget_per_chain
        states = [_ChainState(chains.x0[c], chains.rngs[c], per_chain) for c in range(self.chains)]
        inv = getattr(self, "inv_metric", None)
        if inv is not None:  # MAMS started on a given diagonal preconditioner
            for st, row in zip(states, inv_metric_rows(inv, target, self.chains)):
                st.sigma[:] = np.sqrt(row)
        tuned: list[dict] = [{} for _ in states]

        def run_chain(c, draws, stats, control):
            st = states[c]
            cap = None if per_chain < 0 else int(TUNING_SHARE * per_chain)
            eps, big_l = self._tune(chains, target, st, control, cap, tuned[c])
            warm = st.grads
            done, eps = self._call(chains, target, st, control, self.draws * self._thin, tune=K.TUNE_NONE,
                                   eps=eps, big_l=big_l, warmup=False, draws=draws, stats=stats, thin=self._thin)
            return done // self._thin, st.grads, warm, eps

        run = chains.sample(run_chain, len(K.STAT_NAMES))
        info = {"step_size": [t.get("step_size") for t in tuned], "L": [t.get("L") for t in tuned],
                "sigma": np.array([st.sigma for st in states]), "integrator": self.integrator}
        info.update(self._extra_info(run, tuned))
        return chains.result(run, K.STAT_NAMES, info=info)

    _adjusted = 0
    _thin = 1

    def _extra_info(self, run, tuned) -> dict:
        return {}


@dataclass(frozen=True)
class MCLMC(_Microcanonical):
    """Microcanonical Langevin Monte Carlo (Robnik, De Luca, Silverstein and Seljak 2023):
    isokinetic dynamics with a partial velocity refresh, no accept/reject; every step is a
    draw (``thin`` keeps every thin-th). Tuned as the module docstring says, within any
    gradient budget; ``step_size`` and ``L`` fix them instead. ``integrator``:
    ``"minimal_norm"`` (default, BlackJAX's) or ``"leapfrog"``. ``desired_energy_var``: the
    energy error per dimension the step size is tuned to (its bias grows with it).

    ``warmup`` counts tuning steps (default 600, three stages), ``draws`` the draws kept per
    chain (default 2,000).
    """

    family = "MCMC"
    colour, marker = "#888888", "8"
    examples = Examples(quick={"chains": 2, "warmup": 300, "draws": 2000}, budget=3000, long={"warmup": 30, "draws": 10**6})

    warmup: int = 600
    draws: int = 2000
    thin: int = 1
    desired_energy_var: float = 5e-4
    diagonal_preconditioning: bool = True

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("thin", self.thin)
        check_positive("desired_energy_var", self.desired_energy_var)

    @property
    def _thin(self) -> int:
        return self.thin

    def _tune(self, chains, target, st, control, cap, out) -> tuple[float, float]:
        d = target.dim
        eps = self.step_size or 0.25 * math.sqrt(d)
        big_l = self.L or math.sqrt(d)
        if self.step_size is not None and self.L is not None:
            out.update(step_size=eps, L=big_l)
            return eps, big_l
        stage = max(self.warmup // 3, 1) if self.warmup else 0
        tune = K.TUNE_NONE if self.step_size is not None else K.TUNE_ENERGY_VARIANCE
        if stage:
            _, eps = self._call(chains, target, st, control, stage, tune=tune, eps=eps, big_l=big_l, warmup=True, cap=cap)
            _, eps = self._call(chains, target, st, control, stage, tune=tune, collect=True, eps=eps, big_l=big_l,
                                warmup=True, cap=cap)
            var = st.variances()
            if self.diagonal_preconditioning and np.all(np.isfinite(var)) and np.all(var > 0):
                st.sigma[:] = np.sqrt(var)
                big_l = self.L or math.sqrt(d)
                st.tune[:] = (0.0, 0.0, math.inf, 0.0, 0.0)
                _, eps = self._call(chains, target, st, control, max(stage // 3, 1), tune=tune, eps=eps, big_l=big_l,
                                    warmup=True, cap=cap)
            elif self.L is None and np.all(np.isfinite(var)):
                big_l = math.sqrt(float(np.sum(var)))
            if self.L is None:  # L from how fast the chain decorrelates (ArviZ's ESS)
                draws, stats = np.zeros((stage, d)), np.zeros((stage, len(K.STAT_NAMES)))
                done, eps = self._call(chains, target, st, control, stage, tune=K.TUNE_NONE, eps=eps, big_l=big_l,
                                       warmup=True, draws=draws, stats=stats, cap=cap)
                ess = _ess_per_coordinate(draws[:done])
                if ess.size:  # BlackJAX's make_adaptation_L: L = 0.4 eps mean(steps / ESS)
                    big_l = 0.4 * eps * float(np.mean(done / ess))
                energy = stats[:done, K.S_ENERGY]
                out["energy_var_per_dim"] = float(np.var(energy) / d) if done > 1 else math.nan
        out.update(step_size=eps, L=big_l)
        return eps, big_l

    def _extra_info(self, run, tuned) -> dict:
        ev = [t.get("energy_var_per_dim", math.nan) for t in tuned]
        return {"energy_var_per_dim": ev}


@dataclass(frozen=True)
class MAMS(_Microcanonical):
    """Metropolis-adjusted microcanonical sampler (Robnik, Cohn-Gordon and Seljak 2025):
    each transition draws a fresh velocity, integrates a random number of isokinetic steps
    (about uniform on 1..2 L / eps - 1, with mean L / eps) and accepts or rejects the end on the
    energy error, kinetic change included, so it is exact for the target. Step size by dual
    averaging toward ``target_accept`` (0.9, the authors' recommendation; no cap at L: a longer
    step makes one-step transitions), and L, in stages (module docstring). ``draws`` counts the
    kept transitions (default 1,000), ``warmup`` the tuning ones (default 1,000 with
    ``metric="auto"`` or ``"flow"``, whose phases fit the preconditioner; 400 else, as NUTS's).

    ``metric="auto"`` (default): the preconditioner that the held-out Fisher divergence of the
    first draws ranks best, as NUTS's default ranks them: the diagonal one, a whitening by the
    covariance of those draws where the low-rank metric ranks first (MAMS's preconditioner is
    diagonal), or a flow (``sampling/flow_metric.py``). It passes posteriordb's standard at least
    as often as ``"diag"`` on every benchmark posterior, at no less ESS per gradient
    (``benchmarks/nuts_geometry.py --auto --mams``). ``"diag"``: the diagonal preconditioner
    learnt from the warmup's draws and gradients, L = sqrt(d) after it. ``"dense"``: half the
    warmup (and a quarter of it in draws) on the diagonal, then the whole run on the posterior
    whitened by the covariance of those draws (``mcmc/affine.py``). ``"flow"``: NUTS's flow
    phases with MAMS as the sampler, on a learned transform of a curved posterior.
    ``inv_metric``: a diagonal preconditioner's variances, (d,) or (chains, d), that the chains
    start on and the tuning keeps (it then skips its first stage, which learns one).
    """

    family = "MCMC"
    colour, marker = "#CC6677", "d"
    examples = Examples(quick={"chains": 2, "warmup": 200, "draws": 1000}, budget=3000, long={"warmup": 10, "draws": 10**6})

    warmup: int | None = None  # 1,000 with metric="flow" or "auto" (their phases fit the transform); else 400
    draws: int = 1000
    target_accept: float = 0.9
    tune_L: bool = True
    metric: str = "auto"
    inv_metric: np.ndarray | None = None

    _adjusted = 1
    # its preconditioner is diagonal: the flow phases (sampling/flow_metric.py) give it a fixed
    # diagonal as ``inv_metric`` and stand in a whitening for the low-rank metric
    _diagonal_preconditioner = True

    def __post_init__(self):
        if self.metric not in MAMS_METRICS:
            raise ValueError(f"metric must be one of {list(MAMS_METRICS)}, got {self.metric!r}")
        if self.warmup is None:
            object.__setattr__(self, "warmup", FLOW_WARMUP if self.metric in ("flow", "auto") else DEFAULT_WARMUP)
        super().__post_init__()
        if not (0.0 < self.target_accept < 1.0):
            raise ValueError(f"target_accept must lie in (0, 1), got {self.target_accept!r}")
        object.__setattr__(self, "inv_metric", checked_inv_metric(self.inv_metric))

    def _phased(self) -> bool:
        return self.metric != "diag"

    def _sample(self, chains) -> Result:
        if self.metric == "dense":
            return _dense_run(self, chains)
        if self.metric in ("flow", "auto"):
            return run_flow(self, chains)
        return super()._sample(chains)

    def _tune(self, chains, target, st, control, cap, out) -> tuple[float, float]:
        d = target.dim
        eps = self.step_size or math.sqrt(d) / 3.0
        big_l = self.L or math.sqrt(d)
        adapt = self.step_size is None
        tune = K.TUNE_DUAL_AVERAGING if adapt else K.TUNE_NONE
        fixed = self.inv_metric is not None
        # stage 1 learns the preconditioner; given one (metric="auto" where the diagonal fits), stages
        # 2 and 3 have the whole warmup (a stage 1 tuning the step alone was overhead: mams_auto.csv)
        half = 0 if fixed else self.warmup // 2

        def restart(step):
            st.tune[:] = (math.log(step), 0.0, 0.0, math.log(10.0 * step), 0.0)

        if self.warmup // 2:
            if fixed:
                big_l = self.L or math.sqrt(d)
            else:
                # stage 1: L follows the step while the step adapts, L / eps = 3, the 3 of eps's start
                # above (BlackJAX starts at 5; 2 and 5 there did no better by benchmarks/mams_step.py);
                # its second half collects the draws and gradients of the preconditioner
                restart(eps)
                quarter = max(half // 2, 1)
                ratio = 0.0 if self.L is not None else big_l / eps
                _, eps = self._call(chains, target, st, control, quarter, tune=tune, eps=eps, big_l=big_l,
                                    warmup=True, cap=cap, l_over_eps=ratio)
                _, eps = self._call(chains, target, st, control, half - quarter, tune=tune, collect=True, eps=eps,
                                    big_l=big_l, warmup=True, cap=cap, l_over_eps=ratio)
                var = st.variances()
                if np.all(np.isfinite(var)) and np.all(var > 0):
                    st.sigma[:] = np.sqrt(var)
                    big_l = self.L or math.sqrt(d)  # the preconditioned posterior's size
                    eps = eps / float(np.sqrt(np.mean(var))) if adapt else eps
                elif self.L is None:
                    big_l = ratio * eps
            # stage 2: the step alone, for the L and preconditioner of stage 1
            restart(eps)
            stage = (self.warmup - half) // 2 if self.tune_L else self.warmup - half
            _, eps = self._call(chains, target, st, control, stage, tune=tune, eps=eps, big_l=big_l, warmup=True,
                                cap=cap)
            if adapt and st.tune[4] > 0:
                eps = math.exp(st.tune[1])  # the dual-averaging average
            if self.tune_L and self.L is None:
                # stage 3: L from how many transitions the chain needs per effective draw
                # (BlackJAX's adjusted_mclmc_make_adaptation_L, l_factor 0.5, at most doubling L),
                # then the step again for it. Only ever lengthened: on a Gaussian the chain is
                # antithetic (ESS > draws) and the rule would halve L, which measured 2.7x less
                # ESS per gradient on the 100-d Gaussian
                n3 = max((self.warmup - half - stage) // 2, 1)
                draws, stats = np.zeros((n3, d)), np.zeros((n3, len(K.STAT_NAMES)))
                done, _ = self._call(chains, target, st, control, n3, tune=K.TUNE_NONE, eps=eps, big_l=big_l,
                                     warmup=True, draws=draws, stats=stats, cap=cap)
                ess = _ess_per_coordinate(draws[:done])
                if ess.size:  # effective draws per transition, averaged over coordinates
                    per_transition = float(np.mean(ess)) / done
                    big_l = max(big_l, min(0.5 * big_l / per_transition, 2.0 * big_l))
                restart(eps)
                _, eps = self._call(chains, target, st, control, self.warmup - half - stage - n3, tune=tune, eps=eps,
                                    big_l=big_l, warmup=True, cap=cap)
                if adapt and st.tune[4] > 0:
                    eps = math.exp(st.tune[1])
        out.update(step_size=eps, L=big_l)
        return eps, big_l


MAMS_METRICS = ("diag", "dense", "flow", "auto")
DEFAULT_WARMUP, FLOW_WARMUP = 400, 1000
DENSE_FIRST_SHARE = 1 / 3  # of a gradient budget: the diagonal phase's share, the rest the whitened run's


def _dense_run(method: MAMS, chains) -> Result:
    """MAMS(metric="dense"): a diagonal phase from the chains' starting points, then MAMS on
    x = m + C z, C from its draws."""
    target, seed, budget = chains.target, chains.seed, chains.budget
    started = chains.clock.started
    seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence([seed, 0xDE5E]).spawn(2)]
    first_warmup = max(method.warmup // 2, 20)
    phases = Phases(method, budget)
    phases.pay(chains.start_grad_evals)
    share = None if budget.grad_evals is None else int(DENSE_FIRST_SHARE * budget.grad_evals)
    r1 = phases.run(target, seeds[0], share, metric="diag", warmup=first_warmup, draws=max(method.warmup // 4, 20),
                    init=chains.x0)
    if r1.interrupted:  # Ctrl-C in the diagonal phase: that phase is the run
        return r1
    if r1.draws.shape[0] * r1.draws.shape[1] < 2:
        raise BudgetTooSmallError(f"grad_budget={budget.grad_evals} is too small for {method.name}(metric='dense') on "
                         f"{target.name!r}: its diagonal phase ({share} gradients) made no draws to whiten by; "
                         "give a larger budget or metric='diag'")
    mean, chol = dense_factor(r1.draws.reshape(-1, target.dim))
    z0 = np.linalg.solve(chol, (r1.draws[:, -1] - mean).T).T
    r2 = phases.run(affine_target(target, mean, chol), seeds[1], phases.rest(), metric="diag",
                    warmup=max(method.warmup - first_warmup, 20), draws=phases.draws, init=z0,
                    inv_metric=None)  # a given inv_metric is the posterior's scales, not the whitened one's
    draws = mean + r2.draws @ chol.T
    info = dict(r2.info)
    info["dense"] = {"mean": mean, "chol": chol, "first_grad_evals": r1.cost.grad_evals,
                     "first_draws": int(r1.draws.shape[0] * r1.draws.shape[1])}
    message = (f"metric='dense': whitened by the covariance of {info['dense']['first_draws']} draws of a diagonal "
               f"phase ({r1.cost.grad_evals:,} gradients, counted)")
    result = method.result(target, seed, draws,
                           PhasedClock(time.perf_counter() - started, phases.compile_seconds),
                           grad_evals=phases.spent,
                           warmup_grad_evals=r1.cost.grad_evals + r2.cost.warmup_grad_evals, stats=r2.stats,
                           messages=[message, *[m for m in r2.messages if not m.startswith("started from")]],
                           info=info, interrupted=bool(r1.interrupted or r2.interrupted))
    result.defer_health(deferred_chain_health(draws, r2.stats, identified=target.identified))
    return result
