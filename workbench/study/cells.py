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

import hashlib
import json
import math
import time
import traceback
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .. import metrics
from ..diagnostics import health_flags

# draws kept per chain for the figures (the table's metrics use all draws; weighted draws are
# importance-resampled from all of them)
KEEP_DRAWS = 1000


@dataclass(frozen=True)
class Cell:
    """One run: ``method.run(target, seed=seed, grad_budget=grad_budget)`` then ``evaluate``.

    ``labels`` are extra table columns (a display name, the budget level, ...): they are not
    part of the cache key. ``timing`` adds the time of one ``logp_grad`` call and the
    overhead ratio wall / (gradient evaluations x that time). ``keep`` coordinates of the
    draws are kept for the figures. ``extra`` names a function "module:function" taking
    (result, target) and returning a dict of more columns (a study's own quantities).
    """

    target: dict
    method: dict
    seed: int = 0
    grad_budget: int | None = None
    labels: dict = field(default_factory=dict)
    timing: bool = False
    keep: int = 2
    extra: str = ""

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
        }


def spec_hash(fields: dict) -> str:
    """A stable 16-hex-digit hash of a JSON-able dict (key order does not matter)."""
    text = json.dumps(fields, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def target_label(spec: dict) -> str:
    """A short readable name for a target spec: gaussian(dim=10, scales=logspace)."""
    args = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "factory")
    return f"{spec['factory']}({args})"


@lru_cache(maxsize=64)
def _target_from_json(text: str):
    from .. import targets

    spec = json.loads(text)
    factory = spec.pop("factory")
    if factory not in targets.available():
        raise ValueError(f"unknown target {factory!r}; built-in targets: {sorted(targets.available())}")
    return getattr(targets, factory)(**spec)


def build_target(spec: dict):
    """The target a spec describes (cached per process: building a BNN target loads data)."""
    return _target_from_json(json.dumps(spec, sort_keys=True))


def build_method(spec: dict):
    """The method a spec describes: {"method": "NUTS", **settings}."""
    from .. import methods

    settings = dict(spec)
    name = settings.pop("method")
    cls = getattr(methods, name, None)
    if not (isinstance(cls, type) and issubclass(cls, methods.Method)):
        raise ValueError(f"unknown method {name!r}; methods: {sorted(methods_available())}")
    return cls(**settings)


def methods_available() -> list[str]:
    from .. import methods

    return [n for n in methods.__all__ if isinstance(getattr(methods, n), type) and issubclass(getattr(methods, n), methods.Method) and n != "Method"]


def extra_function(name: str):
    """The function "package.module:function" names."""
    import importlib

    module, _, func = name.partition(":")
    return getattr(importlib.import_module(module), func)


def _thin(draws: np.ndarray, keep: int) -> np.ndarray:
    n = draws.shape[1]
    idx = np.linspace(0, n - 1, min(n, KEEP_DRAWS)).astype(int) if n else np.zeros(0, int)
    return np.ascontiguousarray(draws[:, idx, :keep])


def _resample_for_figures(result, keep: int, seed: int) -> dict:
    """Weighted draws shown by what they imply: a systematic importance resample of ALL the
    draws (not of a thinned subset, whose few surviving weights would decide the picture),
    with the weights' Kish ESS, the number the table reports, to print beside it."""
    from ..methods.importance import resample

    x = result.flat_draws()
    lw = np.asarray(result.log_weights, dtype=float).ravel()
    lw = np.where(np.isfinite(lw), lw, -np.inf)
    n = min(len(x), KEEP_DRAWS * result.draws.shape[0])
    idx = resample(lw, n, np.random.default_rng(seed))
    return {"draws": np.ascontiguousarray(x[idx, :keep][None]),
            "weighted_ess": np.array([metrics.kish_ess(result.weights())]),
            "weighted_n": np.array([len(x)])}


