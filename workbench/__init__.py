"""workbench: Bayesian inference methods side by side on shared target densities.

>>> import workbench as wb
>>> t = wb.targets.gaussian(dim=10, scales="logspace")
>>> res = wb.methods.Exact(chains=2, draws=500).run(t, seed=1)
>>> row = wb.metrics.evaluate(res, t)
"""

from __future__ import annotations

import importlib
import warnings

# A target adapter's fault branch runs in Numba's object mode (density_faults.py), and Numba warns,
# when it compiles that branch at a density's first fault, that such a block holds the GIL: what it
# should do there. Silenced here, at the package's import, for the adapters' generated modules
# alone (a filter added later, inside a caller's ``catch_warnings``, would be lost on its exit).
warnings.filterwarnings("ignore", message=".*object mode won't allow parallel execution.*", module=r".*kernel_form")

# Names are imported on first use (PEP 562): ``import workbench`` alone costs a few
# milliseconds instead of a second (SciPy, Numba, ArviZ), so the command line and the study
# workers pay only for what they use.
_NAMES = {
    "NonFiniteDensityError": "errors", "SlowGradientWarning": "errors", "TargetError": "errors",
    "WorkbenchError": "errors", "CacheWarning": "errors", "LongRunWarning": "errors",
    "Reference": "references", "reference": "references",
    "Budget": "result", "Cost": "result", "Result": "result",
    "GradientCheck": "gradient_check", "Target": "target", "Truth": "truth", "check_gradient": "gradient_check",
}
# modules that live below the top level, under their public name
_MODULES = {"posteriors": "targets.posteriors"}


def compare(target, **kwargs):
    """Every applicable method on ``target`` at equal gradient budgets, scored against the truth
    or a checked reference, on one report page with a recommendation (``workbench/comparison.py``;
    the command line's ``workbench compare TARGET``)."""
    from .comparison import compare as _compare

    return _compare(target, **kwargs)


def calibrate(model, methods=None, n_sims=None, grad_budget=None, seed=0, options=None, **kwargs):
    """Simulation-based calibration of every method on ``model`` (a PyMC model, a target with a
    generative form, or ``path/to/file.py:NAME``), with no reference posterior: a ``Calibration``
    with ``ranks``, ``quantities``, ``p_values`` and ``flagged`` (``workbench/calibration/``; the
    command line's ``workbench calibrate FILE:model``)."""
    from .calibration import calibrate as _calibrate

    return _calibrate(model, methods, n_sims, grad_budget, seed, options, **kwargs)


def __getattr__(name: str):
    if name == "__version__":
        from .cache import package_version

        value = package_version()
    elif name in _MODULES:
        value = importlib.import_module(f".{_MODULES[name]}", __name__)
    elif name in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    else:  # a submodule: wb.targets, wb.methods, wb.metrics, wb.diagnostics, ...
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'workbench' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Budget",
    "Reference",
    "Cost",
    "GradientCheck",
    "NonFiniteDensityError",
    "Result",
    "SlowGradientWarning",
    "LongRunWarning",
    "Target",
    "TargetError",
    "Truth",
    "approximations",
    "calibrate",
    "WorkbenchError",
    "check_gradient",
    "compare",
    "methods",
    "reference",
    "metrics",
    "posteriors",
    "targets",
]
