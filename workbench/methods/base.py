"""What every method shares: the ``run`` entry point, seeds, budgets, timing, threads and
building the :class:`Result`.

A method is a frozen dataclass of settings. It writes three things: its settings (fields),
their validation (``__post_init__``), and ``_run(target, seed, budget)``, which calls its
kernel. Everything else is here:

- ``Method.run`` checks the target, merges ``grad_budget`` into the :class:`Budget`, fixes
  the seed, starts a :class:`RunClock` and calls ``_run``;
- ``chain_rngs`` derives one ``np.random.Generator`` per chain or restart from the seed
  with ``SeedSequence.spawn``, so results do not depend on how work is scheduled;
- ``RunClock.compile`` times a kernel's compilation (or cache load) apart from the run;
- ``run_in_threads`` runs ``nogil`` kernels on a thread pool with a progress bar and
  Ctrl-C (the kernels poll a shared control array and keep what they made);
- ``Method.result`` builds the :class:`Result` with the method's name, the target's
  parameter names, the seed, the settings and the cost.

Chain samplers (MCMC) add their own template in ``workbench/methods/sampling.py``;
``docs/architecture.md`` walks through adding a method.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import density_faults
from ..cache import object_digest
from ..density_faults import original
from ..errors import DensityError, LongRunWarning, TargetError, WorkbenchError, format_point
from ..jit import C_PROGRESS, C_STOP
from ..result import IN_RUN, Budget, Cost, Result
from ..target import Target

# ------------------------------------------------------------------------------ validation


def resolve_seed(seed) -> int:
    """The seed to use and record: the given one, or fresh entropy when None."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    return int(seed)


def check_positive_int(name: str, value, minimum: int = 1) -> None:
    """ValueError naming the setting unless ``value`` is an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_positive(name: str, value, *, allow_none: bool = False) -> None:
    """ValueError naming the setting unless ``value`` is a finite number > 0."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0{' (or None)' if allow_none else ''}, got {value!r}")


# ------------------------------------------------------------------------------ randomness


def chain_rngs(seed: int, n: int) -> list[np.random.Generator]:
    """One independent generator per chain (or restart, or path), derived from ``seed``."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


# ------------------------------------------------------------------------------ budgets


def per_task_budget(budget: Budget, tasks: int) -> int:
    """The gradient evaluations each of ``tasks`` parallel chains may spend (-1: no limit),
    the form the kernels read."""
    return -1 if budget.grad_evals is None else max(1, budget.grad_evals // tasks)


# ------------------------------------------------------------------------------ timing


class RunClock:
    """Wall time of one run, with compiling (or loading compiled kernels) timed apart:
    ``Cost.wall_seconds`` excludes it and ``Cost.compile_seconds`` reports it."""

    def __init__(self):
        self._start = time.perf_counter()
        self._stop = None
        self.compile_seconds = 0.0

    @contextmanager
    def compiling(self):
        """Time what runs inside ``with clock.compiling():`` as compile time."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.compile_seconds += time.perf_counter() - start

    def compile(self, kernel, target: Target):
        """``kernel.for_target(target)`` (a ``jit.TargetKernel``), its time counted as compile time."""
        with self.compiling():
            return kernel.for_target(target)

    def stop(self) -> None:
        """End the timed part (what follows, e.g. diagnostics of the output, is not the run's cost)."""
        self._stop = time.perf_counter()

    @property
    def wall_seconds(self) -> float:
        end = self._stop if self._stop is not None else time.perf_counter()
        return end - self._start - self.compile_seconds


# ------------------------------------------------------------------------------ threads


# A run on course to take longer than LONG_RUN_SECONDS says so (LongRunWarning), with the
# estimate, once PACE_SECONDS of it have passed: the pace of a fraction of a second is noise,
# and a run's own pace needs no timed call of the density outside its count.
LONG_RUN_SECONDS = 300.0
PACE_SECONDS = 3.0


def duration_estimate(elapsed: float, done: int, total: int) -> float | None:
    """Seconds the whole run will take at the pace of its first ``done`` of ``total``
    iterations (None before the first is done)."""
    if done <= 0 or total <= 0:
        return None
    return elapsed * total / min(done, total)


KEEPS_WHAT_IT_MADE = "Ctrl-C stops it and keeps what it has made, or give it fewer steps or a budget"


