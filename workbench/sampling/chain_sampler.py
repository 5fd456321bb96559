"""What the MCMC samplers share: their common settings, starting points, and the template
that runs one compiled kernel per chain on threads and cuts its output into a Result.

A chain sampler's ``_run`` is three steps (see ``hmc.py``, ``metropolis.py``, and the toy
method in ``docs/architecture.md``)::

    chains = start_chains(self, kernel, target, seed, budget)     # rngs, starts, compiled kernel
    run = chains.sample(lambda c, draws, stats, control: chains.kernel(...), len(STAT_NAMES))
    return chains.result(run, STAT_NAMES, info={...})             # warmup apart, diagnostics, messages

The kernel runs one whole chain without leaving Numba: it writes its draws and per-draw
statistics into the rows it is given, polls ``control`` (``jit.C_STOP``, ``jit.C_PROGRESS``)
and returns ``jit.CHAIN_RETURN``: (iterations done, gradient evaluations, of which in warmup,
one float of its choice).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..diagnostics import chain_diagnostics, health_messages
from ..errors import DensityError, NonFiniteDensityError, format_point
from ..jit import C_EVALS, C_PROGRESS, C_WARMUP_EVALS, N_CHAIN_CONTROLS
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.method import Method
from ..running.peaks import peaks_for_starts, several_peaks, starts_at_peaks, unvisited_message
from ..running.threads import per_task_budget, run_in_threads
from ..running.validation import check_positive_int
from ..target import Target


class Start(NamedTuple):
    """Starting points a method found for its chains itself (HMC and NUTS's ``init="pathfinder"``),
    handed to :func:`start_chains`: the points, a starting diagonal metric (or None),
    the gradients spent finding them, and what the result says of them (a message, info entries)."""

    x0: np.ndarray  # (chains, d)
    inv_mass: np.ndarray | None
    grad_evals: int
    message: str
    info: dict
    wall_seconds: float = 0.0  # the time finding them took, counted in the run's
    compile_seconds: float = 0.0


class StartingPoints(NamedTuple):
    """One starting point per chain (or path), and the density evaluations spent finding them
    (part of the run's cost)."""

    points: np.ndarray  # (chains, d)
    evals: int


def initial_points(target: Target, rngs, init=None, jitter: float = 2.0) -> StartingPoints:
    """One starting point per chain, each checked to have a finite density and gradient.

    ``init`` may be None (the target's initial point plus uniform(-jitter, jitter) noise,
    as Stan and PyMC do, redrawn up to 100 times where the density is not finite), one point
    (d,) for all chains, or (chains, d). Every evaluation of the density is counted.
    """
    chains = len(rngs)
    if init is not None:
        x = np.array(init, dtype=float)
        if x.shape == (target.dim,):
            x = np.tile(x, (chains, 1))
        if x.shape != (chains, target.dim):
            raise ValueError(f"init must have shape ({target.dim},) or ({chains}, {target.dim}), got {x.shape}")
        for c in range(chains):
            target.check_point(x[c], what=f"starting point of chain {c}")
        return StartingPoints(x, chains)
    out = np.empty((chains, target.dim))
    evals = 0
    for c, rng in enumerate(rngs):
        last_error = None
        for _ in range(100):
            x = target.initial_point + (rng.uniform(-jitter, jitter, target.dim) if jitter > 0 else 0.0)
            evals += 1
            try:
                target.check_point(x, what=f"starting point of chain {c}")
            except NonFiniteDensityError as exc:
                last_error = exc
                continue
            out[c] = x
            break
        else:
            raise NonFiniteDensityError(
                f"no finite starting point found for chain {c} in 100 tries around "
                f"{format_point(target.initial_point)}; give init=... explicitly. Last: {last_error}",
                last_error.point,
                last_error.logp,
            )
    return StartingPoints(out, evals)


class ChainRun(NamedTuple):
    """Outputs of all chains of one run, stacked: (chains, iterations, ...) arrays."""

    draws: np.ndarray
    stats: np.ndarray
    done: np.ndarray  # iterations completed per chain (warmup included)
    evals: np.ndarray  # gradient (logp_grad) evaluations per chain
    warmup_evals: np.ndarray
    last: list  # each kernel's fourth return value (final step size, scale, ...)
    interrupted: bool
    errors: dict  # chain -> the exception it raised (done and evals count up to its last whole iteration)


@dataclass
class Chains:
    """One run of a chain sampler, set up: what its kernel calls need and what the result
    is cut from. Built by :func:`start_chains`."""

    method: Method
    target: Target
    seed: int
    budget: Budget
    clock: RunClock
    kernel: Callable  # the compiled kernel for this target's data layout
    rngs: list  # one np.random.Generator per chain
    x0: np.ndarray | None  # (chains, d) starting points
    n_warmup: int
    n_draws: int
    inv_mass: np.ndarray | None = None  # a starting metric, when the start gives one
    start_grad_evals: int = 0  # gradients spent finding the starting points
    peaks: Any = None  # the mode search before the chains started (peaks.py), if one was made
    start: Start | None = None  # the points the method found itself, if it did

    @property
    def n_total(self) -> int:
        return self.n_warmup + self.n_draws

    @property
    def grad_budget_per_chain(self) -> int:
        """The kernels' per-chain gradient budget (-1: none): the run's budget less what finding
        the starting points spent, shared between the chains."""
        if self.budget.grad_evals is None:
            return -1
        left = max(self.budget.grad_evals - self.start_grad_evals, len(self.rngs))
        return per_task_budget(dataclasses.replace(self.budget, grad_evals=left), len(self.rngs))

    def sample(self, call: Callable, n_stats: int) -> ChainRun:
        """Allocate the outputs and run ``call(chain, draws, stats, control)`` for every chain
        on threads; ``call`` runs one chain's kernel into its (n_total, d) draws and
        (n_total, n_stats) statistics and returns the kernel's ``CHAIN_RETURN`` tuple."""
        chains, d = len(self.rngs), self.target.dim
        draws = np.zeros((chains, self.n_total, d))
        stats = np.zeros((chains, self.n_total, n_stats))
        controls = np.zeros((chains, N_CHAIN_CONTROLS), dtype=np.int64)
        errors: dict = {}
        outputs, interrupted = run_in_threads(
            lambda c: call(c, draws[c], stats[c], controls[c]),
            controls,
            self.n_total,
            getattr(self.method, "progress", None),
            f"{self.method.name} on {self.target.name}",
            getattr(self.method, "threads", None),
            errors,
        )
        self.clock.stop()
        # a chain that raised left its rows and counts up to its last complete iteration in controls
        outputs = [o if o is not None else (*(int(v) for v in controls[c, [C_PROGRESS, C_EVALS, C_WARMUP_EVALS]]), np.nan)
                   for c, o in enumerate(outputs)]
        return ChainRun(
            draws, stats,
            np.array([o[0] for o in outputs]), np.array([o[1] for o in outputs]),
            np.array([o[2] for o in outputs]), [o[3] for o in outputs],
            interrupted, errors,
        )

    @staticmethod
    def _first_error(run: ChainRun) -> int:
        """The chain that raised first (the fewest iterations done)."""
        return min(run.errors, key=lambda c: run.done[c])

    def _raised_message(self, run: ChainRun, kept: int) -> str:
        c = self._first_error(run)
        phase = "warmup" if run.done[c] < self.n_warmup else "sampling"
        others = sorted(set(run.errors) - {c})
        at = int(run.done[c])
        point = run.draws[c, at - 1] if at > 0 else self.x0[c]
        return (
            f"density raised: {run.errors[c]!r} in chain {c} at iteration {at + 1} ({phase}), from the "
            f"target's density (the kernels raise nothing themselves), at a proposal from {format_point(point)}"
            + (f", and in chain(s) {others} too" if others else "")
            + (f"; every chain was stopped and the {kept} draws per chain made before are kept" if kept else
               "; no chain had finished its warmup, so there are no draws to keep" if run.done.min() < self.n_warmup
               else "; it raised before any draw was made")
        )

    def result(self, run: ChainRun, stat_names, *, stat_columns=None, info: dict | None = None) -> Result:
        """Cut the run into warmup and equal-length draws, check its health (ArviZ's R-hat,
        ESS, divergences, tree depth, E-BFMI: ``diagnostics.py``) and build the Result."""
        messages = []
        sampled = run.done > self.n_warmup
        # the arrays were allocated for every planned iteration: work on what was made (views),
        # so a long run stopped early is not copied whole (10 s for 3 x 10^6 draws of d = 50)
        allocated, made = run.draws.shape[1], int(run.done.max()) if run.done.size else 0
        run = run._replace(draws=run.draws[:, :made], stats=run.stats[:, :made])
        if run.interrupted and not run.errors and sampled.any() and not sampled.all():
            # Ctrl-C before some chains started (more chains than threads): keep the chains that
            # made draws rather than cut them all to the others' none; the cost keeps every chain's
            messages.append(f"interrupted before {int((~sampled).sum())} of {sampled.size} chains had made a "
                            "draw: those chains are dropped")
            run = run._replace(draws=run.draws[sampled], stats=run.stats[sampled], done=run.done[sampled],
                               last=[v for v, keep in zip(run.last, sampled) if keep])
        draws, done, n_warmup = run.draws, run.done, self.n_warmup
        stats = run.stats if stat_columns is None else run.stats[..., stat_columns]
        kept = int(max(0, done.min() - n_warmup))
        if run.errors:
            messages.append(self._raised_message(run, kept))
            if kept == 0:
                c = self._first_error(run)
                at = int(run.done[c])
                point = run.draws[c, at - 1] if at > 0 else self.x0[c]
                raise DensityError(f"{self.method.name} on target {self.target.name!r}: {messages[-1]}",
                                   self.method.name, c, at + 1, point) from run.errors[c]
            warnings.warn(f"{self.method.name} on {self.target.name}: {messages[-1]}", RuntimeWarning, stacklevel=4)
        stat_names = list(stat_names)
        if "nan_density" in stat_names:  # counted over the whole run, then dropped from the stats
            k = stat_names.index("nan_density")
            n_nan = int(sum(stats[c, : done[c], k].sum() for c in range(len(done))))
            stats = np.delete(stats, k, axis=-1)
            del stat_names[k]
            if n_nan:
                messages.append(
                    f"NaN density: the target's log density was NaN (or +inf, an overflow) at {n_nan} of "
                    f"{int(done.sum())} proposals "
                    "(rejected as if -inf, but NaN is a fault of the density, not the edge of its support: "
                    "check where it fails)"
                )
                warnings.warn(f"{self.method.name} on {self.target.name}: {messages[-1]}", RuntimeWarning, stacklevel=4)
            info = {**(info or {}), "nan_density_evals": n_nan}
        if run.interrupted:
            messages.append(f"interrupted: kept {kept} draws per chain made before Ctrl-C")
        if self.budget.grad_evals is not None and not (run.interrupted or run.errors) and (done < allocated).any():
            messages.append(
                f"gradient budget {self.budget.grad_evals} spent: {kept} draws per chain "
                f"(chains reached {done.min()}..{done.max()} of {allocated} iterations incl. warmup)"
            )
        if (done.max() - done.min()) > 0 and kept > 0:
            messages.append(f"chains cut to the shortest one's {kept} draws")
        messages += unvisited_message(self.peaks, draws[:, n_warmup: n_warmup + kept])
        if self.start is not None:  # paid already: in the cost below
            messages.insert(0, self.start.message)
            info = {**self.start.info, **(info or {})}
        window = slice(n_warmup, n_warmup + kept)
        stat_dict = {
            name: (stats[:, window, k] != 0) if name == "diverging" else stats[:, window, k]
            for k, name in enumerate(stat_names)
        }
        for name in ("tree_depth", "n_steps"):
            if name in stat_dict:
                stat_dict[name] = stat_dict[name].astype(np.int64)
        kept_draws = draws[:, window].copy()

        result = self.method.result(
            self.target, self.seed, kept_draws, self.clock,
            # the starting points' evaluations (checks, retries, a Pathfinder start) are warmup's
            grad_evals=int(run.evals.sum()) + self.start_grad_evals,
            warmup_grad_evals=int(run.warmup_evals.sum()) + self.start_grad_evals,
            settings={**self.method.settings(), "draws": self.n_draws},
            stats=stat_dict,
            warmup_draws=draws[:, : min(n_warmup, int(done.min()))].copy(),
            messages=messages,
            info={"iterations_per_chain": done.tolist(), "grad_evals_per_chain": run.evals.tolist(),
                  **({"peaks": {"found": len(self.peaks.modes), "grad_evals": self.peaks.grad_evals}}
                     if self.peaks is not None else {}), **(info or {})},
            interrupted=bool(run.interrupted),
        )
        # ArviZ's diagnostics, deferred until the result's messages or info are read
        result.defer_health(deferred_chain_health(kept_draws, stat_dict, getattr(self.method, "max_depth", None),
                                                  self.target.identified))
        return result


def set_up_chains(method: Method, kernel, target: Target, seed: int, budget: Budget) -> Chains:
    """Set up a run of ``method`` (which has ``chains``, ``warmup`` and ``draws``): one
    generator per chain, the kernel compiled (timed apart; None: a run in phases, each of which
    compiles its own), the draws the budget asks for; no starting points yet."""
    clock = RunClock()
    rngs = chain_rngs(seed, method.chains)
    return Chains(
        method=method, target=target, seed=seed, budget=budget, clock=clock,
        kernel=clock.compile(kernel, target) if kernel is not None else None, rngs=rngs, x0=None,
        n_warmup=method.warmup, n_draws=budget.draws_or(method.draws),
    )


def start_chains(method: Method, kernel, target: Target, seed: int, budget: Budget, start: Start | None = None) -> Chains:
    """:func:`set_up_chains`, and the chains' starting points: ``start`` when the method found
    them itself, else from the method's ``init`` / ``init_jitter`` (:class:`ChainSampler`), one
    chain per peak where ``init`` is None and a mode search finds several (``running/peaks.py``).
    Every gradient spent finding them is paid from the budget. ``kernel`` None: a run in phases,
    each of which compiles its own."""
    chains = set_up_chains(method, kernel, target, seed, budget)
    if start is not None:
        chains.x0, chains.inv_mass, chains.start_grad_evals, chains.start = (
            start.x0, start.inv_mass, start.grad_evals, start)
        chains.clock.include(start.wall_seconds, start.compile_seconds)
        return chains
    if isinstance(method.init, str):
        raise ValueError(
            f"init={method.init!r} is not a starting point; {method.name} takes None, a point ({target.dim},) or "
            f"an array (chains, {target.dim})"
            + ("" if method.name in ("HMC", "NUTS") else "; init='pathfinder' is for HMC and NUTS")
        )
    search = peaks_for_starts(target, seed, budget, method.chains) if method.init is None else None
    if several_peaks(search):  # chains start apart, one per peak (peaks.py)
        chains.x0, spent = starts_at_peaks(target, search, chains.rngs), len(chains.rngs)
    else:
        chains.x0, spent = initial_points(target, chains.rngs, method.init, method.init_jitter)
    chains.peaks = search
    # paid from the budget (grad_budget_per_chain)
    chains.start_grad_evals = spent + (search.grad_evals if search is not None else 0)
    return chains


def checked_inv_metric(value) -> np.ndarray | None:
    """A sampler's ``inv_metric`` setting as a float array (None stays None): the diagonal of
    the inverse metric (the variances it scales by), positive and finite, (d,) or (chains, d)."""
    if value is None:
        return None
    inv = np.asarray(value, dtype=float)
    if inv.ndim not in (1, 2) or not (np.all(np.isfinite(inv)) and np.all(inv > 0)):
        raise ValueError("inv_metric must be the diagonal of the inverse metric, positive and finite, shaped "
                         f"(d,) or (chains, d); got shape {inv.shape}")
    return inv


def inv_metric_rows(inv: np.ndarray, target, chains: int) -> np.ndarray:
    """``inv_metric`` as one row per chain (chains, d), checked against the target's dimension."""
    if inv.shape not in ((target.dim,), (chains, target.dim)):
        raise ValueError(f"inv_metric has shape {inv.shape}; {target.name} needs ({target.dim},) or "
                         f"({chains}, {target.dim}) (chains, d)")
    return np.broadcast_to(inv, (chains, target.dim)).copy()


@dataclass(frozen=True)
class ChainSampler(Method):
    """Settings every MCMC sampler shares (same names across methods: docs/architecture.md, "Method").

    ``init``: None (the target's initial point jittered by uniform(-init_jitter,
    init_jitter) per chain), one point (d,), or (chains, d); HMC and NUTS also take
    ``"pathfinder"`` (each chain from a Pathfinder draw, the metric from its variances).
    ``progress``: None shows a bar on a terminal only. ``threads``: default one per chain
    up to the number of cores.
    """

    # whether the kernel keeps its warmup iterations as draws (a run in phases learns from their end)
    keeps_warmup_draws = True

    chains: int = 4
    warmup: int = 1000
    draws: int = 1000
    init: Any = None
    init_jitter: float = 2.0
    progress: bool | None = None
    threads: int | None = None

    def __post_init__(self):
        check_positive_int("chains", self.chains)
        check_positive_int("warmup", self.warmup, minimum=0)
        check_positive_int("draws", self.draws)
        if not (self.init_jitter >= 0 and math.isfinite(self.init_jitter)):
            raise ValueError(f"init_jitter must be a finite number >= 0, got {self.init_jitter!r}")
        if self.threads is not None:
            check_positive_int("threads", self.threads)

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """Every iteration's draw (warmup included) of every chain, then the kept copies."""
        draws = budget.draws_or(self.draws)
        return {"chain draws": 8 * self.chains * (self.warmup + draws) * target.dim,
                "kept draws": 8 * self.chains * (self.warmup + draws) * target.dim}


def deferred_chain_health(draws, stats, max_depth=None, identified=None) -> Callable:
    """ArviZ's diagnostics of a run's draws (chains, draws, d), computed when the result's
    messages or info are first read (``Result.defer_health``); on the target's ``identified``
    quantities where it has them (a BNN's outputs: its chains sit in equivalent labelings of its
    weights, and R-hat on the weights fails however well each chain samples)."""

    def health():
        quantities = draws if identified is None or draws.shape[1] == 0 else identified(draws)
        diagnostics = chain_diagnostics(quantities, stats, max_depth)
        return {"diagnostics": diagnostics._asdict()}, health_messages(diagnostics)

    return health
