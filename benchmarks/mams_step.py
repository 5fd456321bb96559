"""MAMS against NUTS by the gradients to b2_max < 0.01: how MAMS's step criterion fares.

b^2 is the microcanonical papers' cost-to-accuracy metric (``workbench/metrics/b2.py``): the
worst coordinate's squared error of the running second moment in units of its variance, median
over 4 chains; the cost is the gradients after which it stays below 0.01, tuning included.
MAMS tunes its step by dual averaging toward an acceptance of 0.9 (Robnik, Cohn-Gordon and
Seljak 2025, sec. 4), with no cap at the trajectory length L; this table is what that rule
buys on an ill-conditioned Gaussian, a logistic regression, the banana and a latent-variable
model, beside NUTS on the same budget, seeds and scoring.

A seed whose b^2 does not settle below 0.01 within the budget counts as infinitely many
gradients, so a median is "not within the budget" when most seeds did not cross.

``--metric M``, ``--nuts-metric M``: MAMS's and NUTS's metrics (default: each one's default).
Recorded rows say which (``mams``, ``nuts``); a record replaces the rows of its own pair and keeps
the others, so that the table holds the defaults against each other beside both samplers on the
diagonal metric: the step criterion alone, the preconditioner held the same. ``--warmup N``: MAMS
with N tuning transitions, to compare with its default's row (not recorded).

    python benchmarks/mams_step.py [--seeds 5] [--record] [--quick] [--warmup N] [--metric M] [--nuts-metric M]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.methods import MAMS, NUTS
from workbench.metrics.b2 import b2_crossing
from workbench.references.shipped import shipped_reference
from workbench.targets.specs import build_target

sys.path.insert(0, str(Path(__file__).resolve().parent))  # record.py beside this file
from record import CSV_DIR, stamp  # noqa: E402

CSV = CSV_DIR / "mams_vs_nuts.csv"
CHAINS = 4
# target -> (spec, gradient budget of a run): budgets at which NUTS's default and MAMS cross in
# most seeds (the Brownian motion's b^2 settles slowest)
TARGETS = {
    "gauss100": ({"factory": "gaussian", "dim": 100, "scales": "logspace"}, 100_000),
    "breast_cancer_logistic": ({"factory": "logistic_regression", "dataset": "breast_cancer"}, 300_000),
    "banana": ({"factory": "banana", "dim": 2}, 300_000),
    "brownian_motion": ({"factory": "posterior", "name": "brownian_motion", "backend": "numba"}, 400_000),
}
QUICK_TARGETS = {"gauss20": ({"factory": "gaussian", "dim": 20, "scales": "logspace"}, 40_000)}


def crossing(method, target, reference, seed: int, budget: int) -> tuple[float, float]:
    """(gradients to b2_max < 0.01 with tuning, NaN if not within the budget; mean acceptance, NaN for NUTS)."""
    result = method.run(target, seed=seed, grad_budget=budget)
    grads = b2_crossing(result, target, reference)["grads_to_b2_max"]
    accept = float(np.mean(result.stats["accept_prob"])) if isinstance(method, MAMS) else math.nan
    return grads, accept


def median_or_nan(values) -> float:
    """The median with a run that did not cross counted as infinitely many gradients."""
    m = float(np.median(np.where(np.isnan(values), np.inf, values)))
    return m if math.isfinite(m) else math.nan


def label(sampler: str, metric: str | None) -> str:
    """How the ``mams`` and ``nuts`` columns name the sampler a row ran."""
    return f"{sampler}()" if metric is None else f"{sampler}(metric='{metric}')"


def table(targets: dict, seeds: range, mams_settings: dict | None = None, nuts_metric: str | None = None) -> pd.DataFrame:
    rows = []
    mams_settings = mams_settings or {}
    nuts_settings = {} if nuts_metric is None else {"metric": nuts_metric}
    for name, (spec, budget) in targets.items():
        target = build_target(spec)
        shipped = shipped_reference(target) if target.truth is None else None
        reference = None if shipped is None else shipped.draws
        draws = int(np.clip(budget // CHAINS // 2, 200, 50_000))  # room for the budget to end the run
        runs = {}
        for which, method in (("mams", MAMS(chains=CHAINS, draws=draws, progress=False, **mams_settings)),
                              ("nuts", NUTS(chains=CHAINS, draws=draws, progress=False, **nuts_settings))):
            runs[which] = np.array([crossing(method, target, reference, s, budget) for s in seeds])
        mams, nuts = median_or_nan(runs["mams"][:, 0]), median_or_nan(runs["nuts"][:, 0])
        rows.append({"target": name, "mams": label("MAMS", mams_settings.get("metric")),
                     "nuts": label("NUTS", nuts_metric), "d": target.dim, "budget": budget,
                     "mams_grads": round(mams, -2), "nuts_grads": round(nuts, -2), "ratio": round(mams / nuts, 2),
                     "mams_crossed": int(np.isfinite(runs["mams"][:, 0]).sum()),
                     "nuts_crossed": int(np.isfinite(runs["nuts"][:, 0]).sum()),
                     "mams_accept": round(float(np.mean(runs["mams"][:, 1])), 3), "seeds": len(seeds)})
        print(pd.DataFrame(rows[-1:]).to_string(index=False), flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one small Gaussian, one seed (a smoke run)")
    parser.add_argument("--record", action="store_true", help=f"write {CSV.relative_to(CSV_DIR.parents[1])}")
    parser.add_argument("--warmup", type=int, help="MAMS's tuning transitions (default: its own); not recorded")
    parser.add_argument("--metric", help="MAMS's metric (default: its own)")
    parser.add_argument("--nuts-metric", help="NUTS's metric (default: its own)")
    args = parser.parse_args(argv)
    settings = {k: v for k, v in (("warmup", args.warmup), ("metric", args.metric)) if v is not None}
    if args.warmup is not None and args.record:
        parser.error("--warmup compares a setting with the default's row: it is not recorded")
    frame = table(QUICK_TARGETS if args.quick else TARGETS, range(1 if args.quick else args.seeds), settings,
                  args.nuts_metric)
    print(f"\n{label('MAMS', args.metric)} / {label('NUTS', args.nuts_metric)}, gradients to b2_max < 0.01 "
          "(median over seeds, tuning included)")
    print(frame.to_string(index=False))
    if args.record and not args.quick:
        recorded = stamp(frame)
        if CSV.exists():  # the other pairs' rows stay
            kept = pd.read_csv(CSV)
            kept = kept[(kept["mams"] != label("MAMS", args.metric)) | (kept["nuts"] != label("NUTS", args.nuts_metric))]
            recorded = pd.concat([kept, recorded], ignore_index=True)
        recorded.to_csv(CSV, index=False)
        print(f"wrote {CSV.relative_to(CSV_DIR.parents[1])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