def long_run_message(description: str, elapsed: float, done: int, total: int, unit: str = "iterations",
                     advice: str = KEEPS_WHAT_IT_MADE) -> str | None:
    """The LongRunWarning's text when the run is on course to pass LONG_RUN_SECONDS."""
    estimate = duration_estimate(elapsed, done, total)
    if estimate is None or estimate <= LONG_RUN_SECONDS:
        return None
    return (f"{description}: {done:,} of {total:,} {unit} in {elapsed:.1f} s, so all {total:,} would take about "
            f"{_duration(estimate)}; {advice}")


class PaceWatch:
    """Warns once (:class:`LongRunWarning`) when a loop's own pace, once ``PACE_SECONDS`` of it
    have passed, says it will take longer than ``LONG_RUN_SECONDS``. Call it with (done, total)
    as the loop goes."""

    def __init__(self, description: str, unit: str = "iterations", advice: str = KEEPS_WHAT_IT_MADE):
        self.description, self.unit, self.advice = description, unit, advice
        self.started = time.perf_counter()
        self.estimated = False

    def __call__(self, done: int, total: int) -> None:
        if self.estimated or done <= 0:
            return
        elapsed = time.perf_counter() - self.started
        if elapsed < PACE_SECONDS:
            return
        self.estimated = True
        message = long_run_message(self.description, elapsed, done, total, self.unit, self.advice)
        if message is not None:
            warnings.warn(message, LongRunWarning, stacklevel=3)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _progress_enabled(progress) -> bool:
    if progress is not None:
        return bool(progress)
    return sys.stderr.isatty() and not os.environ.get("CI")


