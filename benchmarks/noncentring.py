"""Automatic non-centring of PyMC models (``workbench/pymc_reparam.py``): ``NUTS()`` on centred
hierarchies written in PyMC, with the non-centred form offered (``from_pymc``'s default, which
``metric="auto"`` takes or leaves by its first draws) and without it (``noncentre=False``: the
model as written, where ``"auto"`` chooses among its metrics and the flow), and the form written
by hand where there is one.

Rows: centred eight schools (``eight_schools_centered``'s PyMC model), Neal's funnel in PyMC
(v ~ N(0, 3^2), 99 x_i ~ N(0, exp(v / 2)^2): ``workbench.targets.funnel(100)``'s density) and a
hierarchy whose data pin each group down, where the centred form is the better one, and an
unbalanced one (4 groups of 100 observations, 4 of one) where neither form suits every group
(``by_hand`` there writes the large groups centred and the small ones non-centred), each
over ``--seeds`` seeds (5): how many runs pass posteriordb's standard (R-hat < 1.01, bulk and tail
ESS >= 400, no divergences), their median gradients and min bulk ESS per 1,000 gradients (warmup
included; every form's draws on the centred model's coordinates), and which form ``"auto"``
sampled. Written to ``docs/benchmarks/noncentring.csv``.

    python benchmarks/noncentring.py [--seeds N] [--targets A,B]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import workbench as wb
from workbench.pymc_reparam import value_map

sys.path.insert(0, str(Path(__file__).resolve().parent))  # record.py, nuts_geometry.py beside this file
from nuts_geometry import score, selected, write_rows  # noqa: E402

CSV = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "noncentring.csv"


def funnel_model(dim: int = 100, v_sd: float = 3.0, centred: bool = True):
    """Neal's funnel in PyMC: v ~ N(0, v_sd^2), x_i ~ N(0, exp(v / 2)^2), i < dim."""
    import pymc as pm

    with pm.Model(name="funnel") as model:
        v = pm.Normal("v", 0.0, v_sd)
        if centred:
            pm.Normal("x", 0.0, pm.math.exp(v / 2), shape=dim - 1)
        else:
            z = pm.Normal("z", 0.0, 1.0, shape=dim - 1)
            pm.Deterministic("x", z * pm.math.exp(v / 2))
    return model


def groups_model(centred: bool = True, groups: int = 8, per_group: int = 50, seed: int = 0):
    """A hierarchy whose data pin each group down: y_gi ~ N(theta_g, 1), 50 a group,
    theta_g ~ N(mu, tau), tau ~ HalfNormal(2) (simulated at mu = 1, tau = 1). The centred form is
    the one that samples well here (Papaspiliopoulos et al. 2007): the choice must keep it."""
    import pymc as pm

    rng = np.random.default_rng(seed)
    theta_true = 1.0 + rng.normal(size=groups)
    y = theta_true[:, None] + rng.normal(size=(groups, per_group))
    with pm.Model(name="groups") as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.0)
        if centred:
            theta = pm.Normal("theta", mu, tau, shape=groups)
        else:
            z = pm.Normal("z", 0.0, 1.0, shape=groups)
            theta = pm.Deterministic("theta", mu + tau * z)
        pm.Normal("y", theta[:, None], 1.0, observed=y)
    return model


def unbalanced_model(form: str = "centred", seed: int = 0):
    """A hierarchy of 4 groups of 100 observations and 4 of one, y_gi ~ N(theta_g, 1),
    theta_g ~ N(mu, tau), tau ~ HalfNormal(1) (simulated at mu = 1, tau = 0.5): neither form suits
    every group; ``form="mixed"`` writes the large groups centred and the small ones non-centred."""
    import pymc as pm

    sizes = (100,) * 4 + (1,) * 4
    rng = np.random.default_rng(seed)
    theta_true = 1.0 + 0.5 * rng.normal(size=len(sizes))
    group = np.repeat(np.arange(len(sizes)), sizes)
    y = theta_true[group] + rng.normal(size=group.size)
    with pm.Model(name="unbalanced") as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 1.0)
        if form == "centred":
            theta = pm.Normal("theta", mu, tau, shape=len(sizes))
        else:
            large = pm.Normal("large", mu, tau, shape=4)
            small = pm.Normal("small", 0.0, 1.0, shape=4)
            theta = pm.Deterministic("theta", pm.math.concatenate([large, mu + tau * small]))
        pm.Normal("y", theta[group], 1.0, observed=y)
    return model


