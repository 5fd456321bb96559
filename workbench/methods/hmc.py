"""Hamiltonian Monte Carlo samplers: ``HMC`` (fixed number of leapfrog steps) and ``NUTS``.

Both run ``workbench.mcmc.chains.hamiltonian_chain`` (``hamiltonian_chain_diag`` under a diagonal
metric): one compiled kernel per chain, on
threads, with dual-averaging step-size adaptation and metric (mass matrix) adaptation
during warmup, as ``metric`` says (``workbench/mcmc/adaptation.py``):

- ``"diag"`` (default): the diagonal from the draws' and gradients' variances;
- ``"diag_stan"``: Stan's windowed variances (formerly ``adapt_mass="stan"``);
- ``"low_rank"``: diagonal plus a low-rank correction (Seyboldt, Carlson & Carpenter 2026),
  for correlated posteriors;
- ``"dense"``: the full matrix, for d up to a few hundred;
- ``"identity"``: no metric adaptation.

``benchmarks/mcmc_speed.py`` measures them side by side.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..mcmc import adaptation as A
from ..mcmc import chains as K
from ..mcmc.metric import inverse_metric, metric_transform
from ..result import Budget, Result
from ..running.method import Examples
from ..running.threads import one_blas_thread
from ..running.validation import check_positive, check_positive_int
from ..sampling.chain_sampler import ChainSampler, Start, checked_inv_metric, inv_metric_rows, start_chains
from ..sampling.flow_metric import run_flow
from ..target import Target

WALNUTS_MAX_HALVINGS = 5  # a WALNUTS leaf takes 1, 2, ..., 32 micro steps (nuts-rs's default)

# the deprecated ``adapt_mass`` names and the metrics they mean
_ADAPT_MASS_NAMES = {"gradient": "diag", "stan": "diag_stan", "none": "identity"}



def _physical_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


METRIC_NAMES = (*A.METRICS, "flow", "auto")
DEFAULT_WARMUP = 400
FLOW_WARMUP = 1000
"""The metrics a Hamiltonian sampler takes: the kernel's (``mcmc/adaptation.py``), ``"flow"``, a
learned transform, and ``"auto"``, whichever of the diagonal, low-rank and flow preconditioners has
the lowest Fisher divergence on the first warmup draws (``sampling/flow_metric.py``)."""

WARMUP_SHARE = 0.4
"""Under a gradient budget, the share warmup may spend before sampling starts."""


def budget_limits(grad_budget: int, n_draws: int, max_depth: int) -> dict:
    """How a per-chain gradient budget shapes a run, decided before it starts, so that every
    budget buys draws: warmup ends once it has spent ``WARMUP_SHARE`` of the budget; a
    warmup tree may cost at most 5% of it; a sampling tree at most what leaves room for
    ``min(draws, 200, max(20, budget / 125))`` draws (20 per chain at 2,500 gradients, 200
    at 25,000). Without a budget: no limits (``max_depth`` throughout)."""
    if grad_budget < 0:
        return {"warmup_grad_cap": -1, "warmup_max_depth": max_depth, "max_depth": max_depth}
    min_draws = max(1, min(n_draws, 200, max(20, grad_budget // 125)))
    sampling = (1.0 - WARMUP_SHARE) * grad_budget
    return {
        "warmup_grad_cap": int(WARMUP_SHARE * grad_budget),
        "warmup_max_depth": max(1, min(max_depth, int(math.log2(0.05 * grad_budget + 1)))),
        "max_depth": max(1, min(max_depth, int(math.log2(sampling / min_draws + 1)))),
    }


@dataclass(frozen=True)
class _Hamiltonian(ChainSampler):
    step_size: float | None = None
    target_accept: float = 0.8
    metric: str = "diag"
    metric_rank: int | None = None
    metric_cutoff: float = 2.0
    metric_gamma: float = 1e-5
    max_energy_error: float = 1000.0
    inv_metric: np.ndarray | None = None
    adapt_mass: str | None = None  # deprecated: use ``metric``

    def __post_init__(self):
        super().__post_init__()
        if self.step_size is not None and not (self.step_size > 0 and math.isfinite(self.step_size)):
            raise ValueError(f"step_size must be > 0 (or None to find one), got {self.step_size!r}")
        if not (0.0 < self.target_accept < 1.0):
            raise ValueError(f"target_accept must lie in (0, 1), got {self.target_accept!r}")
        if self.adapt_mass is not None:
            if not isinstance(self.adapt_mass, str) or self.adapt_mass not in _ADAPT_MASS_NAMES:
                raise ValueError(f"adapt_mass must be one of {sorted(_ADAPT_MASS_NAMES)}, got {self.adapt_mass!r} "
                                 f"(adapt_mass is deprecated: use metric={sorted(A.METRICS)})")
            implied = _ADAPT_MASS_NAMES[self.adapt_mass]
            if self.metric not in ("diag", implied):
                raise ValueError(f"adapt_mass={self.adapt_mass!r} and metric={self.metric!r} disagree; "
                                 "give metric alone (adapt_mass is deprecated)")
            warnings.warn(f"adapt_mass={self.adapt_mass!r} is deprecated: use metric={implied!r}",
                          DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "metric", implied)
            object.__setattr__(self, "adapt_mass", None)
        if not isinstance(self.metric, str) or self.metric not in METRIC_NAMES:
            raise ValueError(f"metric must be one of {sorted(METRIC_NAMES)}, got {self.metric!r}")
        if self.metric in ("flow", "auto") and self.warmup == 0:
            raise ValueError(f"metric={self.metric!r} fits its preconditioner during warmup, so it needs warmup > 0 "
                             "(got warmup=0): give a warmup, or metric='identity' to sample without adaptation")
        if self.metric_rank is not None:
            check_positive_int("metric_rank", self.metric_rank)
        if isinstance(self.metric_cutoff, bool) or not (isinstance(self.metric_cutoff, (int, float, np.number))
                                                        and math.isfinite(self.metric_cutoff) and self.metric_cutoff > 1):
            raise ValueError(f"metric_cutoff must be a finite number > 1 (eigenvalues within [1/cutoff, cutoff] "
                             f"are left to the diagonal), got {self.metric_cutoff!r}")
        if isinstance(self.metric_gamma, bool) or not (isinstance(self.metric_gamma, (int, float, np.number))
                                                       and math.isfinite(self.metric_gamma) and self.metric_gamma > 0):
            raise ValueError(f"metric_gamma must be a finite number > 0, got {self.metric_gamma!r}")
        if not self.max_energy_error > 0:
            raise ValueError(f"max_energy_error must be > 0, got {self.max_energy_error!r}")
        object.__setattr__(self, "inv_metric", checked_inv_metric(self.inv_metric))

    # subclasses fill these in
    def _algorithm_settings(self) -> tuple[int, int, int, float]:  # pragma: no cover
        raise NotImplementedError

    def _raises_target(self) -> bool:
        return False

    def _walnuts_settings(self) -> tuple[float, int]:
        """(the energy error a WALNUTS leaf may reach, its step halvings at most); -1: plain."""
        return 0.0, -1

    def _pathfinder_start(self, target: Target, seed: int, budget: Budget) -> Start:
        """``init="pathfinder"``: each chain starts at its own draw from single-path Pathfinder's
        Gaussian, and the diagonal metric at that Gaussian's variances (BlackJAX's and Stan's
        Pathfinder initialisation). Under a gradient budget Pathfinder may spend a tenth of it."""
        from .pathfinder import Pathfinder

        share = None if budget.grad_evals is None else max(budget.grad_evals // 10, 20)
        fit = Pathfinder(draws=self.chains, progress=False).run(
            target, seed=int(np.random.SeedSequence([seed, 0x9A7F]).generate_state(1)[0]), grad_budget=share)
        draws = fit.draws[0]
        for c in range(self.chains):
            target.check_point(draws[c], what=f"starting point of chain {c} (a Pathfinder draw)")
        spent = fit.cost.grad_evals
        return Start(np.ascontiguousarray(draws), fit.approximation.sd ** 2, spent,
                     f"started from Pathfinder draws and its variances ({spent} gradients)",
                     {"pathfinder_grad_evals": spent}, fit.cost.wall_seconds, fit.cost.compile_seconds)

    def _max_rank(self, dim: int, window_capacity: int) -> int:
        """Eigen-directions the metric may hold: the setting (checked against ``dim``), at
        most the span of the largest window's draws and gradients; the dense metric all ``dim``."""
        if self.metric_rank is not None and self.metric_rank > dim:
            raise ValueError(f"metric_rank={self.metric_rank} exceeds the target's dimension {dim}")
        if self.metric == "dense":
            memory = _physical_memory_bytes()
            need = 8 * dim * dim * (self.chains + 8)  # U per chain, the estimator's d x d temporaries
            if memory is not None and need > memory // 2:
                raise ValueError(
                    f"metric='dense' at d={dim} needs about {need / 2**30:.1f} GiB ({self.chains} chains), more than "
                    f"half of this machine's {memory / 2**30:.1f} GiB: use metric='low_rank' (O(d k) memory) or 'diag'")
            return dim
        limit = min(dim, max(2 * window_capacity, 1))
        return limit if self.metric_rank is None else min(self.metric_rank, limit)

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        phased = self.metric in ("flow", "auto")
        transformed = self.metric in ("low_rank", "dense")
        kernel = None if phased else K.hamiltonian_chain if transformed else K.hamiltonian_chain_diag
        pathfinder = isinstance(self.init, str) and self.init == "pathfinder"
        start = self._pathfinder_start(target, seed, budget) if pathfinder else None
        chains = start_chains(self, kernel, target, seed, budget, start)
        if phased:
            return run_flow(self, chains)
        if self.inv_metric is not None:
            chains.inv_mass = inv_metric_rows(self.inv_metric, target, self.chains)
        n_warmup, d, n_chains = chains.n_warmup, target.dim, self.chains
        algorithm, n_leapfrog, max_depth, jitter = self._algorithm_settings()
        metric = A.METRICS[self.metric]
        schedule = A.warmup_schedule(n_warmup, metric, adapt_step=n_warmup > 0)
        max_rank = self._max_rank(d, schedule.window_capacity) if transformed else 0
        walnuts_error, walnuts_halvings = self._walnuts_settings()
        settings = K.hamiltonian_settings(
            n_warmup=n_warmup, n_draws=chains.n_draws, algorithm=algorithm, n_leapfrog=n_leapfrog,
            grad_budget=chains.grad_budget_per_chain, metric=metric, max_rank=max_rank,
            window_capacity=schedule.window_capacity,
            step_size=self.step_size if self.step_size is not None else -1.0, target_accept=self.target_accept,
            max_energy_error=self.max_energy_error, jitter=jitter, symmetric_accept=algorithm == K.ALGO_NUTS,
            walnuts_error=walnuts_error, walnuts_halvings=walnuts_halvings,
            gradient_start=algorithm == K.ALGO_NUTS and chains.inv_mass is None,
            divergence_watch_start=int(A.EARLY_FRACTION * n_warmup) if self._raises_target() else -1,
            gamma=self.metric_gamma, cutoff=self.metric_cutoff if self.metric == "low_rank" else 0.0,
            **budget_limits(chains.grad_budget_per_chain, chains.n_draws, max_depth),
        )
        start_inv_mass = np.ones((n_chains, d))
        if chains.inv_mass is not None:
            start_inv_mass[:] = chains.inv_mass
        if transformed:  # the diagonal is the map's sigma; the trajectory's own metric is 1
            transforms = [metric_transform(d, max_rank) for _ in range(n_chains)]
            for c in range(n_chains):
                transforms[c].sigma[:] = np.sqrt(start_inv_mass[c])
            inv_mass = np.ones((n_chains, d))
        else:  # the diagonal kernel takes no map (mcmc/chains.py)
            transforms = [None] * n_chains
            inv_mass = start_inv_mass
        adapt_log = np.zeros((n_chains, 6), dtype=np.int64)  # see mcmc/chains.py
        # The low-rank and dense estimators call LAPACK inside the chains' threads: with BLAS's
        # own threads on top, small eigen-decompositions ran 8x slower (measured, 2 cores).
        blas = one_blas_thread() if transformed else contextlib.nullcontext()
        with blas:
            run = chains.sample(
                lambda c, draws, stats, control: chains.kernel(
                    target.kernel_logp_grad, target.kernel_data, chains.x0[c].copy(), chains.rngs[c], settings, schedule.flags,
                    inv_mass[c], transforms[c], draws, stats, adapt_log[c], control,
                ),
                len(K.STAT_NAMES),
            )
        info = {"step_size": [float(s) for s in run.last], "metric": self.metric}
        if transformed:
            ranks = [int(t.rank[0]) for t in transforms]
            info["metric_rank"] = ranks
            info["metric_eigenvalues"] = [(t.sqrt_vals[:k] ** 2).tolist() for t, k in zip(transforms, ranks)]
            info["metric_sigma"] = np.array([t.sigma for t in transforms])
            inv_mass = np.array([
                t.sigma ** 2 * (1.0 + ((t.sqrt_vals[:k, None] ** 2 - 1.0) * t.vecs[:k] ** 2).sum(axis=0))
                for t, k in zip(transforms, ranks)
            ])
            if self.metric == "dense" and d <= 500:
                info["inv_mass_dense"] = np.array([
                    inverse_metric(t.sigma, t.vecs[:k], t.sqrt_vals[:k] ** 2) for t, k in zip(transforms, ranks)])
        info["inv_mass"] = inv_mass  # the diagonal of M^-1: the metric's variances
        result = chains.result(run, K.STAT_NAMES, info=info)
        warmup_done = adapt_log[:, 2]
        if n_warmup and np.any((warmup_done < n_warmup) & (run.done > warmup_done)):
            result.info["warmup_iterations"] = warmup_done.tolist()
            result.messages.append(
                f"warmup ended after {warmup_done.min()}-{warmup_done.max()} of its {n_warmup} iterations: it had spent "
                f"its share ({WARMUP_SHARE:.0%}) of the gradient budget; the draws use the metric and step size "
                "adapted so far")
        raised = adapt_log[:, 3]
        if raised.any():
            targets = adapt_log[:, 4] / 1e4
            result.info["target_accept_raised_to"] = targets.tolist()
            result.messages.append(
                f"divergences in warmup (after its first {A.EARLY_FRACTION:.0%}) raised the target acceptance from "
                f"{self.target_accept} to {targets.min():g}-{targets.max():g} in {int((raised > 0).sum())} of "
                f"{n_chains} chains: smaller steps where the posterior curves (raise target_accept yourself to "
                "start there)")
        updates, failed = adapt_log[:, :2].sum(axis=0)
        if failed:
            result.info["metric_fallbacks"] = int(failed)
            result.messages.append(
                f"{failed} of {updates} {self.metric} metric estimates were not finite or not positive definite: "
                "those kept the diagonal alone")
            # a window that failed mid-warmup only slows the warmup (the next window estimates afresh);
            # a failed last one leaves the draws on the diagonal, not the metric asked for
            last_failed = int(adapt_log[:, 5].sum())
            if last_failed:
                result.messages[-1] += (f", and in {last_failed} of {n_chains} chains the last one did: those "
                                        f"chains sampled on the diagonal alone, not the {self.metric} metric")
                warnings.warn(f"{self.name} on {target.name}: {result.messages[-1]}", RuntimeWarning, stacklevel=3)
        return result


