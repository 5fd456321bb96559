"""Exceptions and warnings raised by the workbench.

Each error names the problem and, where something was computed before it happened,
carries it as an attribute so that no work is lost.
"""

from __future__ import annotations

import numpy as np


class WorkbenchError(Exception):
    """Base class of the workbench's own errors."""


class TargetError(WorkbenchError, ValueError):
    """A target is built with invalid settings or its density function is unusable."""


class BudgetTooSmallError(WorkbenchError, ValueError):
    """A method refuses a gradient budget below what its first stage needs (SMC's tempering
    ladder, Pathfinder's paths, a mode search): nothing ran. A study records the cell as
    "budget too small", a measurement of the method, not a failure."""


class NonFiniteDensityError(TargetError):
    """The log density (or its gradient) is NaN or infinite at a point that must be valid.

    Attributes
    ----------
    point : ndarray
        The offending point.
    logp : float
        The value the density returned there.
    """

    def __init__(self, message: str, point: np.ndarray, logp: float):
        super().__init__(message)
        self.point = np.array(point, copy=True)
        self.logp = logp


class DensityError(WorkbenchError, RuntimeError):
    """The target's density raised during a run; the user's exception is its ``__cause__``.

    Attributes
    ----------
    method : str
    chain : int
        The chain (or restart, or path) whose call raised.
    iteration : int
        Its iteration (or optimisation step) when it did.
    point : ndarray
        Where that chain was at its last whole iteration (the density raised at a proposal
        from there).
    """

    def __init__(self, message: str, method: str, chain: int, iteration: int, point: np.ndarray):
        super().__init__(message)
        self.method = method
        self.chain = chain
        self.iteration = iteration
        self.point = np.array(point, dtype=float, copy=True)


class DensityFault(WorkbenchError, RuntimeError):
    """What a compiled adapter raises for a user's density that raised an exception other than
    the common ones (see ``density_faults.py``): ``density_faults.original`` gives the user's."""


class SlowGradientWarning(UserWarning):
    """A target's gradient is computed by finite differences (2 d + 1 densities per gradient)."""


class LongRunWarning(UserWarning):
    """A run is on course to take long (an estimate from its own pace, made early in the run):
    it says how long and how to stop it while keeping what it made (Ctrl-C)."""


def format_point(theta: np.ndarray, max_items: int = 6) -> str:
    """A short readable rendering of a point for error messages."""
    theta = np.asarray(theta, dtype=float).ravel()
    items = ", ".join(f"{v:.4g}" for v in theta[:max_items])
    if theta.size > max_items:
        items += f", ... ({theta.size} values)"
    return f"[{items}]"


class CacheWarning(UserWarning):
    """A cache entry could not be read (garbage, truncated, or half deleted): it is dropped
    and recomputed."""
