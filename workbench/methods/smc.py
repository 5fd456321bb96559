"""``SMC``: sequential Monte Carlo with adaptive tempering (Del Moral, Doucet and Jasra 2006),
the standard estimator of the evidence log Z and of how much mass sits in each mode.

The ladder (reweighting, the next temperature by bisection on the conditional ESS) is in
``workbench/smc/tempering.py``, the reference distribution in ``workbench/smc/reference.py``
and the compiled MCMC moves in ``workbench/smc/mutation.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..density_faults import original
from ..errors import BudgetTooSmallError, WorkbenchError
from ..fitting.importance_weights import log_evidence, resample
from ..jit import C_PROGRESS, C_STOP
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.faults import density_raised
from ..running.method import Examples, Method
from ..running.threads import run_in_threads
from ..running.validation import check_positive, check_positive_int
from ..smc import budget as B
from ..smc import health as H
from ..smc import mutation as M
from ..smc import tempering as T
from ..smc.reference import GaussianReference, as_reference, check_reference, diagonal_gaussian
from ..target import Target

# The step size's start, in units of the particles' sds: HMC's stable step shrinks as d^(-1/4)
# (Beskos et al. 2013), the random walk's optimal scale is 2.38 / sqrt(d) (Roberts, Gelman
# and Gilks 1997).
_START_STEP = {"hmc": lambda d: min(1.0, d ** -0.25), "rwm": lambda d: 2.38 / math.sqrt(d)}
# The acceptance rates the step size is adapted to (the optima of the papers above)
_TARGET_ACCEPT = {"hmc": 0.65, "rwm": 0.234}
# After each move log(step) moves by GAIN x (acceptance - target), by at most a factor of 2
STEP_ADAPTATION_GAIN = 1.5
_MAX_LOG_STEP_CHANGE = math.log(2.0)
# Progress is reported in thousandths of the ladder
_PROGRESS_UNITS = 1000


class SMCError(WorkbenchError, RuntimeError):
    """An SMC run could not go on: every particle's weight is zero."""


