"""Runs nutpie's normalizing-flow adaptation (``adaptation="flow"``, Seyboldt et al.; JAX and
flowjax) on a few posteriors written as PyMC models, in nutpie's own virtual environment, for
``benchmarks/mcmc_speed.py --flow``. The models are the library's (same parameters, same order):

- ``banana``: Haario's twisted Gaussian, x1 ~ N(0, 10^2), x2 | x1 ~ N(0.03 (x1^2 - 100), 1);
- ``funnel100``: Neal's funnel, v ~ N(0, 3^2), x_1..99 | v ~ N(0, e^v);
- ``funnel101_nutpie_docs``: the funnel of nutpie's own flow documentation (``docs/nf-adapt.qmd``),
  log_sigma ~ N(0, 1), x_1..100 ~ N(0, exp(log_sigma / 2)): the library's ``funnel(101, v_sd=1)``;
- ``eight_schools_centered``: mu ~ N(0, 5^2), tau ~ HalfCauchy(5), theta_j ~ N(mu, tau^2),
  y_j ~ N(theta_j, s_j^2) (rank-based ESS and R-hat do not see tau's log transform);
- ``gauss100``: independent normals with sds log-spaced from 0.1 to 10, compiled by nutpie's
  default (Numba) backend: ``benchmarks/mcmc_speed.py --whole-call`` times nutpie's whole call on it.

Writes, per seed, the draws (chains, draws, d), gradients with warmup (sum of n_steps), the
warmup's share and the divergences after warmup.

    python benchmarks/nutpie_flow_driver.py NAME ADAPTATION SEEDS OUT.npz     (SEEDS: 0,1,2)
"""

import sys
import time

import numpy as np


def model(name):
    import pymc as pm

    with pm.Model() as m:
        if name == "banana":
            x1 = pm.Normal("x1", 0, 10)
            pm.Normal("x2", 0.03 * (x1**2 - 100), 1)
        elif name == "funnel100":
            v = pm.Normal("v", 0, 3)
            pm.Normal("x", 0, pm.math.exp(v / 2), shape=99)
        elif name == "funnel101_nutpie_docs":
            log_sigma = pm.Normal("log_sigma")
            pm.Normal("x", mu=0, sigma=pm.math.exp(log_sigma / 2), shape=100)
        elif name == "gauss100":
            pm.Normal("x", 0, np.logspace(-1, 1, 100), shape=100)
        elif name == "eight_schools_centered":
            y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
            s = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])
            mu = pm.Normal("mu", 0, 5)
            tau = pm.HalfCauchy("tau", 5)
            theta = pm.Normal("theta", mu, tau, shape=8)
            pm.Normal("y", theta, s, observed=y)
        else:
            raise ValueError(f"no model {name!r}")
    return m


def main(name, adaptation, seeds, path_out):
    import nutpie

    kwargs = {"backend": "jax", "gradient_backend": "jax"} if adaptation == "flow" else {}
    compiled = nutpie.compile_pymc_model(model(name), **kwargs)
    out = {}
    for seed in seeds:
        start = time.perf_counter()
        trace = nutpie.sample(compiled, chains=4, draws=1000, seed=seed, adaptation=adaptation, progress_bar=False,
                              save_warmup=True, cores=4)
        out[f"seconds_{seed}"] = np.array([time.perf_counter() - start])
        post = trace["posterior"]
        parts = [np.asarray(post[v].values).reshape(4, 1000, -1) for v in post.data_vars]
        out[f"draws_{seed}"] = np.concatenate(parts, axis=2)
        warm = int(np.asarray(trace["warmup_sample_stats"]["n_steps"].values).sum())
        sampling = int(np.asarray(trace["sample_stats"]["n_steps"].values).sum())
        out[f"grads_{seed}"] = np.array([warm + sampling])
        out[f"warmup_grads_{seed}"] = np.array([warm])
        out[f"divergences_{seed}"] = np.array([int(np.asarray(trace["sample_stats"]["diverging"].values).sum())])
    np.savez(path_out, **out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
