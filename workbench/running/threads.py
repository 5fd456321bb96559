"""Kernels run on threads: ``nogil`` kernels in parallel on a thread pool, with a progress bar,
Ctrl-C (each kernel polls a shared control array and keeps what it made), an early warning
when a run is on course to take long, and the share of a gradient budget each task may spend."""

from __future__ import annotations

import functools
import os
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from ..density_faults import original
from ..errors import LongRunWarning
from ..jit import C_PROGRESS, C_STOP
from ..result import Budget


def per_task_budget(budget: Budget, tasks: int) -> int:
    """The gradient evaluations each of ``tasks`` parallel chains may spend (-1: no limit),
    the form the kernels read."""
    return -1 if budget.grad_evals is None else max(1, budget.grad_evals // tasks)


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


def one_blas_thread():
    """A context in which BLAS runs on one thread. Small BLAS and LAPACK calls (an L-BFGS-B
    iteration's on d = 100, a flow fit's eigen-decompositions) ran 3-8x slower on BLAS's own
    threads, which spin up and contend with the chains' for every call: the mode search before
    NUTS's chains on the 100-d Gaussian, 1,800 gradients, took 0.18-0.25 s, and 0.04-0.06 s on one
    thread (2 cores, beside a benchmark's run); a whole NUTS() call there, on a quiet machine,
    0.078 s -> 0.067 s."""
    return blas_controller().limit(limits=1, user_api="blas")


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
