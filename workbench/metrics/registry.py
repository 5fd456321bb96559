"""Study metrics found by name.

A study's cells name the extra quantities they want (``Cell(extra="marginal_accuracy")``);
those names are looked up here when the cell is defined, so a typo fails at once, in the
main process, with the list of names, not later in a worker. A metric is a function
``(result, target, reference) -> dict`` of table columns (``reference``: draws standing in for
a missing truth, or None); arrays for figures go under the key ``"_arrays"``.

The library's own are listed in ``STUDY_METRICS``. Register your own with
``@wb.metrics.register("name")``; a cell may also name a function ``"package.module:function"``
(imported, and checked, when the cell is defined).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from .b2 import b2_crossing
from .calibration import calibration_ranks
from .marginals import marginal_accuracy, marginal_transfer
from .mcmc import chain_scaling
from .predictive import theorem1_quantities
from .vi import posterior_sd_ratios, vi_ablation, vi_quality

STUDY_METRICS: dict[str, Callable] = {
    "b2_crossing": b2_crossing,
    "calibration_ranks": calibration_ranks,
    "marginal_accuracy": marginal_accuracy,
    "marginal_transfer": marginal_transfer,
    "chain_scaling": chain_scaling,
    "theorem1_quantities": theorem1_quantities,
    "posterior_sd_ratios": posterior_sd_ratios,
    "vi_quality": vi_quality,
    "vi_ablation": vi_ablation,
}


def register(name: str | None = None):
    """Decorator: make ``fn`` a study metric under ``name`` (default: its own name)."""

    def wrap(fn: Callable) -> Callable:
        key = name or fn.__name__
        if key in STUDY_METRICS and STUDY_METRICS[key] is not fn:
            raise ValueError(f"a study metric named {key!r} is already registered")
        STUDY_METRICS[key] = fn
        return fn

    return wrap


def available() -> list[str]:
    """The names of the registered study metrics."""
    return sorted(STUDY_METRICS)


def study_metric(name: str) -> Callable:
    """The study metric ``name`` names (a registered name or ``"package.module:function"``);
    ValueError naming the known ones when there is none."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a study metric is named by a non-empty string, got {name!r}")
    if name in STUDY_METRICS:
        return STUDY_METRICS[name]
    if ":" in name:
        module, _, func = name.partition(":")
        try:
            fn = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"study metric {name!r} cannot be imported: {exc}") from None
        if callable(fn):
            return fn
    raise ValueError(f"unknown study metric {name!r}; registered: {available()} "
                     "(or name a function as 'package.module:function')")
