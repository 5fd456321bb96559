"""NUTS's preconditioners on hard and easy geometry: ``metric="flow"`` and ``metric="auto"``
against the diagonal metric, and against nutpie's flow adaptation.

``--flow``: flow-NUTS and diag-NUTS at their defaults (4 chains x 1,000 draws) on the banana
(12 seeds), a 100-d Neal's funnel, centred eight schools, the stochastic-volatility model and
the Brownian motion (5 seeds each): median min bulk ESS per 1,000 gradients (warmup and the
fits' gradients included), median divergences, how many runs pass posteriordb's standard
(R-hat < 1.01, bulk and tail ESS >= 400, no divergences) and how many pass it but for a
handful (<= 5) of divergences, the median E-BFMI and the flow's training seconds. With
``--nutpie``, nutpie's ``adaptation="flow"`` on the first three, in its own venv
(``studies/nutpie_flow_driver.py``; 3 seeds: each of its runs takes minutes). Written to
``docs/benchmarks/flow_nuts.csv``.

``--auto``: ``metric="auto"`` against ``"diag"`` (the old default, level with nutpie's: see
``docs/benchmarks/nuts_vs_nutpie.csv``) on gauss100, corr10, the logistic regressions, the
bundled posteriors and the latent-variable models, 5 seeds: the median ESS per 1,000 gradients
of each and their ratio, and which metric ``"auto"`` chose. ``"auto"`` was to become the default
if it held 0.95x diag on every row and 1.5x nutpie's default in the median; it did, and is.
Written to ``docs/benchmarks/nuts_auto.csv``.

    python studies/nuts_geometry.py --flow [--nutpie] | --auto [--seeds N]
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import workbench as wb
from workbench.diagnostics import chain_diagnostics

BENCHMARKS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
FLOW_CSV = BENCHMARKS / "flow_nuts.csv"
AUTO_CSV = BENCHMARKS / "nuts_auto.csv"
HANDFUL = 5  # divergences a run may have and still count as "a handful" (the banana goal)


def flow_targets() -> dict:
    return {
        "banana": wb.targets.banana(),
        "funnel100": wb.targets.funnel(dim=100),
        "eight_schools_centered": wb.posteriors.load("eight_schools_centered"),
        "stochastic_volatility": wb.posteriors.load("stochastic_volatility"),
        "brownian_motion": wb.posteriors.load("brownian_motion"),
    }


def auto_targets() -> dict:
    targets = {
        "gauss100": wb.targets.gaussian(100, scales="logspace"),
        "corr10": wb.targets.gaussian(10, correlation=0.9),
        "logreg26": wb.targets.logistic_regression(n_data=1000, dim=26),
    }
    for name in wb.posteriors.available():
        targets[name] = wb.posteriors.load(name)
    return targets


def score(draws: np.ndarray, grads: int, divergences: int, stats: dict | None = None) -> dict:
    """One run's row: min bulk ESS per 1,000 gradients and posteriordb's standard."""
    d = chain_diagnostics(draws, stats)
    standard = d.r_hat_max < 1.01 and min(d.ess_bulk_min, d.ess_tail_min) >= 400
    return {"ess_per_1k_grad": 1000 * d.ess_bulk_min / grads, "divergences": divergences,
            "passes": bool(standard and divergences == 0), "passes_but_handful": bool(standard and divergences <= HANDFUL),
            "r_hat_max": d.r_hat_max, "ess_bulk_min": d.ess_bulk_min, "bfmi_min": d.bfmi_min}


def ours(metric: str, target, seed: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = wb.methods.NUTS(metric=metric, progress=False).run(target, seed=seed)
    row = score(res.draws, res.cost.grad_evals, int(res.stats["diverging"].sum()), res.stats)
    row["training_seconds"] = res.info.get("flow", {}).get("training_seconds", 0.0)
    row["chosen"] = res.info.get("metric_chosen", metric)
    row["wall_seconds"] = res.cost.wall_seconds
    return row


def nutpie_flow(name: str, seeds) -> list[dict]:
    """nutpie's flow adaptation in its venv (``nutpie_reference.nutpie_python(flow=True)``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from nutpie_reference import nutpie_python

    with tempfile.TemporaryDirectory() as tmp:
        out_path = Path(tmp) / "out.npz"
        driver = Path(__file__).resolve().parent / "nutpie_flow_driver.py"
        proc = subprocess.run([nutpie_python(flow=True), str(driver), name, "flow", ",".join(map(str, seeds)),
                               str(out_path)], capture_output=True, text=True, timeout=4 * 3600)
        if proc.returncode != 0:
            raise RuntimeError(f"nutpie's flow failed on {name}: {proc.stderr[-2000:]}")
        out = dict(np.load(out_path))
    return [dict(score(out[f"draws_{s}"], int(out[f"grads_{s}"][0]), int(out[f"divergences_{s}"][0])),
                 wall_seconds=float(out[f"seconds_{s}"][0])) for s in seeds]