def forms() -> dict:
    """Row -> {form: (target, map of its draws to the centred model's coordinates)}: every form's
    ESS is measured on the same coordinates, the centred model's."""
    schools = wb.posteriors.pymc_model("eight_schools_centered")
    funnel = funnel_model()
    groups = groups_model()
    unbalanced = unbalanced_model()
    by_hand = {"eight_schools_centered": wb.Target.from_pymc(wb.posteriors.pymc_model("eight_schools_noncentered"),
                                                             "eight_schools_noncentered"),
               "funnel100": wb.Target.from_pymc(funnel_model(centred=False), "funnel100_noncentred"),
               "informative_groups": wb.Target.from_pymc(groups_model(centred=False), "informative_groups_noncentred"),
               "unbalanced_groups": wb.Target.from_pymc(unbalanced_model("mixed"), "unbalanced_groups_mixed",
                                                        noncentre=False)}
    same = None
    return {
        "eight_schools_centered": {
            "offered": (wb.Target.from_pymc(schools, "eight_schools_centered"), same),
            "as_written": (wb.Target.from_pymc(wb.posteriors.pymc_model("eight_schools_centered"),
                                               "eight_schools_centered", noncentre=False), same),
            "by_hand": (by_hand["eight_schools_centered"], value_map(by_hand["eight_schools_centered"], schools)),
        },
        "funnel100": {
            "offered": (wb.Target.from_pymc(funnel, "funnel100"), same),
            "as_written": (wb.Target.from_pymc(funnel_model(), "funnel100", noncentre=False), same),
            "by_hand": (by_hand["funnel100"], value_map(by_hand["funnel100"], funnel)),
        },
        "informative_groups": {
            "offered": (wb.Target.from_pymc(groups, "informative_groups"), same),
            "as_written": (wb.Target.from_pymc(groups_model(), "informative_groups", noncentre=False), same),
            "by_hand": (by_hand["informative_groups"], value_map(by_hand["informative_groups"], groups)),
        },
        "unbalanced_groups": {
            "offered": (wb.Target.from_pymc(unbalanced, "unbalanced_groups"), same),
            "as_written": (wb.Target.from_pymc(unbalanced_model(), "unbalanced_groups", noncentre=False), same),
            "by_hand": (by_hand["unbalanced_groups"], value_map(by_hand["unbalanced_groups"], unbalanced)),
        },
    }


def run(target, to_centred, seed: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = wb.methods.NUTS(progress=False).run(target, seed=seed)
    draws = res.draws if to_centred is None else to_centred(res.draws)
    row = score(draws, res.cost.grad_evals, int(res.stats["diverging"].sum()), res.stats)
    row["grad_evals"] = res.cost.grad_evals
    row["form"] = res.info["reparametrization"]["form"] if "reparametrization" in res.info else "its own"
    row["metric"] = res.info.get("metric_chosen", "")
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--targets", help="comma-separated rows to re-measure (merged into the CSV)")
    args = parser.parse_args(argv)
    only = args.targets.split(",") if args.targets else None
    rows = []
    every = forms()
    for name, targets in selected(every, only).items():
        for form, (target, to_centred) in targets.items():
            runs = [run(target, to_centred, s) for s in range(args.seeds)]
            sampled = pd.Series([r["form"] for r in runs]).value_counts()
            row = {"target": name, "form": form, "d": target.dim,
                   "passing": sum(r["passes"] for r in runs), "seeds": args.seeds,
                   "median_grad_evals": int(np.median([r["grad_evals"] for r in runs])),
                   "ess_per_1k_grad": float(np.median([r["ess_per_1k_grad"] for r in runs])),
                   "median_divergences": float(np.median([r["divergences"] for r in runs])),
                   "sampled": ", ".join(f"{k} {v}" for k, v in sampled.items()),
                   "metrics": ", ".join(sorted({r["metric"] for r in runs}))}
            rows.append(row)
            print(f"{name:<24} {form:<11} pass {row['passing']}/{args.seeds}  grads {row['median_grad_evals']:9.0f}  "
                  f"ESS/1k {row['ess_per_1k_grad']:6.2f}  div {row['median_divergences']:4.0f}  sampled {row['sampled']}",
                  flush=True)
    write_rows(rows, CSV, only, list(every))
    print(f"-> {CSV}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
