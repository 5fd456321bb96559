"""The same seed gives bit-identical draws and gradient counts in a fresh process, whatever
the compile caches hold: a fresh interpreter with empty Numba and PyTensor caches runs NUTS and
FullRankVI on two PyMC models and on a Numba target, then a second one loads everything from the
first one's (now warm) caches, and a third all of them. (The in-process tests check the same seed twice in one process.)"""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import hashlib, json
import numpy as np
import pymc as pm
import workbench as wb
out = {}
y = np.random.default_rng(0).normal(size=200)
with pm.Model() as normal_model:  # a sum over data: where a fused, reassociated loop rounds otherwise
    mu = pm.Normal("mu", 0, 5)
    pm.Normal("y", mu, pm.HalfNormal("s", 2), observed=y)
targets = {"pymc": wb.posteriors.load("eight_schools_centered", backend="pymc"),
           "pymc_data": wb.Target.from_pymc(normal_model, "normal", noncentre=False),
           "numba": wb.posteriors.load("brownian_motion")}
for tname, t in targets.items():
    for m in (wb.methods.NUTS(chains=2, warmup=300, draws=300), wb.methods.FullRankVI(steps=300, draws=200)):
        r = m.run(t, seed=11)
        out[f"{tname}/{m.name}"] = [hashlib.sha256(np.ascontiguousarray(r.draws).tobytes()).hexdigest(),
                                    int(r.cost.grad_evals)]
print(json.dumps(out))
"""


def _run(tmp, name):
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(tmp / name / "numba")
    # base_compiledir, not compiledir: PyTensor keeps its Numba cache under base_compiledir/numba
    env["PYTENSOR_FLAGS"] = f"base_compiledir={tmp / name / 'pytensor'}"
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_same_seed_same_draws_in_fresh_processes_with_fresh_or_shared_caches(tmp_path):
    first = _run(tmp_path, "a")  # empty caches: everything compiled in this process
    second = _run(tmp_path, "a")  # the first one's caches, now warm: everything loaded
    third = _run(tmp_path, "a")  # PyTensor fills its cache over two processes: this one loads all of it
    assert first == second == third
    assert len(first) == 6 and all(n > 0 for _, n in first.values())