def summarise(rows: list[dict]) -> dict:
    return {"ess_per_1k_grad": float(np.median([r["ess_per_1k_grad"] for r in rows])),
            "divergences": float(np.median([r["divergences"] for r in rows])),
            "passing": sum(r["passes"] for r in rows), "passing_but_handful": sum(r["passes_but_handful"] for r in rows),
            "bfmi_min": float(np.median([r["bfmi_min"] for r in rows])),
            "training_seconds": float(np.median([r.get("training_seconds", 0.0) for r in rows])),
            "wall_seconds": float(np.median([r["wall_seconds"] for r in rows])), "runs": len(rows)}


def flow_table(seeds: int, with_nutpie: bool) -> int:
    rows = []
    for name, target in flow_targets().items():
        n = 12 if name == "banana" else seeds
        for label, runs in (("flow", [ours("flow", target, s) for s in range(n)]),
                            ("diag", [ours("diag", target, s) for s in range(n)]),
                            *((("nutpie flow", nutpie_flow(name, range(3))),)
                              if with_nutpie and name in ("banana", "funnel100", "eight_schools_centered") else ())):
            row = {"target": name, "d": target.dim, "sampler": label, **summarise(runs)}
            rows.append(row)
            print(f"{name:<24}{label:<12} ESS/1k grads {row['ess_per_1k_grad']:7.2f}  divergences {row['divergences']:5.1f}  "
                  f"pass {row['passing']}/{row['runs']} (with <= {HANDFUL} divergences {row['passing_but_handful']})  "
                  f"E-BFMI {row['bfmi_min']:.2f}  training {row['training_seconds']:.1f} s  wall {row['wall_seconds']:.1f} s",
                  flush=True)
    frame = pd.DataFrame(rows)
    frame["measured"] = datetime.date.today().isoformat()
    frame.to_csv(FLOW_CSV, index=False, float_format="%.4g")
    print(f"-> {FLOW_CSV}")
    return 0


def auto_table(seeds: int) -> int:
    rows = []
    for name, target in auto_targets().items():
        auto = [ours("auto", target, s) for s in range(seeds)]
        diag = [ours("diag", target, s) for s in range(seeds)]
        a, d = (float(np.median([r["ess_per_1k_grad"] for r in runs])) for runs in (auto, diag))
        chosen = pd.Series([r["chosen"] for r in auto]).value_counts()
        row = {"target": name, "d": target.dim, "auto": a, "diag": d, "ratio": a / d,
               "chosen": ", ".join(f"{k} {v}" for k, v in chosen.items()),
               "auto_passing": sum(r["passes"] for r in auto), "diag_passing": sum(r["passes"] for r in diag)}
        rows.append(row)
        print(f"{name:<28} auto {a:8.2f}  diag {d:8.2f}  ratio {a / d:5.2f}  chose {row['chosen']}  "
              f"pass {row['auto_passing']}/{seeds} vs {row['diag_passing']}/{seeds}", flush=True)
    frame = pd.DataFrame(rows)
    frame["measured"] = datetime.date.today().isoformat()
    frame["seeds"] = seeds
    frame.to_csv(AUTO_CSV, index=False, float_format="%.4g")
    print(f"-> {AUTO_CSV}; worst ratio {frame['ratio'].min():.2f} ({frame.loc[frame['ratio'].idxmin(), 'target']}), "
          f"median {frame['ratio'].median():.2f}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flow", action="store_true")
    parser.add_argument("--auto", action="store_true")
    parser.add_argument("--nutpie", action="store_true", help="with --flow: nutpie's flow adaptation beside ours")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    if not (args.flow or args.auto):
        parser.error("give --flow or --auto")
    if args.flow:
        flow_table(args.seeds, args.nutpie)
    if args.auto:
        auto_table(args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
