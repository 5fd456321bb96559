"""References shipped with the package, as posteriordb ships its reference draws: the bundled
posteriors' and the studies' targets without an exact truth, built once by the ladder of
``recipe.py`` (minutes each for the latent-variable models) and kept small, the whole run's
summary (mean, sd and their Monte Carlo errors) with ``SHIPPED_DRAWS`` thinned draws in float32,
in ``workbench/references/data/NAME.npz``.

A shipped reference is used only for the target it was built on: the file holds the target's
spec and its log density at three points, and a target whose density differs there (the model
or its data changed) gets none (it is built anew, and rebuilding the file is due). Rebuild them
with::

    python -m workbench.references.shipped [NAME ...]     # every one by default

(``tests/unit/references/test_shipped.py`` rebuilds one and compares its summaries within MCSE.)
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from ..target import Target
from .recipe import REFERENCE_RUNS, build_reference
from .record import Reference
from .store import SUMMARY_KEYS, reference_arrays

DATA_DIR = Path(__file__).resolve().parent / "data"
SHIPPED_DRAWS = 4000
CHECK_POINTS = 3

# the references shipped: file name -> the spec of the target it is built on, then the specs of
# targets that are the same posterior (a bundled posterior and the built-in target it names)
SHIPPED = {
    "eight_schools_noncentered": ({"factory": "posterior", "name": "eight_schools_noncentered", "backend": "numba"},
                                  {"factory": "eight_schools", "centered": False}),
    "eight_schools_centered": ({"factory": "posterior", "name": "eight_schools_centered", "backend": "numba"},
                               {"factory": "eight_schools", "centered": True}),
    "diabetes_linear_sigma": ({"factory": "posterior", "name": "diabetes_linear_sigma", "backend": "numba"},),
    "breast_cancer_logistic": ({"factory": "posterior", "name": "breast_cancer_logistic", "backend": "numba"},
                               {"factory": "logistic_regression", "dataset": "breast_cancer"}),
    "stochastic_volatility": ({"factory": "posterior", "name": "stochastic_volatility", "backend": "numba"},),
    "lgcp": ({"factory": "posterior", "name": "lgcp", "backend": "numba"},),
    "bnn_40_5": ({"factory": "bnn", "n_data": 40, "widths": [5]},),  # the accuracy study's BNN
}


def _canonical(spec: dict) -> str:
    """A target's full spec as one string, the PyMC form of a bundled posterior as its Numba
    twin (the same density on the same coordinates)."""
    spec = dict(spec)
    if spec.get("factory") == "posterior":
        spec["backend"] = "numba"
    return json.dumps(spec, sort_keys=True, default=str)


def _check_points(target: Target) -> np.ndarray:
    rng = np.random.default_rng(20261126)
    return target.initial_point + 0.1 * rng.standard_normal((CHECK_POINTS, target.dim))


def _same_density(target: Target, points: np.ndarray, logps: np.ndarray) -> bool:
    """The target's log density at the file's points equals the file's, up to a constant (a
    PyMC twin may differ from the Numba form by one) and rounding."""
    mine = np.array([target.logp(p) for p in points])
    return bool(np.all(np.isfinite(mine)) and np.allclose(mine - mine[0], logps - logps[0], rtol=1e-7, atol=1e-6))


@functools.cache
def _index() -> dict:
    """canonical spec -> file, for every shipped file present and every spec it serves."""
    from ..targets.specs import build_target

    out = {}
    for name, specs in SHIPPED.items():
        path = DATA_DIR / f"{name}.npz"
        if path.exists():
            for spec in specs:
                out[_canonical(build_target(spec).spec)] = path
    return out


def _load(path: Path) -> tuple[dict, dict]:
    with np.load(path) as f:
        meta = json.loads(str(f["meta"]))
        arrays = {k: f[k] for k in f.files if k != "meta"}
    return meta, arrays


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def shipped_reference(target: Target) -> Reference | None:
    """The reference shipped for ``target`` (None if there is none, or if the target's density is
    not the one it was built on)."""
    path = _index().get(_canonical(target.spec))
    if path is None:
        return None
    meta, arrays = _load(path)
    if arrays["draws"].shape[1] != target.dim or not _same_density(target, arrays["check_points"], arrays["check_logp"]):
        return None
    summary = {k: arrays[f"summary_{k}"].astype(float) for k in SUMMARY_KEYS}
    info = {**meta["info"], "shipped": f"{path.name}#{file_digest(path)}"}
    ref = Reference.from_info(info, arrays["draws"].astype(float), summary)
    return dataclasses.replace(ref, param_names=target.param_names)


def write_shipped(name: str, ref: Reference, target: Target, directory: Path = DATA_DIR) -> Path:
    """Save ``ref`` as the shipped reference ``name`` of ``target``."""
    directory.mkdir(parents=True, exist_ok=True)
    idx = np.linspace(0, len(ref.draws) - 1, min(len(ref.draws), SHIPPED_DRAWS)).astype(int)
    arrays = reference_arrays(ref)
    arrays["draws"] = ref.draws[idx].astype(np.float32)
    points = _check_points(target)
    meta = {"name": name, "target_spec": _canonical(target.spec), "info": ref.info(), "built": time.strftime("%Y-%m-%d")}
    path = directory / f"{name}.npz"
    np.savez_compressed(path, meta=np.array(json.dumps(meta, default=str)), check_points=points,
                        check_logp=np.array([target.logp(p) for p in points]), **arrays)
    _index.cache_clear()
    return path


def build_shipped(name: str, directory: Path = DATA_DIR, seed: int = 0) -> Reference:
    """Build the shipped reference ``name`` (``SHIPPED``) up the whole ladder and write it."""
    from ..targets.specs import build_target

    target = build_target(SHIPPED[name][0])
    ref = build_reference(target, None, seed, REFERENCE_RUNS)
    write_shipped(name, ref, target, directory)
    return ref


def main(argv=None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or list(SHIPPED)
    unknown = [n for n in names if n not in SHIPPED]
    if unknown:
        print(f"unknown shipped references {unknown}; known: {list(SHIPPED)}", file=sys.stderr)
        return 2
    for name in names:
        start = time.perf_counter()
        ref = build_shipped(name)
        check = ref.cross_check or {}
        print(f"{name}: {'passes' if ref.passes else 'FAILS: ' + ref.why_not}; {ref.runs} run(s), "
              f"{ref.grad_evals:,} gradients, {time.perf_counter() - start:.0f} s; form {ref.form or 'own'}; "
              f"cross-check {check.get('max_mcse', float('nan')):.2f} MCSE ({check.get('worst', '')})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