def run_cell(cell: Cell, reference: np.ndarray | None = None) -> dict:
    """Run one cell. Never raises: a failure comes back as ``{"status": "error", ...}``.

    Returns {"status", "error", "row": metrics and costs, "arrays": small arrays for figures}.
    """
    start = time.perf_counter()
    try:
        target = build_target(cell.target)
        method = build_method(cell.method)
        result = method.run(target, seed=cell.seed, grad_budget=cell.grad_budget)
        row = metrics.evaluate(result, target, reference=reference, seed=cell.seed)
        if cell.timing:
            from ..mcmc.timing import seconds_per_gradient

            t_grad = seconds_per_gradient(target, min_seconds=0.02)
            row["grad_seconds"] = t_grad
            row["overhead"] = result.cost.wall_seconds / (result.cost.grad_evals * t_grad) if result.cost.grad_evals else math.nan
        extra_arrays = {}
        if cell.extra:
            extra = dict(extra_function(cell.extra)(result, target, reference))
            extra_arrays = extra.pop("_arrays", {})
            row.update(extra)
        row["messages"] = " | ".join(result.messages)
        row["health"] = health_flags(result.messages)
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
            "status": "error",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=8),
            "row": {"cell_seconds": time.perf_counter() - start},
            "arrays": {},
        }
    row["cell_seconds"] = time.perf_counter() - start
    return {"status": status, "error": error, "row": row, "arrays": arrays}


# a reference that fails posteriordb's standard is run again, up to this many runs: with a smaller
# step (target_accept raised toward 1) if it diverged, with twice the warmup and draws if its ESS
# was short; not when R-hat says the chains sit in different modes (longer runs do not fix that)
REFERENCE_RUNS = 3
REFERENCE_MULTIMODAL_R_HAT = 1.05


def run_reference(target_spec: dict, method_spec: dict, seed: int) -> dict:
    """A long run standing in for the truth of a target without one (all draws, pooled).

    Checked against posteriordb's standard (R-hat < 1.01, bulk and tail ESS >= 400, no
    divergences: ``diagnostics.REFERENCE_STANDARD``); ``info["passes"]`` and ``info["why_not"]``
    say whether it passed, so a page can say when its scores rest on an untrustworthy reference.
    """
    from ..diagnostics import REFERENCE_STANDARD, ChainDiagnostics, chain_diagnostics, passes_reference_standard

    try:
        target = build_target(target_spec)
        spec = dict(method_spec)
        grad_evals = 0
        for run in range(1, REFERENCE_RUNS + 1):
            result = build_method(spec).run(target, seed=seed + run - 1)
            grad_evals += result.cost.grad_evals
            diag = result.info.get("diagnostics")  # a sampler's; any other method's draws are checked here
            diag = ChainDiagnostics(**diag) if diag is not None else chain_diagnostics(result.draws)
            passes, why_not = passes_reference_standard(diag)
            if passes or diag.r_hat_max > REFERENCE_MULTIMODAL_R_HAT or run == REFERENCE_RUNS:
                break
            if diag.divergences:
                spec = {**spec, "target_accept": 1.0 - (1.0 - spec.get("target_accept", 0.8)) / 3}
            if min(diag.ess_bulk_min, diag.ess_tail_min) < REFERENCE_STANDARD["ess_min"]:
                spec = {**spec, "warmup": 2 * spec.get("warmup", 1000), "draws": 2 * spec.get("draws", 1000)}
        draws = result.flat_draws()
        return {
            "status": "ok",
            "draws": draws,
            "info": {
                "method": spec,
                "seed": seed + run - 1,
                "runs": run,
                "n_draws": int(draws.shape[0]),
                "r_hat_max": diag.r_hat_max,
                "ess_bulk_min": diag.ess_bulk_min,
                "ess_tail_min": diag.ess_tail_min,
                "divergences": diag.divergences,
                "passes": passes,
                "why_not": why_not,
                "grad_evals": grad_evals,
            },
        }
    except Exception as exc:
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}