@dataclass(frozen=True)
class HMC(_Hamiltonian):
    """Hamiltonian Monte Carlo with ``n_leapfrog`` steps per transition.

    Step size by dual averaging toward ``target_accept`` (0.65 by default, the optimum of
    Beskos et al. 2013), jittered uniformly by +-``jitter`` (a fraction) each transition;
    the metric adapted as ``metric`` says (see :class:`NUTS`).

    Why jitter by default: once the metric is adapted, every coordinate of a Gaussian
    oscillates with the same period, and a fixed trajectory length near a multiple of it makes
    chains nearly periodic (Mackenzie 1989; Neal 2011, sec. 5.4.2.2). ``jitter=0``: plain HMC.
    """

    family = "MCMC"
    colour, marker = "#56B4E9", "s"
    examples = Examples(quick={"chains": 2, "warmup": 200, "draws": 1000}, budget=3000, long={"warmup": 10, "draws": 10**6})

    target_accept: float = 0.65
    n_leapfrog: int = 8
    jitter: float = 0.3

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("n_leapfrog", self.n_leapfrog)
        if not (0.0 <= self.jitter < 1.0):
            raise ValueError(f"jitter must lie in [0, 1), got {self.jitter!r}")

    def _algorithm_settings(self):
        return K.ALGO_HMC, self.n_leapfrog, 1, self.jitter