@functools.cache
def blas_controller():
    """The BLAS libraries this process has loaded, found once: a search takes 1.5-3 ms (it
    walks every loaded shared library), as long as a whole NUTS run on a cheap target."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def run_in_threads(
    run_one: Callable[[int], tuple],
    controls: np.ndarray,
    total_per_task: int,
    progress=None,
    description: str = "running",
    threads: int | None = None,
    errors: dict | None = None,
    estimate_duration: bool = True,
) -> tuple[list, bool]:
    """Run ``run_one(i)`` for every row i of ``controls`` on a thread pool.

    The kernels are ``nogil``, so threads run them in parallel. ``controls`` is the
    (tasks, 2) int64 array they poll: column ``C_STOP`` is set to stop them, column
    ``C_PROGRESS`` is where they write their progress (for the bar). Returns (outputs in
    task order, interrupted). Ctrl-C stops every task at its next iteration and keeps what
    was made. A task that raises (the target's density raising part-way, say) stops the
    others too; with ``errors`` (a dict) its exception is stored there under its index and
    its output is None, so the caller can keep what the tasks made; without, it is raised.
    A run on course to take longer than ``LONG_RUN_SECONDS`` says so early, with the estimate
    (:class:`LongRunWarning`, from its own pace: :class:`PaceWatch`), unless
    ``estimate_duration`` is False: for tasks whose progress is not proportional to their time
    (a temperature, or an iteration cap that they rarely reach).
    """
    tasks = controls.shape[0]
    workers = threads or min(tasks, os.cpu_count() or 1)
    bar = None
    if _progress_enabled(progress):
        from tqdm.auto import tqdm

        bar = tqdm(total=tasks * total_per_task, desc=description, unit="it", leave=False)
    interrupted = False
    pace = PaceWatch(description) if estimate_duration else (lambda done, total: None)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_one, i) for i in range(tasks)]
        try:
            while wait(futures, timeout=0.1).not_done:  # returns as soon as all are done
                if any(f.done() and f.exception() is not None for f in futures):
                    controls[:, C_STOP] = 1  # one task failed: the others stop where they are
                done = int(controls[:, C_PROGRESS].sum())
                pace(done, tasks * total_per_task)
                if bar is not None:
                    bar.n = done
                    bar.refresh()
        except KeyboardInterrupt:
            interrupted = True
            controls[:, C_STOP] = 1
        wait(futures)
        outputs = []
        for i, f in enumerate(futures):
            if f.exception() is not None and errors is not None:
                errors[i] = original(f.exception())  # the user's own exception, if the density raised
                outputs.append(None)
            else:
                outputs.append(f.result())
    if bar is not None:
        bar.n = int(controls[:, C_PROGRESS].sum())
        bar.close()
    return outputs, interrupted


# ------------------------------------------------------------------------------ memory


class TooLargeError(WorkbenchError, MemoryError):
    """A run would need more memory than the machine has; raised before any work starts."""


def available_memory() -> int:
    """Bytes of memory available now (Linux's MemAvailable; else the physical total)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        return 1 << 62


def check_memory(method: "Method", target: Target, needs: dict) -> None:
    """TooLargeError naming each large array and the total, when ``needs`` (name -> bytes)
    adds up to more than 80% of the memory available (a run that swaps or is killed by the
    kernel's OOM killer says nothing useful)."""
    total = sum(needs.values())
    free = available_memory()
    if total <= 0.8 * free:
        return
    parts = ", ".join(f"{name} {nbytes / 1e9:.3g} GB" for name, nbytes in sorted(needs.items(), key=lambda kv: -kv[1]))
    raise TooLargeError(
        f"{method.name} on {target.name!r} (d = {target.dim:,}) would need about {total / 1e9:.3g} GB ({parts}); "
        f"{free / 1e9:.3g} GB are available. Give fewer draws or chains, or a method whose memory grows more "
        "slowly with d (mean-field rather than full-rank)"
    )


# ------------------------------------------------------------------------------ faults


def density_raised(method: str, target: Target, exc: BaseException, chain: int, iteration: int,
                   point: np.ndarray, where: str = "chain") -> DensityError:
    """The error for a user's density that raised inside a compiled kernel (the kernels raise
    nothing themselves): it names the method, the chain (or restart), the iteration and the
    point, and is raised ``from`` the user's exception."""
    exc = original(exc)
    return DensityError(
        f"{method} on target {target.name!r}: the target's density raised {exc!r} in {where} {chain} at iteration "
        f"{iteration}, near {format_point(point)}; the run is lost (fix the density, or make it return -inf "
        "where it cannot be evaluated)",
        method, chain, iteration, point,
    )


# share of the run's density evaluations that may fault (each treated as log p = -inf) before the
# run is an error: a density that fails at most points is broken, not bounded
MAX_FAULT_SHARE = 0.5


def with_faults_reported(result: Result, faults: density_faults.Faults, method: str, target: Target) -> Result:
    """``result``, its messages saying how often the density raised (each a rejection, see
    ``density_faults.py``) with the first point and exception; a DensityError when most
    evaluations did."""
    if not faults.count or faults.nested:  # a phase of a run (auto's): the run reports them all
        return result
    calls = max(result.cost.grad_evals, result.cost.logp_evals, 1)
    share = faults.count / calls
    exc, point = faults.first_exception, faults.first_point
    if share > MAX_FAULT_SHARE:
        raise DensityError(
            f"{method} on target {target.name!r}: the target's density raised at {faults.count:,} of {calls:,} "
            f"evaluations, first {exc!r} at {format_point(point)}: a density that fails at most points is broken "
            "(fix it, or return -inf where it cannot be evaluated)", method, 0, 0, point) from exc
    message = (f"density faults: the target's density raised at {faults.count:,} of {calls:,} evaluations "
               f"({share:.2%}), first {exc!r} at {format_point(point)}; each was treated as log p = -inf there "
               "(a rejected proposal), as Stan and nutpie do")
    result.info["density_faults"] = faults.count
    result.messages.append(message)
    warnings.warn(f"{method} on {target.name}: {message}", RuntimeWarning, stacklevel=3)
    return result


# ------------------------------------------------------------------------------ the method


_KINDS = {  # a setting's annotation -> (accepts(value), what it must be)
    "int": (lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)), "an integer"),
    "float": (lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)),
              "a number"),
    "bool": (lambda v: isinstance(v, (bool, np.bool_)), "True or False"),
}  # (``str`` settings are choices: each method checks them against its list and names it)


def check_setting_types(method) -> None:
    """ValueError naming the setting when a value has the wrong type for its annotation
    (``int``, ``float``, ``bool``, each optionally ``| None``): without this a string
    where a number belongs fails later as "'<' not supported between 'float' and 'str'"."""
    for f in dataclasses.fields(method):
        kinds = [k.strip() for k in str(f.type).split("|")]
        value = getattr(method, f.name)
        if value is None and "None" in kinds:
            continue
        known = [k for k in kinds if k in _KINDS]
        if not known or len(known) != len([k for k in kinds if k != "None"]):
            continue  # Any, unions with other types: the method checks those itself
        if not any(_KINDS[k][0](value) for k in known):
            what = " or ".join(_KINDS[k][1] for k in known) + (" (or None)" if "None" in kinds else "")
            raise ValueError(f"{type(method).__name__}: {f.name} must be {what}, got {value!r} ({type(value).__name__})")


