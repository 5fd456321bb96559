"""One cell of a study: a target spec, a method spec, a seed and a budget, and the function
that runs it (in a worker process or on a Dask worker) and returns one table row.

Specs are plain JSON-able dicts, so cells pickle cheaply, hash stably, and a worker
rebuilds the target itself (compiled kernels come from Numba's on-disk cache):

    target spec  {"factory": "gaussian", "dim": 10, "scales": "logspace"}
                 -> wb.targets.gaussian(dim=10, scales="logspace")
    method spec  {"method": "NUTS", "chains": 2, "warmup": 500}
                 -> wb.methods.NUTS(chains=2, warmup=500)

Workers never touch the cache: they return the row and a few small arrays (the draws of
the first coordinates, thinned, for the figures) and the client writes them. So a Dask
cluster needs no shared file system.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from .. import metrics
from ..diagnostics import health_flags
from ..errors import BudgetTooSmallError
from ..methods import build_method
from ..targets.specs import build_target

# draws kept per chain for the figures (the table's metrics use all draws; weighted draws are
# importance-resampled from all of them)
KEEP_DRAWS = 1000

BUDGET_TOO_SMALL = "budget too small"
"""A cell's status when its method refused the budget at the start (``BudgetTooSmallError``)."""


@dataclass(frozen=True)
class Cell:
    """One run: ``method.run(target, seed=seed, grad_budget=grad_budget)`` then ``evaluate``.

    ``labels`` are extra table columns (a display name, the budget level, ...): they are not
    part of the cache key. ``timing`` adds the time of one ``logp_grad`` call and the
    overhead ratio wall / (gradient evaluations x that time). ``keep`` coordinates of the
    draws are kept for the figures. ``extra`` names a study metric (``wb.metrics.available()``,
    e.g. "marginal_accuracy"): a function of (result, target, reference) returning more
    columns; the name is checked here, when the cell is defined. ``score=False`` leaves out
    ``evaluate`` (a calibration's cells rank a simulated truth instead: the ``extra`` is the
    score), keeping the cost columns and the run's health.
    """

    target: dict
    method: dict
    seed: int = 0
    grad_budget: int | None = None
    labels: dict = field(default_factory=dict)
    timing: bool = False
    keep: int = 2
    extra: str = ""
    score: bool = True

    def __post_init__(self):
        if self.extra:
            metrics.study_metric(self.extra)  # ValueError listing the known names

    def key_fields(self, version: str) -> dict:
        return {
            "target": self.target,
            "method": self.method,
            "seed": self.seed,
            "grad_budget": self.grad_budget,
            "timing": self.timing,
            "keep": self.keep,
            "extra": self.extra,
            "version": version,
            **({} if self.score else {"score": False}),
        }


def target_label(spec: dict) -> str:
    """A short readable name for a target spec: gaussian(dim=10, scales=logspace)."""
    args = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "factory")
    return f"{spec['factory']}({args})"


def _thin(draws: np.ndarray, keep: int) -> np.ndarray:
    n = draws.shape[1]
    idx = np.linspace(0, n - 1, min(n, KEEP_DRAWS)).astype(int) if n else np.zeros(0, int)
    return np.ascontiguousarray(draws[:, idx, :keep])


def _resample_for_figures(result, keep: int, seed: int) -> dict:
    """Weighted draws shown by what they imply: a systematic importance resample of ALL the
    draws (not of a thinned subset, whose few surviving weights would decide the picture),
    with the weights' Kish ESS, the number the table reports, to print beside it."""
    from ..fitting.importance_weights import resample

    x = result.flat_draws()
    lw = np.asarray(result.log_weights, dtype=float).ravel()
    lw = np.where(np.isfinite(lw), lw, -np.inf)
    n = min(len(x), KEEP_DRAWS * result.draws.shape[0])
    idx = resample(lw, n, np.random.default_rng(seed))
    return {"draws": np.ascontiguousarray(x[idx, :keep][None]),
            "weighted_ess": np.array([metrics.kish_ess(result.weights())]),
            "weighted_n": np.array([len(x)])}


