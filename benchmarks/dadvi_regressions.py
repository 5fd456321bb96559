"""DADVI on regression posteriors of the kinds users bring: how close it lands, for how much.

Models written in PyMC (read by ``Target.from_pymc``, as a user's own model arrives), beside the
bundled regressions:

- ``diabetes_raw_interactions``: the diabetes data with its raw, unstandardised predictors
  (ages in years, blood pressures in mm Hg, serum levels in their own units) and two
  interactions (bmi x bp, age x sex), an intercept, weakly informative priors, unknown noise;
  predictors whose scales differ by 1000x make a badly conditioned posterior;
- ``ar2``: an AR(2) time series (300 simulated points), its intercept, two coefficients and the
  noise scale;
- ``garch11``: a GARCH(1, 1) volatility model of 300 simulated returns (omega, and alpha and
  beta with alpha + beta < 1 by a stick-breaking of a Dirichlet), the volatility recursion
  written with ``pytensor.scan``.

Each posterior's reference is NUTS held to posteriordb's standard (``wb.reference``). Per
posterior and seed: DADVI's gradients, its worst and mean error of the posterior means and
sds in reference sds, and its Pareto k-hat. The goal (DADVI's, from its paper's claims): worst
mean error <= 0.1 and worst sd error <= 0.3 with at most 20,000 gradients.

    python benchmarks/dadvi_regressions.py [--quick]   (--quick: one seed, one PyMC model)
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import workbench as wb

BUNDLED = ("diabetes_linear", "diabetes_linear_sigma", "breast_cancer_logistic", "eight_schools_noncentered")


def diabetes_raw_interactions():
    import pymc as pm
    from sklearn.datasets import load_diabetes

    raw = load_diabetes(scaled=False)
    X = raw.data.astype(float)
    names = list(raw.feature_names)
    bmi, bp, age, sex = (X[:, names.index(n)] for n in ("bmi", "bp", "age", "sex"))
    X = np.column_stack([X, bmi * bp, age * sex])
    names += ["bmi_x_bp", "age_x_sex"]
    y = raw.target.astype(float)
    with pm.Model(coords={"feature": names}) as model:
        intercept = pm.Normal("intercept", 150.0, 100.0)
        beta = pm.Normal("beta", 0.0, 10.0, dims="feature")
        sigma = pm.HalfNormal("sigma", 100.0)
        pm.Normal("obs", intercept + pm.math.dot(X, beta), sigma, observed=y)
    return model


def ar2(n: int = 300, seed: int = 0):
    import pymc as pm

    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    for t in range(2, n):
        y[t] = 0.5 + 0.6 * y[t - 1] - 0.3 * y[t - 2] + rng.normal(0.0, 0.8)
    with pm.Model() as model:
        c = pm.Normal("c", 0.0, 2.0)
        phi = pm.Normal("phi", 0.0, 0.5, shape=2)
        sigma = pm.HalfNormal("sigma", 2.0)
        mean = c + phi[0] * y[1:-1] + phi[1] * y[:-2]
        pm.Normal("obs", mean, sigma, observed=y[2:])
    return model


def garch11(n: int = 300, seed: int = 0):
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(seed)
    omega0, alpha0, beta0 = 0.1, 0.15, 0.75
    r = np.zeros(n)
    var = omega0 / (1.0 - alpha0 - beta0)
    for t in range(n):
        r[t] = rng.normal(0.0, np.sqrt(var))
        var = omega0 + alpha0 * r[t] ** 2 + beta0 * var
    with pm.Model() as model:
        omega = pm.HalfNormal("omega", 1.0)
        weights = pm.Dirichlet("weights", np.ones(3))  # alpha, beta and the rest: alpha + beta < 1
        alpha, beta = weights[0], weights[1]
        r_t = pt.as_tensor_variable(r)

        def step(r_prev, var_prev, omega, alpha, beta):
            return omega + alpha * r_prev ** 2 + beta * var_prev

        var0 = pt.as_tensor_variable(np.var(r))
        variances, _ = pytensor.scan(step, sequences=[r_t[:-1]], outputs_info=[var0],
                                     non_sequences=[omega, alpha, beta])
        pm.Normal("obs", 0.0, pt.sqrt(pt.concatenate([[var0], variances])), observed=r)
    return model


USER_MODELS = {"diabetes_raw_interactions": diabetes_raw_interactions, "ar2": ar2, "garch11": garch11}
# --quick keeps one PyMC model: the others' references (NUTS to posteriordb's standard) take
# 17 s and 57 s to build on a fresh cache
QUICK_USER_MODELS = ("ar2",)


def targets(quick: bool = False):
    out = {name: wb.posteriors.load(name) for name in BUNDLED}
    for name, make in USER_MODELS.items():
        if not quick or name in QUICK_USER_MODELS:
            out[name] = wb.Target.from_pymc(make(), name=name)
    return out


def rows(quick: bool):
    seeds = (0,) if quick else (0, 1, 2)
    out = []
    for name, target in targets(quick).items():
        truth = target.truth
        if truth is not None and truth.mean is not None and truth.sd is not None:
            mean, sd, against = np.asarray(truth.mean), np.asarray(truth.sd), "exact"
        else:
            ref = wb.reference(target)
            mean, sd = ref.draws.mean(axis=0), ref.draws.std(axis=0)
            against = "reference" if ref.passes else f"reference (fails: {ref.why_not})"
        for seed in seeds:
            res = wb.methods.DADVI().run(target, seed=seed)
            q = res.approximation
            mean_err = np.abs(q.mean - mean) / sd
            sd_err = np.abs(np.sqrt(np.diag(q.cov)) - sd) / sd
            out.append({"posterior": name, "d": target.dim, "seed": seed, "grads": res.cost.grad_evals,
                        "mean_err_max": float(mean_err.max()), "mean_err_avg": float(mean_err.mean()),
                        "sd_err_max": float(sd_err.max()), "khat": float(res.info["pareto_k"]),
                        "goal": bool(mean_err.max() <= 0.1 and sd_err.max() <= 0.3 and res.cost.grad_evals <= 20_000),
                        "against": against})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, and of the PyMC models the AR(2) only")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fits' health warnings are in the k-hat column
        table = rows(args.quick)
    columns = list(table[0])
    print("".join(f"{c:>28}" if i == 0 else f"{c:>14}" for i, c in enumerate(columns)))
    for r in table:
        print("".join(f"{r[c]:>28}" if i == 0 else (f"{r[c]:>14.3g}" if isinstance(r[c], float) else f"{r[c]!s:>14}")
                      for i, c in enumerate(columns)))
    met = sum(r["goal"] for r in table)
    print(f"\nDADVI met the goal (worst mean error <= 0.1 sd, worst sd error <= 0.3, <= 20,000 gradients) in "
          f"{met} of {len(table)} fits ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