@dataclass(frozen=True)
class NUTS(_Hamiltonian):
    """The No-U-Turn Sampler: multinomial NUTS with the generalised criterion (Hoffman &
    Gelman 2014, Algorithm 3; Betancourt 2017, sec. A.4, Stan's form).

    Step size by dual averaging toward ``target_accept`` (0.8; on a learned flow at least 0.9,
    ``flow_metric.FLOW_TARGET_ACCEPT``) of the symmetric acceptance statistic (nutpie's),
    jittered by +-``jitter`` (10%) each transition; trees up to ``max_depth`` doublings; a
    divergence when the energy error exceeds ``max_energy_error`` (1000). See
    ``workbench/mcmc/trajectory.py``. Under a gradient budget, warmup and tree depth are
    bounded so the run ends with draws (:func:`budget_limits`).

    ``metric``: ``"auto"`` (default; ``workbench/sampling/flow_metric.py``) warms up in phases:
    the first phase's draws (sampled with the low-rank metric) and their gradients rank the
    diagonal metric, the low-rank one and a learned flow by the Fisher divergence on held-out
    draws, and the chains go on with the winner (warmup 1,000 iterations). The default for its
    ESS per gradient and pass counts against ``"diag"`` (``benchmarks/nuts_geometry.py --auto``,
    ``docs/benchmarks/nuts_auto.csv``).
    The others (``workbench/mcmc/adaptation.py``): ``"diag"`` (also with ``warmup=0``),
    ``"diag_stan"`` (with ``warmup=1000``, Stan's windows), ``"low_rank"`` (Seyboldt et al.
    2026: eigen-directions with eigenvalue outside [1/``metric_cutoff``, ``metric_cutoff``], at
    most ``metric_rank`` of them, covariances regularised by ``metric_gamma``), ``"dense"``,
    ``"flow"`` and ``"identity"``; the kernel metrics warm up for 400 iterations.
    ``result.info`` holds the metric each chain ended with (``inv_mass``, and ``metric_rank``,
    ``metric_eigenvalues`` for low-rank and dense). ``inv_metric``: the diagonal of M^-1 the
    chains start with, (d,) or (chains, d) (Stan's ``inv_metric``). ``adapt_mass`` is the
    deprecated name (``"gradient"``, ``"stan"``, ``"none"`` mean ``"diag"``, ``"diag_stan"``,
    ``"identity"``).

    ``adapt_target=True``: a divergence in warmup once the metric has settled raises the
    target acceptance, 0.8 -> 0.95 -> 0.9875 -> 0.99, and restarts dual averaging, so the draws
    take the smaller step a curved posterior needs; the messages say so
    (``workbench/mcmc/chains.py``; ``benchmarks/mcmc_speed.py --banana`` measures it).

    ``walnuts=True``: WALNUTS (Bou-Rabee, Carpenter, Kleppe and Liu 2025;
    ``workbench/mcmc/walnuts.py``), each leaf's step halved (up to 5 times) until the energy
    stays within ``walnuts_max_error`` (0.5, nuts-rs's default) along it, for posteriors whose
    curvature varies more than one step size can follow (the banana's arms, a funnel's neck).
    A flow (``metric="flow"``, or ``"auto"`` choosing one) turns it on for its draws where its
    warmup phases on the flow diverged.
    """

    family = "MCMC"
    colour, marker = "#0072B2", "o"
    examples = Examples(quick={"chains": 2, "warmup": 200, "draws": 1000}, budget=3000, long={"warmup": 10, "draws": 10**6})

    metric: str | None = None  # "auto"; "diag" with warmup=0 or the deprecated adapt_mass
    warmup: int | None = None  # 1,000 with metric="flow" or "auto" (their phases fit the transform); else 400
    max_depth: int = 10
    jitter: float = 0.1
    adapt_target: bool = True
    walnuts: bool = False
    walnuts_max_error: float = 0.5

    def __post_init__(self):
        if self.metric is None:
            # without warmup there is nothing to choose by (the metric stays where it starts), and
            # the deprecated adapt_mass names a kernel metric: then the diagonal, or the one it names
            object.__setattr__(self, "metric", "diag" if self.warmup == 0 or self.adapt_mass is not None else "auto")
        if self.warmup is None:
            object.__setattr__(self, "warmup", FLOW_WARMUP if self.metric in ("flow", "auto") else DEFAULT_WARMUP)
        super().__post_init__()
        check_positive_int("max_depth", self.max_depth)
        if not (0.0 <= self.jitter < 1.0):
            raise ValueError(f"jitter must lie in [0, 1), got {self.jitter!r}")
        check_positive("walnuts_max_error", self.walnuts_max_error)

    def _walnuts_settings(self) -> tuple[float, int]:
        return (float(self.walnuts_max_error), WALNUTS_MAX_HALVINGS) if self.walnuts else (0.0, -1)

    def _algorithm_settings(self):
        return K.ALGO_NUTS, 0, self.max_depth, self.jitter

    def _raises_target(self) -> bool:
        return self.adapt_target