@dataclass(frozen=True)
class SMC(Method):
    """Tempered sequential Monte Carlo: particles from a reference p0 moved along the path
    p0^(1-b) p^b from b = 0 to b = 1.

    At each stage the next temperature is found by bisection so that the conditional ESS of
    the incremental weights (p / p0)^(b' - b) falls to ``ess_fraction`` of the particles
    (Zhou, Johansen and Aston 2016); the particles are reweighted, resampled (systematic)
    only when their ESS falls below ``resample_threshold`` x particles, and moved by
    ``mcmc_steps`` MCMC moves that leave the tempered density invariant: HMC with
    ``n_leapfrog`` leapfrog steps (``kernel="hmc"``) or a Gaussian random walk (``"rwm"``),
    preconditioned by the particles' covariance (the full covariance up to d = 200 when there
    are at least 5 d particles per half, else their variances; Buchholz, Chopin and Jacob
    2021), each half of the particles moved with the covariance of the other half (so that the
    kernel is fixed for the particles it moves; see ``split_halves``), and a step size adapted
    after each move toward acceptance 0.65 (HMC) or 0.234 (RWM).

    ``runs`` independent runs of ``particles`` particles each run on threads; their evidence
    estimates Z_r (each unbiased) give ``log_z`` = log mean Z_r and its standard error, the
    larger of the runs' spread (delta method) and the runs' own genealogy estimates (Lee and
    Whiteley 2018; ``info["log_z_se_parts"]`` has both; one run has the second only); their
    particles are pooled, weighted by Z_r, and resampled to ``runs`` x ``particles`` equally
    weighted draws.

    Parameters
    ----------
    particles : int
        Particles per run (>= 2).
    runs : int
        Independent runs (>= 1).
    kernel : {"hmc", "rwm"}
    mcmc_steps, max_mcmc_steps : int
        The fewest and the most MCMC moves per particle per stage. After ``mcmc_steps`` moves
        the particles move again while the correlation between their positions at the stage's
        start and now, averaged over coordinates, is above ``decorrelation`` (as PyMC's SMC
        kernels count their steps); under a gradient budget extra moves are made only while it
        leaves room for as many stages again as were made. On a multimodal target the
        particles cannot forget which peak they are in, so the stages run to ``max_mcmc_steps``:
        measured on 3-peak 50-d mixtures, that halved the mode-weight errors of 5 moves.
    decorrelation : float in [0, 1]
        See ``mcmc_steps``.
    n_leapfrog : int
        Leapfrog steps per HMC move (the step size is jittered by +-``jitter``).
    ess_fraction : float in (0, 1)
        The conditional ESS each temperature step keeps, as a fraction of the particles.
    resample_threshold : float in (0, 1]
        Resample when the ESS falls below this fraction of the particles.
    reference : None, "prior", "wide", "laplace", "pathfinder" or a Gaussian
        p0. None: the target's prior where it has one (``Target.prior``), else ``"wide"``:
        N(initial point, ``reference_sd``^2 I). ``"laplace"`` and ``"pathfinder"`` fit one
        first (its gradients are counted); a ``wb.approximations.Gaussian`` or
        ``LowRankGaussian`` (e.g. a fit's ``approximation``) is used as given. A reference
        should be wider than the posterior: tempering cannot find mass p0 does not cover.
    reference_sd : float
        The sd of the wide reference.
    metric : {"auto", "dense", "diag"}
        What the moves are preconditioned with: the particles' full covariance ("dense"), their
        variances ("diag"), or "auto": dense up to d = 200 with at least 5 d particles per half.

    Cost: one gradient evaluation per particle at the start, one per leapfrog step (HMC) or
    move (RWM). Under a gradient budget a pilot run prices a particle's ladder and the
    particles are cut to what finishes (``smc/budget.py``; said in ``messages``), or the
    budget is refused at the start; a run that still cannot pay its next stage jumps to b = 1
    by reweighting alone (an importance step, "ladder incomplete") and ends.

    Why these defaults: many cheap moves beat few long ones, and small temperature steps
    (conditional ESS 0.9) beat large ones, in the spread of log Z and of a mixture's mode
    weights at equal cost (the evidence study shows the spread).

    Result: ``draws`` (1, runs x particles, d); ``log_z``, ``log_z_se``; ``stats`` one row
    per stage of every run (``run``, ``beta``, ``ess`` after reweighting as a fraction,
    ``resampled``, ``acceptance``, ``step_size``, ``log_z_increment``, ``moves``,
    ``correlation``); ``info`` each run's
    log Z, stages and counts, and the reference used.
    """

    family = "importance and SMC"
    colour, marker = "#AA4499", "p"
    examples = Examples(quick={"particles": 100}, budget=200_000, long={"particles": 20_000})

    particles: int = 2000
    runs: int = 4
    kernel: str = "hmc"
    mcmc_steps: int = 5
    n_leapfrog: int = 3
    jitter: float = 0.3
    ess_fraction: float = 0.9
    resample_threshold: float = 0.5
    reference: Any = None
    reference_sd: float = 10.0
    metric: str = "auto"
    max_mcmc_steps: int = 20
    decorrelation: float = 0.1
    progress: bool | None = None

    def __post_init__(self):
        check_positive_int("particles", self.particles, minimum=2)
        check_positive_int("runs", self.runs)
        check_positive_int("mcmc_steps", self.mcmc_steps)
        check_positive_int("max_mcmc_steps", self.max_mcmc_steps)
        if self.max_mcmc_steps < self.mcmc_steps:
            raise ValueError(f"max_mcmc_steps ({self.max_mcmc_steps}) must be at least mcmc_steps ({self.mcmc_steps})")
        if not (isinstance(self.decorrelation, (int, float)) and 0.0 <= self.decorrelation <= 1.0):
            raise ValueError(f"decorrelation must lie in [0, 1], got {self.decorrelation!r}")
        check_positive_int("n_leapfrog", self.n_leapfrog)
        check_positive("reference_sd", self.reference_sd)
        if not isinstance(self.kernel, str) or self.kernel not in M.KERNELS:
            raise ValueError(f"kernel must be one of {sorted(M.KERNELS)}, got {self.kernel!r}")
        if not (isinstance(self.ess_fraction, (int, float)) and 0.0 < self.ess_fraction < 1.0):
            raise ValueError(f"ess_fraction must lie in (0, 1), got {self.ess_fraction!r}")
        if not (isinstance(self.resample_threshold, (int, float)) and 0.0 < self.resample_threshold <= 1.0):
            raise ValueError(f"resample_threshold must lie in (0, 1], got {self.resample_threshold!r}")
        if not (isinstance(self.jitter, (int, float)) and 0.0 <= self.jitter < 1.0):
            raise ValueError(f"jitter must lie in [0, 1), got {self.jitter!r}")
        if self.metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {self.metric!r}")
        if isinstance(self.reference, str) and self.reference not in ("prior", "wide", "laplace", "pathfinder"):
            raise ValueError(f"reference must be None, 'prior', 'wide', 'laplace', 'pathfinder' or a Gaussian, "
                             f"got {self.reference!r}")
        if self.reference is not None and not isinstance(self.reference, str):
            check_reference(self.reference)

    # -- the reference ---------------------------------------------------------------------

    def _reference(self, target: Target, seed: int, budget: Budget) -> tuple[GaussianReference, int]:
        """(p0, gradient evaluations spent fitting it)."""
        choice = self.reference
        if choice is None:
            choice = "prior" if target.prior is not None else "wide"
        if choice == "prior":
            if target.prior is None:
                raise ValueError(f"reference='prior' but target {target.name!r} has no prior (Target.prior); "
                                 "use reference='wide', 'laplace', 'pathfinder' or give a Gaussian")
            return as_reference(target.prior, target.dim, f"the prior of {target.name}"), 0
        if choice == "wide":
            return diagonal_gaussian(target.initial_point, self.reference_sd,
                                     f"N(initial point, {self.reference_sd:g}^2 I)"), 0
        if choice in ("laplace", "pathfinder"):
            from .laplace import Laplace
            from .pathfinder import Pathfinder

            sub_seed = int(np.random.SeedSequence([seed, 0x53AC]).generate_state(1)[0])
            share = None if budget.grad_evals is None else max(budget.grad_evals // 10, 20)
            fit = (Laplace(draws=1) if choice == "laplace" else Pathfinder(draws=1, progress=False)).run(
                target, seed=sub_seed, grad_budget=None if choice == "laplace" else share)
            return as_reference(fit.approximation, target.dim, f"a {choice.capitalize()} fit"), fit.cost.grad_evals
        return as_reference(choice, target.dim, "the given reference"), 0

    # -- one run -----------------------------------------------------------------------------

    def _stage_cost(self, particles: int) -> int:
        """The gradient evaluations one stage's moves of ``particles`` particles cost at most."""
        per_move = self.n_leapfrog if self.kernel == "hmc" else 1
        return particles * self.mcmc_steps * per_move

    def _one_run(self, target: Target, ref: GaussianReference, rng, limit: int | None, control,
                 particles: int | None = None) -> dict:
        """One tempered SMC run of ``particles`` particles (default ``self.particles``); returns
        its particles, weights, log Z and per-stage statistics."""
        n, d = particles or self.particles, target.dim
        mutate = M.mutate.for_target(target)
        x = ref.sample(n, rng)
        grads = np.empty((n, d))
        lp = np.empty(n)
        done = M.evaluate.for_target(target)(target.kernel_logp_grad, target.kernel_data, x, grads, lp, control)
        if done < n:  # Ctrl-C while the particles were first evaluated: the run is those evaluated
            if done == 0:  # one particle, so the run still ends with a (poor) answer
                lp[0], grads[0] = target.logp_and_grad(x[0])
                done = 1
            n, x, grads, lp = done, x[:done], grads[:done], lp[:done]
        lp0 = ref.logpdf(x)
        nan_start = int(np.isnan(lp).sum())
        if nan_start == n:
            raise SMCError(f"{self.name}: the density of {target.name!r} is NaN at all {n} particles drawn from "
                           f"the reference ({ref.description}); check the density, or give a reference nearer its mass")
        counts = np.zeros(3, dtype=np.int64)
        counts[M.C_GRADS] = n
        counts[M.C_NAN] = nan_start
        log_w = np.full(n, -math.log(n))
        beta, log_z = 0.0, 0.0
        eve, resamplings = np.arange(n), 0  # each particle's ancestor at the start, for the variance of Z
        distinct = n  # the distinct particles the last resampling kept
        step = _START_STEP[self.kernel](d)
        settings = M.mutation_settings(kind=M.KERNELS[self.kernel], n_leapfrog=self.n_leapfrog, mcmc_steps=1,
                                       step=step, jitter=self.jitter)
        inv_mass = np.ones(d)
        dense = self.metric == "dense" or (
            self.metric == "auto" and d <= DENSE_METRIC_MAX_DIM and n // 2 >= METRIC_PARTICLES_PER_DIM * d)
        stages = {k: [] for k in ("beta", "ess", "resampled", "acceptance", "step_size", "log_z_increment", "moves",
                                  "correlation")}
        jumped = interrupted = False
        while beta < 1.0:
            if control[C_STOP] != 0:
                interrupted = True
            increment = lp - lp0
            # after resampling every particle moves, so a stage may cost as much as all of them
            can_pay = limit is None or counts[M.C_GRADS] + self._stage_cost(n) <= limit
            if can_pay and not interrupted:
                new_beta = T.next_temperature(beta, log_w, increment, self.ess_fraction)
            else:  # finish by reweighting alone: an importance step from pi_beta to p
                new_beta, jumped = 1.0, True
            log_w, log_ratio = T.reweight(log_w, increment, new_beta - beta)
            if not math.isfinite(log_ratio):
                raise SMCError(
                    f"{self.name}: every particle's weight is zero at b = {new_beta:.4g} on {target.name!r} "
                    f"(the density is -inf or NaN wherever the particles are); give a reference nearer its mass")
            log_z += log_ratio
            log_w = T.normalise(log_w)
            beta = new_beta
            ess = T.ess_fraction(log_w)
            resampled = ess < self.resample_threshold
            if resampled:
                idx = resample(log_w, n, rng, "systematic")
                distinct = int(np.unique(idx).size)
                x, grads, lp, lp0, eve = x[idx], grads[idx], lp[idx], lp0[idx], eve[idx]
                resamplings += 1
                log_w = np.full(n, -math.log(n))
            acceptance, moves, correlation = math.nan, 0, math.nan
            if not jumped:
                # extra moves leave the budget room for as many stages again as were made
                room = None if limit is None else limit - len(stages["beta"]) * self._stage_cost(n)
                acceptance, moves, correlation, step, inv_mass = self._move(
                    target, mutate, ref, x, grads, lp, lp0, log_w, rng, beta, step, inv_mass, settings, dense, room,
                    control, counts)
            for key, value in (("beta", beta), ("ess", ess), ("resampled", float(resampled)),
                               ("acceptance", acceptance), ("step_size", step), ("log_z_increment", log_ratio),
                               ("moves", moves), ("correlation", correlation)):
                stages[key].append(value)
            control[C_PROGRESS] = int(_PROGRESS_UNITS * beta)
        return {"x": x, "log_w": log_w, "log_z": log_z, "stages": stages, "jumped": jumped,
                "distinct": distinct, "ancestors": int(np.unique(eve).size),
                "relative_variance": eve_relative_variance(eve, log_w, resamplings),
                "interrupted": interrupted, "grad_evals": int(counts[M.C_GRADS]),
                "proposals": int(counts[M.C_PROPOSALS]), "nan_evals": int(counts[M.C_NAN]), "nan_start": nan_start}

    def _move(self, target, mutate, ref, x, grads, lp, lp0, log_w, rng, beta, step, inv_mass, settings, dense, limit,
              control, counts) -> tuple[float, int, float, float, np.ndarray]:
        """One stage's moves, in place: at least ``mcmc_steps``, then more until the particles
        have decorrelated from where the stage started (see ``decorrelation``), at most
        ``max_mcmc_steps``; the extra moves never pass ``limit`` gradients. Returns (mean
        acceptance, moves, the last correlation, the adapted step, the last variances: kept
        where the particles collapse)."""
        n = x.shape[0]
        start = x.copy()
        accepted, moves, correlation = 0.0, 0, math.nan
        per_move = self._stage_cost(n) // self.mcmc_steps
        while moves < self.max_mcmc_steps:
            if moves >= self.mcmc_steps:
                correlation = M.stage_correlation(start, x, log_w)
                if correlation < self.decorrelation or (limit is not None and counts[M.C_GRADS] + per_move > limit):
                    break
            proposals = counts[M.C_PROPOSALS]
            accept_sum = 0.0
            for moving, other in M.split_halves(n):  # each half moves with the other half's metric
                inv_mass, chol = M.particle_metric(x[other], log_w[other], inv_mass, dense)
                accept_sum += mutate(target.kernel_logp_grad, target.kernel_data, x[moving], grads[moving], lp[moving],
                                     lp0[moving], log_w[moving], rng, beta, ref.mean, ref.precision, ref.log_norm,
                                     inv_mass, chol, settings._replace(step=step), control, counts)
            made = counts[M.C_PROPOSALS] - proposals
            if not made:
                break
            moves += 1
            accepted += accept_sum / made
            # the step adapts after each move, by at most a factor of 2
            change = STEP_ADAPTATION_GAIN * (accept_sum / made - _TARGET_ACCEPT[self.kernel])
            step *= math.exp(max(-_MAX_LOG_STEP_CHANGE, min(_MAX_LOG_STEP_CHANGE, change)))
        if moves == self.max_mcmc_steps:
            correlation = M.stage_correlation(start, x, log_w)
        return (accepted / moves if moves else math.nan), moves, correlation, step, inv_mass

    # -- the method ----------------------------------------------------------------------------

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """Each run's particles, their gradients and their resampled copies."""
        return {"particles": 8 * 4 * self.runs * self.particles * target.dim}

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        clock = RunClock()
        clock.compile(M.mutate, target)
        clock.compile(M.evaluate, target)
        ref, reference_evals = self._reference(target, seed, budget)
        limit, particles, pilot_evals, sizing_message = None, self.particles, 0, None
        if budget.grad_evals is not None:
            what = f"{self.name}(particles={self.particles}, runs={self.runs}) on {target.name!r}"
            available = budget.grad_evals - reference_evals
            needed = B.PILOT_MIN + self._stage_cost(B.PILOT_MIN)
            if B.PILOT_SHARE * available < needed:
                raise BudgetTooSmallError(
                    f"grad_budget={budget.grad_evals} is too small for {what}: the pilot run that sizes the runs to "
                    f"the budget needs at least {needed} gradient evaluations (one per particle and one stage of "
                    f"moves), {B.PILOT_SHARE:.0%} of the budget"
                    f"{f' after {reference_evals} for the reference' if reference_evals else ''}; "
                    "give a larger budget, or fewer mcmc_steps or n_leapfrog")
            pilot_rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5170]))

            def run_pilot(n, cap):
                return self._one_run(target, ref, pilot_rng, cap, np.zeros(2, dtype=np.int64), particles=n)

            particles, pilot_evals, sizing_message = B.size_for_budget(run_pilot, self.particles, self.runs,
                                                                       available, what)
            limit = (available - pilot_evals) // self.runs
        rngs = chain_rngs(seed, self.runs)
        controls = np.zeros((self.runs, 2), dtype=np.int64)
        def one_run(r):
            try:
                return self._one_run(target, ref, rngs[r], limit, controls[r], particles)
            except (WorkbenchError, KeyboardInterrupt, np.linalg.LinAlgError):
                raise
            except Exception as exc:  # the user's density raised in a compiled kernel (ours raise nothing)
                raise density_raised(self.name, target, exc, r, int(controls[r, C_PROGRESS]) + 1, ref.mean,
                                     "run") from original(exc)

        outputs, interrupted = run_in_threads(
            one_run,
            controls, _PROGRESS_UNITS, self.progress, f"{self.name} on {target.name}",
            estimate_duration=False,  # the progress is the temperature, which grows faster as it goes
        )
        log_zs = np.array([o["log_z"] for o in outputs])
        log_z, log_z_se, se_parts = _evidence_and_error(log_zs, np.array([o["relative_variance"] for o in outputs]))
        # pool the runs: particle i of run r has weight Z_r W_ri
        pooled_x = np.concatenate([o["x"] for o in outputs])
        pooled_w = np.concatenate([o["log_w"] + o["log_z"] for o in outputs])
        n_draws = particles * self.runs
        draws = pooled_x[resample(pooled_w, n_draws, rngs[0], "systematic")]
        clock.stop()

        stats = {key: np.concatenate([np.asarray(o["stages"][key], dtype=float) for o in outputs])
                 for key in outputs[0]["stages"]}
        stats["run"] = np.concatenate([np.full(len(o["stages"]["beta"]), r, dtype=float) for r, o in enumerate(outputs)])
        messages = ([sizing_message] if sizing_message else []) + H.run_messages(outputs, interrupted, self.runs)
        # its own health: too few particles, and independent runs that disagree (smc/health.py)
        messages += H.few_particles_message(particles, target.dim)
        quantities = target.identified if target.identified is not None else (lambda x: x)
        names = target.identified.names if target.identified is not None else target.param_names
        chi = H.runs_disagreement([quantities(o["x"]) for o in outputs], [o["log_w"] for o in outputs])
        messages += H.disagreement_message(chi, names) + H.stuck_moves_message(outputs)
        spent = reference_evals + pilot_evals + sum(o["grad_evals"] for o in outputs)
        runs_info = [{"log_z": o["log_z"], "stages": len(o["stages"]["beta"]), "grad_evals": o["grad_evals"],
                      "jumped_to_end": o["jumped"], "nan_evals": o["nan_evals"],
                      "relative_variance": o["relative_variance"],
                      "final_ess": o["stages"]["ess"][-1], "distinct_particles": o["distinct"],
                      "ancestors": o["ancestors"]} for o in outputs]
        return self.result(
            target, seed, draws[None], clock,
            grad_evals=spent,
            log_z=log_z, log_z_se=log_z_se,
            stats=stats,
            messages=messages,
            info={"runs": runs_info, "log_z_runs": log_zs, "reference": ref.description,
                  "reference_grad_evals": reference_evals, "log_z_se_parts": se_parts,
                  "particles": particles, "pilot_grad_evals": pilot_evals, "runs_disagreement": chi,
                  "stages": [len(o["stages"]["beta"]) for o in outputs]},
            interrupted=bool(interrupted or any(o["interrupted"] for o in outputs)),
        )


