"""Pathfinder and full-rank VI against NUTS: accuracy for gradients, and Pathfinder as NUTS's start.

Part 1, on 100-d Gaussians with correlation (equicorrelation 0.5 with unit sds; and the same
with sds log-spaced 0.1..10, condition number 10^4 before the correlation): the largest error
of the fitted Gaussian's mean and sds in true sds (from the approximation itself, so no
sampling noise), and the gradients it took, against the gradients NUTS (4 x 1,000 after 1,000
warmup) needs for a bulk ESS of 400 in every coordinate. Goals: Pathfinder <= 0.1,
FullRankVI <= 0.05, each in fewer gradients than NUTS.

Part 2, on the linear regression (diabetes, exact posterior) and the logistic regression
(breast cancer, scored against its reference posterior): the mean marginal W1 of multi-path
Pathfinder (4 paths) and of FullRankVI against a 4 x 1,000 NUTS run, with the ratios of
gradients. Goal: Pathfinder's W1 within 2x of NUTS's at <= 1/10 of its gradients.

Part 3: ``NUTS(init="pathfinder")`` against the default start, with 1,000 and with 300 warmup
iterations: warmup gradients (Pathfinder's included) and the bulk ESS they buy.

Medians over seeds 0-2 (seed 0 only with ``--quick``).

    python benchmarks/pathfinder_benchmark.py [--quick]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

import workbench as wb
from workbench.metrics import evaluate

ESS_GOAL = 400


def _approximation_errors(q, target) -> tuple[float, float]:
    sd = np.sqrt(np.diag(target.truth.cov))
    return float(np.max(np.abs(q.mean - target.truth.mean) / sd)), float(np.max(np.abs(q.sd / sd - 1)))


def gaussians(seeds) -> pd.DataFrame:
    rows = []
    for label, target in [("equicorrelated 0.5", wb.targets.gaussian(dim=100, correlation=0.5)),
                          ("log-spaced sds, 0.5", wb.targets.gaussian(dim=100, scales="logspace", correlation=0.5))]:
        for seed in seeds:
            nuts = wb.methods.NUTS(progress=False).run(target, seed=seed)
            ess = evaluate(nuts, target)["ess_bulk_min"]
            rows.append({"target": label, "method": "NUTS", "seed": seed, "mean_err": np.nan, "sd_err": np.nan,
                         "grads": nuts.cost.grad_evals * ESS_GOAL / ess})
            for name, method in [("Pathfinder", wb.methods.Pathfinder(progress=False)),
                                 ("FullRankVI", wb.methods.FullRankVI(progress=False))]:
                r = method.run(target, seed=seed)
                mean_err, sd_err = _approximation_errors(r.approximation, target)
                rows.append({"target": label, "method": name, "seed": seed, "mean_err": mean_err, "sd_err": sd_err,
                             "grads": r.cost.grad_evals})
    table = pd.DataFrame(rows).groupby(["target", "method"])[["mean_err", "sd_err", "grads"]].median()
    return table.rename(columns={"grads": f"grads (NUTS: to ESS {ESS_GOAL})"})


def regressions(seeds) -> pd.DataFrame:
    rows = []
    for label, target in [("linear regression", wb.targets.linear_regression(dataset="diabetes")),
                          ("logistic regression", wb.targets.logistic_regression(dataset="breast_cancer"))]:
        for seed in seeds:
            runs = {"NUTS": wb.methods.NUTS(progress=False).run(target, seed=seed),
                    "Pathfinder (4 paths)": wb.methods.Pathfinder(paths=4, progress=False).run(target, seed=seed),
                    "FullRankVI": wb.methods.FullRankVI(progress=False).run(target, seed=seed)}
            for name, r in runs.items():
                rows.append({"target": label, "method": name, "seed": seed, "w1_mean": evaluate(r, target)["w1_mean"],
                             "grads": r.cost.grad_evals, "pareto_k": r.info.get("pareto_k", np.nan)})
    table = pd.DataFrame(rows).groupby(["target", "method"])[["w1_mean", "grads", "pareto_k"]].median()
    nuts = table.xs("NUTS", level="method")
    table["w1 / NUTS"] = table["w1_mean"] / nuts["w1_mean"].reindex(table.index.get_level_values(0)).to_numpy()
    table["grads / NUTS"] = table["grads"] / nuts["grads"].reindex(table.index.get_level_values(0)).to_numpy()
    return table


def nuts_start(seeds, warmups=(1000, 300)) -> pd.DataFrame:
    rows = []
    for label, target in [("linear regression", wb.targets.linear_regression(dataset="diabetes")),
                          ("logistic regression", wb.targets.logistic_regression(dataset="breast_cancer")),
                          ("gaussian d=100, 0.5", wb.targets.gaussian(dim=100, correlation=0.5))]:
        for warmup in warmups:
            for init in ("default", "pathfinder"):
                for seed in seeds:
                    r = wb.methods.NUTS(init=None if init == "default" else init, warmup=warmup,
                                        progress=False).run(target, seed=seed)
                    rows.append({"target": label, "warmup": warmup, "init": init, "seed": seed,
                                 "warmup_grads": r.cost.warmup_grad_evals,
                                 "ess_bulk_min": evaluate(r, target)["ess_bulk_min"]})
    table = pd.DataFrame(rows).groupby(["target", "warmup", "init"])[["warmup_grads", "ess_bulk_min"]].median().unstack("init")
    table[("ratio", "warmup_grads")] = table[("warmup_grads", "pathfinder")] / table[("warmup_grads", "default")]
    table[("ratio", "ess")] = table[("ess_bulk_min", "pathfinder")] / table[("ess_bulk_min", "default")]
    return table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="seed 0 only, one warmup length")
    args = parser.parse_args(argv)
    seeds = (0,) if args.quick else (0, 1, 2)
    warnings.simplefilter("ignore")  # the runs' health warnings are in their results; the tables say what matters
    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.precision", 3):
        print("Part 1: 100-d correlated Gaussians, the fitted Gaussian's worst errors (true sds)\n")
        print(gaussians(seeds), "\n")
        print("Part 2: regressions, mean marginal W1 against NUTS 4 x 1,000\n")
        print(regressions(seeds), "\n")
        print("Part 3: NUTS started by Pathfinder\n")
        print(nuts_start(seeds, (300,) if args.quick else (1000, 300)))


if __name__ == "__main__":
    main()
