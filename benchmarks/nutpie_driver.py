"""Runs nutpie on a density given as arrays, in nutpie's own virtual environment (nutpie pins
ArviZ below 1, so it never enters the project's): ``benchmarks/mcmc_speed.py --nutpie`` writes
the arrays and the settings to an .npz file, runs this script with that venv's Python, and
reads back the draws and the gradient counts.

The densities are written here again, in Numba, as the library writes them (the workbench
package does not import under nutpie's venv): a Gaussian given by its mean and precision,
a Bernoulli-logit regression with a Gaussian prior of precision ``prec``, and a linear regression
with an unknown noise scale (coefficients and log sigma; ``workbench/targets/posteriors.py``'s
``linear_sigma_logp_grad``). Before it
samples, the script checks its density against the library's values at the points the
caller sent (same gradient; log densities equal up to one constant) and reports the error.

    python benchmarks/nutpie_driver.py IN.npz OUT.npz
"""

import json
import sys
import time

import numba
import numpy as np


@numba.njit(cache=False)
def gaussian_logp_grad(x, mean, precision):
    r = x - mean
    g = -precision @ r
    return 0.5 * np.dot(r, g), g


@numba.njit(cache=False)
def logistic_logp_grad(theta, X, y, prec):
    eta = X @ theta
    s = 1.0 / (1.0 + np.exp(-eta))
    g = X.T @ (y - s) - prec * theta
    lp = np.sum(y * eta - np.logaddexp(0.0, eta)) - 0.5 * prec * np.dot(theta, theta)
    return lp, g


@numba.njit(cache=False)
def linear_sigma_logp_grad(theta, X, y):
    p = X.shape[1]
    beta, log_sigma = theta[:p], theta[p]
    inv_var = np.exp(-2.0 * log_sigma)
    r = y - X @ beta
    g = np.empty(p + 1)
    g[:p] = X.T @ r * inv_var - beta
    rr = np.dot(r, r)
    sigma2 = np.exp(2.0 * log_sigma)
    g[p] = rr * inv_var - y.size - sigma2 + 1.0
    lp = -0.5 * np.dot(beta, beta) - 0.5 * rr * inv_var - y.size * log_sigma - 0.5 * sigma2 + log_sigma
    return lp, g


def main(path_in: str, path_out: str) -> None:
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    spec = dict(np.load(path_in, allow_pickle=False))
    kind = str(spec["kind"])
    dim = int(spec["dim"])
    if kind == "gaussian":
        mean, precision = spec["mean"], spec["precision"]

        def logp(x):
            return gaussian_logp_grad(x, mean, precision)
    elif kind == "linear_sigma":
        X, y = spec["X"], spec["y"]

        def logp(x):
            return linear_sigma_logp_grad(x, X, y)
    else:
        X, y, prec = spec["X"], spec["y"], float(spec["prec"])

        def logp(x):
            return logistic_logp_grad(x, X, y, prec)

    # the same density as the library's: equal gradients, log densities equal up to a constant
    offsets, grad_error = [], 0.0
    for point, lp_ref, g_ref in zip(spec["points"], spec["point_logp"], spec["point_grad"]):
        lp, g = logp(point)
        offsets.append(lp - lp_ref)
        grad_error = max(grad_error, float(np.max(np.abs(g - g_ref)) / (1.0 + np.max(np.abs(g_ref)))))
    check = {"grad_rel_error": grad_error, "logp_offset_spread": float(np.ptp(offsets))}

    def make_logp_fn():
        def fn(x, **unused):
            lp, g = logp(x)
            return float(lp), g
        return fn

    def make_expand_fn(seed1, seed2, chain):
        def fn(x, **unused):
            return {"theta": np.asarray(x, dtype=np.float64)}
        return fn

    model = from_pyfunc(dim, make_logp_fn, make_expand_fn, [np.dtype("float64")], [(dim,)], ["theta"],
                        make_initial_point_fn=lambda seed: np.random.default_rng(seed).uniform(-2, 2, dim))
    out = {"check": json.dumps(check)}
    for seed in [int(s) for s in spec["seeds"]]:
        start = time.perf_counter()  # the whole call as a user sees it: sampling and its trace
        trace = nutpie.sample(model, chains=int(spec["chains"]), draws=int(spec["draws"]), seed=seed,
                              low_rank_modified_mass_matrix=bool(spec["low_rank"]), progress_bar=False,
                              save_warmup=True, cores=int(spec["chains"]))
        out[f"seconds_{seed}"] = np.array([time.perf_counter() - start])
        draws = trace.posterior["theta"].values  # (chains, draws, dim)
        steps_tune = trace.warmup_sample_stats["n_steps"].values
        steps = trace.sample_stats["n_steps"].values
        out[f"draws_{seed}"] = draws
        # each transition's leapfrog steps are its gradients; one more per chain at its start
        out[f"grads_{seed}"] = np.array([steps_tune.sum() + steps.sum() + draws.shape[0]])
        out[f"warmup_grads_{seed}"] = np.array([steps_tune.sum()])
        out[f"tune_{seed}"] = np.array([steps_tune.shape[1]])
        out[f"accept_{seed}"] = np.array([float(trace.sample_stats["mean_tree_accept"].values.mean())])
        out[f"step_{seed}"] = np.array([float(trace.sample_stats["step_size"].values.mean())])
        out[f"divergences_{seed}"] = np.array([int(trace.sample_stats["diverging"].values.sum())])
    np.savez(path_out, **out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
