"""nutpie, the reference to beat for NUTS, run on the workbench's own densities.

nutpie pins ArviZ below 1, so it lives in a virtual environment of its own: ``NUTPIE_PYTHON``
names its Python, or one is made at ``.nutpie-venv/`` (git-ignored) on first use, from the
package index. ``benchmarks/nutpie_driver.py`` runs there on the density's arrays; this module
sends them, and scores nutpie's draws with the library's own ESS (ArviZ 1.x, as every row of
the workbench), so the two columns are measured alike: minimum bulk ESS per 1,000 gradient
evaluations, warmup included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import workbench as wb
from workbench.diagnostics import chain_diagnostics

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".nutpie-venv"
DRIVER = Path(__file__).resolve().parent / "nutpie_driver.py"


def nutpie_python(flow: bool = False) -> str:
    """The Python of nutpie's venv (made, with nutpie and Numba installed, when missing); with
    ``flow``, also JAX, flowjax and PyMC, which nutpie's flow adaptation needs."""
    given = os.environ.get("NUTPIE_PYTHON")
    if given:
        return given
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"installing nutpie into {VENV} (once) ...", file=sys.stderr)
        base = "python3.12" if subprocess.run(["which", "python3.12"], capture_output=True).returncode == 0 else "python3"
        subprocess.run([base, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "nutpie", "numba"], check=True)
    if flow and subprocess.run([str(python), "-c", "import flowjax, pymc"], capture_output=True).returncode != 0:
        print(f"installing nutpie's flow dependencies into {VENV} (once) ...", file=sys.stderr)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "nutpie[jax]", "flowjax", "pymc"], check=True)
    return str(python)


def density_arrays(target) -> dict:
    """The arrays ``nutpie_driver.py`` rebuilds ``target``'s density from (Gaussian targets
    with a known covariance, the conjugate linear regression among them; logistic regressions;
    the linear regression with an unknown noise scale), and three check points."""
    if target.name.startswith("logistic_regression"):
        X, y, params = target.data
        arrays = {"kind": "logistic", "X": X, "y": y, "prec": float(params[0])}
    elif target.name == "diabetes_linear_sigma":
        X, y = target.data
        arrays = {"kind": "linear_sigma", "X": X, "y": y}
    elif target.truth is not None and target.name.startswith(("gaussian", "rotated_gaussian", "diabetes_linear")):
        cov = target.truth.cov
        arrays = {"kind": "gaussian", "mean": np.asarray(target.truth.mean, float), "precision": np.linalg.inv(cov)}
    else:
        raise ValueError(f"no nutpie form for target {target.name!r}")
    rng = np.random.default_rng(0)
    points = rng.standard_normal((3, target.dim))
    values = [target.logp_and_grad(p) for p in points]
    return {**arrays, "dim": target.dim, "points": points,
            "point_logp": np.array([v[0] for v in values]), "point_grad": np.array([v[1] for v in values])}


def run_nutpie(target, seeds, chains: int = 4, draws: int = 1000, low_rank: bool = False) -> list[dict]:
    """nutpie at its defaults (its own warmup length for the chosen metric) on ``target``,
    one row per seed: gradients (warmup included), min bulk ESS, ESS per 1,000 gradients."""
    with tempfile.TemporaryDirectory() as tmp:
        path_in, path_out = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(path_in, **density_arrays(target), seeds=np.array(list(seeds)), chains=chains, draws=draws,
                 low_rank=low_rank)
        proc = subprocess.run([nutpie_python(), str(DRIVER), str(path_in), str(path_out)], capture_output=True,
                              text=True, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"nutpie failed on {target.name}: {proc.stderr[-2000:]}")
        out = dict(np.load(path_out))
    check = json.loads(str(out["check"]))
    if check["grad_rel_error"] > 1e-8 or check["logp_offset_spread"] > 1e-6:
        raise RuntimeError(f"nutpie's copy of {target.name}'s density differs from the library's: {check}")
    rows = []
    for seed in seeds:
        diag = chain_diagnostics(out[f"draws_{seed}"])
        grads = int(out[f"grads_{seed}"][0])
        rows.append({"grads": grads, "warmup_grads": int(out[f"warmup_grads_{seed}"][0]),
                     "tune": int(out[f"tune_{seed}"][0]), "ess_bulk_min": diag.ess_bulk_min,
                     "ess_per_1k_grad": 1000 * diag.ess_bulk_min / grads, "accept": float(out[f"accept_{seed}"][0]),
                     "step_size": float(out[f"step_{seed}"][0]), "divergences": int(out[f"divergences_{seed}"][0]),
                     "r_hat_max": diag.r_hat_max, "seconds": float(out[f"seconds_{seed}"][0])})
    return rows


if __name__ == "__main__":  # a quick look: python benchmarks/nutpie_reference.py
    t = wb.targets.gaussian(10, correlation=0.9)
    for row in run_nutpie(t, seeds=(0,)):
        print(row)
