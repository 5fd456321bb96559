"""Automatic non-centring of PyMC models (``workbench/pymc_reparam.py``): ``NUTS()`` on centred
hierarchies written in PyMC, with the non-centred form offered (``from_pymc``'s default, which
``metric="auto"`` takes or leaves by its first draws) and without it (``noncentre=False``: the
model as written, where ``"auto"`` chooses among its metrics and the flow), and the form written
by hand where there is one.

Rows: centred eight schools (``eight_schools_centered``'s PyMC model) and Neal's funnel in PyMC
(v ~ N(0, 3^2), 99 x_i ~ N(0, exp(v / 2)^2): ``workbench.targets.funnel(100)``'s density), each
over ``--seeds`` seeds (5): how many runs pass posteriordb's standard (R-hat < 1.01, bulk and tail
ESS >= 400, no divergences), their median gradients and min bulk ESS per 1,000 gradients (warmup
included; every form's draws on the centred model's coordinates), and which form ``"auto"``
sampled. Written to ``docs/benchmarks/noncentring.csv``.

    python benchmarks/noncentring.py [--seeds N]
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
from nuts_geometry import score  # noqa: E402
from record import stamp  # noqa: E402

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


def forms() -> dict:
    """Row -> {form: (target, map of its draws to the centred model's coordinates)}: every form's
    ESS is measured on the same coordinates, the centred model's."""
    schools = wb.posteriors.pymc_model("eight_schools_centered")
    funnel = funnel_model()
    by_hand = {"eight_schools_centered": wb.Target.from_pymc(wb.posteriors.pymc_model("eight_schools_noncentered"),
                                                             "eight_schools_noncentered"),
               "funnel100": wb.Target.from_pymc(funnel_model(centred=False), "funnel100_noncentred")}
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
    }


def run(target, to_centred, seed: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = wb.methods.NUTS(progress=False).run(target, seed=seed)
    draws = res.draws if to_centred is None else to_centred(res.draws)
    row = score(draws, res.cost.grad_evals, int(res.stats["diverging"].sum()), res.stats)
    row["grad_evals"] = res.cost.grad_evals
    row["form"] = "non-centred" if "reparametrization" in res.info else "as written"
    row["metric"] = res.info.get("metric_chosen", "")
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    rows = []
    for name, targets in forms().items():
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
    frame = stamp(pd.DataFrame(rows))
    frame.to_csv(CSV, index=False, float_format="%.4g")
    print(f"-> {CSV}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