@dataclass(frozen=True)
class Method:
    """Base class: subclasses are frozen dataclasses of settings implementing ``_run``.

    Every setting's type is checked against its annotation before the subclass's own
    ``__post_init__`` checks its range (see :func:`check_setting_types`).
    """

    def __post_init__(self):
        check_setting_types(self)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__post_init__")
        if own is not None and not getattr(own, "_checks_types", False):
            def __post_init__(self, _own=own):
                check_setting_types(self)
                _own(self)

            __post_init__._checks_types = True
            __post_init__.__doc__ = own.__doc__
            cls.__post_init__ = __post_init__

    @property
    def name(self) -> str:
        return type(self).__name__

    def settings(self) -> dict:
        """The settings as a plain dict (for tables, reports and cache keys); arrays become
        lists and objects (a proposal) their type's name and a digest of their content
        (``Gaussian#3f2a...``), so two different proposals never share a cache key."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            elif value is not None and not isinstance(value, (bool, int, float, str, list, tuple, dict)):
                value = f"{type(value).__name__}#{object_digest(value)}"
            out[f.name] = value
        return out

    def spec(self) -> dict:
        return {"method": self.name, **self.settings()}

    def run(
        self,
        target: Target,
        seed: int | None = None,
        grad_budget: int | None = None,
        *,
        budget: Budget | None = None,
    ) -> Result:
        """Run the method on ``target``.

        Parameters
        ----------
        target : Target
        seed : int, optional
            Makes the run reproducible; recorded in the result (drawn at random if None).
        grad_budget : int, optional
            Stop when this many gradient evaluations are spent (equal-cost comparisons);
            shorthand for ``budget=Budget(grad_evals=...)``.
        budget : Budget, optional
            Gradient evaluations, draws and/or steps.
        """
        if not isinstance(target, Target):
            raise TargetError(
                f"{self.name}.run needs a workbench Target, got {type(target).__name__}; "
                "build one with wb.Target.from_numba(...) or a wb.targets constructor"
            )
        if budget is None:
            budget = Budget()
        if grad_budget is not None:
            if budget.grad_evals is not None and budget.grad_evals != grad_budget:
                raise ValueError("grad_budget and budget.grad_evals disagree: give one")
            budget = dataclasses.replace(budget, grad_evals=grad_budget)
        seed = resolve_seed(seed)
        check_memory(self, target, self.memory_needs(target, budget))
        clock = RunClock()
        building = IN_RUN.set(True)  # the result's deferred health check waits until run() returns
        try:
            with density_faults.collect(target.kernel_data[0].ctypes.data) as faults:
                result = self._run(target, seed, budget)
            return with_faults_reported(result, faults, self.name, target)
        except KeyboardInterrupt:
            # Ctrl-C before the method's own loop (which keeps what it made) began: drawing
            # proposals, finding a start, compiling. Nothing was made; say so, as the loop would.
            clock.stop()
            return self.result(target, seed, np.zeros((getattr(self, "chains", 1), 0, target.dim)), clock,
                               interrupted=True,
                               messages=[f"interrupted while {self.name} was setting up, before its first "
                                         "draw: nothing kept (the density calls of the set-up are not counted)"])
        except Exception as exc:
            # a bare "division by zero" from deep inside a kernel does not say which run it ended
            if not isinstance(exc, WorkbenchError) and not getattr(exc, "__notes__", None):
                exc.add_note(f"raised while {self.name} ran on target {target.name!r} (seed {seed})")
            raise
        finally:
            IN_RUN.reset(building)

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:  # pragma: no cover
        raise NotImplementedError

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """The run's large arrays, name -> bytes (checked against the memory available before
        the run starts); the base class knows of the draws only."""
        chains = getattr(self, "chains", 1)
        draws = budget.draws if budget.draws is not None else getattr(self, "draws", 0)
        return {"draws": 8 * chains * draws * target.dim}

    def result(
        self,
        target: Target,
        seed: int,
        draws: np.ndarray,
        clock: RunClock,
        *,
        grad_evals: int = 0,
        logp_evals: int | None = None,
        warmup_grad_evals: int = 0,
        settings: dict | None = None,
        **fields,
    ) -> Result:
        """The :class:`Result` of a run: ``draws`` (chains, n, d), its cost (``logp_evals``
        defaults to ``grad_evals``: ``logp_grad`` gives both at once), and any other
        :class:`Result` field (``approximation``, ``log_z``, ``stats``, ``messages``, ``info``...)."""
        return Result(
            method=self.name,
            target=target.name,
            draws=draws,
            cost=Cost(
                grad_evals=int(grad_evals),
                logp_evals=int(grad_evals if logp_evals is None else logp_evals),
                wall_seconds=clock.wall_seconds,
                compile_seconds=clock.compile_seconds,
                warmup_grad_evals=int(warmup_grad_evals),
            ),
            param_names=target.param_names,
            seed=seed,
            settings=self.settings() if settings is None else settings,
            **fields,
        )
