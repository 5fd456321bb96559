"""Where built references are kept: the on-disk cache, keyed by the target, the method, the seed
and the library's code (a reference computed by other code is built again)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..cache import CellCache, code_version, data_digest, spec_hash
from ..target import Target
from .recipe import DEFAULT_REFERENCE, REFERENCE_RUNS
from .record import Reference

# user-built targets are identified by their data too (a built-in target's spec already is)
_USER_FACTORIES = ("from_numba", "from_logp", "from_pymc", "custom")
SUMMARY_KEYS = ("mean", "sd", "mcse_mean", "mcse_sd")


def reference_key(target_spec: dict, method: dict, seed: int = 0, data: str | None = None,
                  max_runs: int = REFERENCE_RUNS) -> str:
    """The cache key of a reference: target spec, method spec, seed, the library's version
    (and, for a user's target, its data digest; the number of runs allowed when not the default)."""
    fields = {"target": target_spec, "method": method, "seed": seed, "version": code_version()}
    if max_runs != REFERENCE_RUNS:
        fields["max_runs"] = max_runs
    if data is not None:
        fields["data"] = data
    return spec_hash(fields)


def target_reference_key(target: Target, method: dict | None = None, seed: int = 0) -> str:
    spec = dict(target.spec)
    data = data_digest(target) if spec.get("factory") in _USER_FACTORIES else None
    return reference_key(spec, dict(DEFAULT_REFERENCE if method is None else method), seed, data)


def default_cache_dir() -> Path:
    """``$WORKBENCH_CACHE`` or ``~/.cache/workbench`` (``$XDG_CACHE_HOME`` respected)."""
    if os.environ.get("WORKBENCH_CACHE"):
        return Path(os.environ["WORKBENCH_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "workbench"


def references_cache(cache_dir: str | os.PathLike | None = None) -> CellCache:
    """The on-disk store of references under ``cache_dir`` (default :func:`default_cache_dir`)."""
    return CellCache(default_cache_dir() if cache_dir is None else Path(cache_dir), "_references")


def reference_arrays(ref: Reference) -> dict:
    """The arrays a reference is stored as: its draws and its whole run's summary."""
    arrays = {"draws": ref.draws}
    for k in SUMMARY_KEYS:
        if ref.summary is not None and k in ref.summary:
            arrays[f"summary_{k}"] = np.asarray(ref.summary[k], dtype=float)
    return arrays


def summary_of(arrays: dict) -> dict | None:
    """The summary stored beside the draws (None for an entry written without one)."""
    if not all(f"summary_{k}" in arrays for k in SUMMARY_KEYS):
        return None
    return {k: np.asarray(arrays[f"summary_{k}"], dtype=float) for k in SUMMARY_KEYS}


def save_reference(cache: CellCache, key: str, ref: Reference, target_spec: dict | None = None) -> None:
    cache.put(key, {"status": "ok", "info": ref.info(), "target": target_spec}, reference_arrays(ref))


def load_reference(cache: CellCache, key: str) -> Reference | None:
    entry = cache.get(key)
    if entry is None or entry.get("status") != "ok":
        return None
    arrays = cache.arrays(key)
    draws = arrays.get("draws")
    return None if draws is None else Reference.from_info(entry["info"], draws, summary_of(arrays))
