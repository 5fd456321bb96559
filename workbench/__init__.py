"""workbench: Bayesian inference methods side by side on shared target densities.

>>> import workbench as wb
>>> t = wb.targets.gaussian(dim=10, scales="logspace")
>>> res = wb.methods.Exact(chains=2, draws=500).run(t, seed=1)
>>> row = wb.metrics.evaluate(res, t)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import approximations, methods, metrics, posteriors, targets
from .errors import NonFiniteDensityError, SlowGradientWarning, TargetError, WorkbenchError
from .references import Reference, reference
from .result import Budget, Cost, Result
from .target import GradientCheck, Target, Truth, check_gradient



def compare(target, **kwargs):
    """Every applicable method on ``target`` at equal gradient budgets, scored against the truth
    or a checked reference, on one report page with a recommendation (``workbench/comparison.py``;
    the command line's ``workbench compare TARGET``)."""
    from .comparison import compare as _compare

    return _compare(target, **kwargs)


try:
    __version__ = version("workbench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "Budget",
    "Reference",
    "Cost",
    "GradientCheck",
    "NonFiniteDensityError",
    "Result",
    "SlowGradientWarning",
    "Target",
    "TargetError",
    "Truth",
    "approximations",
    "WorkbenchError",
    "check_gradient",
    "compare",
    "methods",
    "reference",
    "metrics",
    "posteriors",
    "targets",
]
