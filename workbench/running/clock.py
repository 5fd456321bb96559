"""A run's wall time, with compilation timed apart (``Cost.wall_seconds`` and
``Cost.compile_seconds``)."""

from __future__ import annotations

import time
from contextlib import contextmanager

from ..target import Target


class RunClock:
    """Wall time of one run, with compiling (or loading compiled kernels) timed apart:
    ``Cost.wall_seconds`` excludes it and ``Cost.compile_seconds`` reports it."""

    def __init__(self):
        self.started = time.perf_counter()  # time.perf_counter()'s reading when the run began
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

    def include(self, wall_seconds: float, compile_seconds: float) -> None:
        """Count time spent for this run before the clock started (a start another method found)."""
        self.started -= wall_seconds + compile_seconds
        self.compile_seconds += compile_seconds

    def stop(self) -> None:
        """End the timed part (what follows, e.g. diagnostics of the output, is not the run's cost)."""
        self._stop = time.perf_counter()

    @property
    def wall_seconds(self) -> float:
        end = self._stop if self._stop is not None else time.perf_counter()
        return end - self.started - self.compile_seconds


class PhasedClock:
    """A run of several phases' time as ``Method.result`` reads it: wall time less compile time."""

    def __init__(self, total: float, compile_seconds: float):
        self.compile_seconds = compile_seconds
        self.wall_seconds = max(0.0, total - compile_seconds)