METRICS = ("auto", "dense", "diag")
DENSE_METRIC_MAX_DIM = 200
"""Up to this dimension the moves are preconditioned by the particles' full covariance (O(d^2) a
leapfrog step), above it by their variances; either way only when each half of the particles
has at least ``METRIC_PARTICLES_PER_DIM`` particles per dimension to estimate it from."""
METRIC_PARTICLES_PER_DIM = 5


def _evidence_and_error(log_zs: np.ndarray, relative_variances: np.ndarray) -> tuple[float, float | None, dict]:
    """log of the runs' mean Z-hat and its standard error: the larger of two estimates. The runs'
    spread (delta method) has R - 1 degrees of freedom, so with 4 runs the z-scores it gives are
    t-distributed with 3 (sd 1.7, and 4 when the runs happen to agree); each run's genealogy
    estimate (``eve_relative_variance``) is steady but, measured on correlated Gaussians, about
    half the runs' spread in sd (the adaptive temperatures add variance it does not see). The
    larger of the two is a floor under the lucky agreements: with it the z-scores against the
    exact log Z have sd near 1 (``tests/statistical/test_smc.py`` checks log Z within 3 of them)."""
    z = np.exp(log_zs - log_zs.max())
    within = float(np.sqrt(np.sum(z * z * np.clip(relative_variances, 0.0, None))) / z.sum())
    if log_zs.size > 1:
        log_z, between = log_evidence(log_zs)
    else:
        log_z, between = float(log_zs[0]), math.nan
    se = max(between, within) if math.isfinite(between) else (within if math.isfinite(within) else None)
    return log_z, se, {"runs_spread": between, "genealogy": within}


def eve_relative_variance(eve: np.ndarray, log_w: np.ndarray, resamplings: int) -> float:
    """Var(Z-hat) / Z^2 of one run from its genealogy (Lee and Whiteley 2018, Biometrika 105(3),
    Theorem 1; Chan and Lai 2013): 1 - (N / (N - 1))^(m + 1) (1 - sum_k S_k^2), S_k the final
    weight of the particles descended from start particle k, m the resamplings (the first draw
    from the reference counts as one more). Without resampling it is importance sampling's
    (N sum W^2 - 1) / (N - 1)."""
    n = eve.size
    w = np.exp(log_w - log_w.max())
    shares = np.bincount(eve, weights=w / w.sum(), minlength=n)
    return float(1.0 - (n / (n - 1.0)) ** (resamplings + 1) * (1.0 - shares @ shares)) if n > 1 else math.nan