def run_cell(cell: Cell, reference: np.ndarray | None = None) -> dict:
    """Run one cell. Never raises: a failure comes back as ``{"status": "error", ...}`` (a method
    that refuses its budget as too small, ``{"status": "budget too small", ...}``).

    Returns {"status", "error", "row": metrics and costs, "arrays": small arrays for figures}.
    """
    start = time.perf_counter()
    try:
        target = build_target(cell.target)
        method = build_method(cell.method)
        # (a run's warnings are its messages, the table's health column: the executors silence
        # them, study/executors.py, rather than this function, which threads may run at once)
        result = method.run(target, seed=cell.seed, grad_budget=cell.grad_budget)
        if result.interrupted:  # Ctrl-C: a partial run is not the cell's answer, and must not be cached
            raise KeyboardInterrupt
        if cell.score:
            row = metrics.evaluate(result, target, reference=reference, seed=cell.seed)
        else:
            row = {"n_draws": int(result.draws.shape[0] * result.draws.shape[1]),
                   **{k: getattr(result.cost, k) for k in ("grad_evals", "logp_evals", "wall_seconds",
                                                           "compile_seconds")}}
        if cell.timing:
            from ..mcmc.timing import seconds_per_gradient

            t_grad = seconds_per_gradient(target, min_seconds=0.02)
            row["grad_seconds"] = t_grad
            row["overhead"] = result.cost.wall_seconds / (result.cost.grad_evals * t_grad) if result.cost.grad_evals else math.nan
        extra_arrays = {}
        if cell.extra:
            extra = dict(metrics.study_metric(cell.extra)(result, target, reference))
            extra_arrays = extra.pop("_arrays", {})
            row.update(extra)
        if result.info.get("metric_chosen"):  # what metric="auto" (or "flow") ran in the end
            row["metric_chosen"] = str(result.info["metric_chosen"])
        messages = list(result.messages) + ([row["fit_warning"]] if isinstance(row.get("fit_warning"), str) else [])
        row["messages"] = " | ".join(messages)
        row["health"] = health_flags(messages)
        if result.log_weights is None:
            arrays = {"draws": _thin(result.draws, cell.keep), **extra_arrays}
        else:
            arrays = {**_resample_for_figures(result, cell.keep, cell.seed), **extra_arrays}
        for name in ("energy", "diverging"):
            if name in result.stats and np.ndim(result.stats[name]) == 2:
                s = np.asarray(result.stats[name], dtype=float)
                idx = np.linspace(0, s.shape[1] - 1, min(s.shape[1], KEEP_DRAWS)).astype(int)
                arrays[name] = s[:, idx]
        status, error = "ok", ""
        if row["n_draws"] == 0:
            status, error = "failed", "no draws within the budget (" + row["messages"] + ")"
        elif not np.all(np.isfinite(result.draws)):
            status, error = "failed", "NaN or inf in the draws"
    except Exception as exc:  # recorded in the table; the study goes on
        return {
            # a budget below what the method's first stage needs: nothing ran (not a failure)
            "status": BUDGET_TOO_SMALL if isinstance(exc, BudgetTooSmallError) else "error",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=8),
            "row": {"cell_seconds": time.perf_counter() - start},
            "arrays": {},
        }
    row["cell_seconds"] = time.perf_counter() - start
    return {"status": status, "error": error, "row": row, "arrays": arrays}


def run_reference(target_spec: dict, method_spec: dict, seed: int, max_runs: int | None = None) -> dict:
    """Build a target's reference posterior in a worker (``references.build_reference``) and
    return it as plain data: {"status", "draws", "info"} (or the error). The client caches it."""
    from ..references import REFERENCE_RUNS, build_reference

    try:
        ref = build_reference(build_target(target_spec), method_spec, seed, max_runs or REFERENCE_RUNS)
        return {"status": "ok", "draws": ref.draws, "info": ref.info()}
    except Exception as exc:
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}
