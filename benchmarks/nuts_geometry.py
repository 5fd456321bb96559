"""NUTS's preconditioners on hard and easy geometry: ``metric="flow"`` and ``metric="auto"``
against the diagonal metric, and against nutpie's flow adaptation.

``--flow``: flow-NUTS and diag-NUTS at their defaults (4 chains x 1,000 draws) on the banana
(12 seeds), a 100-d Neal's funnel (v ~ N(0, 3^2)), the milder funnel of nutpie's flow
documentation (d = 101, v ~ N(0, 1)), centred eight schools, the stochastic-volatility model
and the Brownian motion (5 seeds each): median min bulk ESS per 1,000 gradients (warmup and the
fits' gradients included), median divergences, how many runs pass posteriordb's standard
(R-hat < 1.01, bulk and tail ESS >= 400, no divergences) and how many pass it but for a
handful (<= 5) of divergences, the median E-BFMI and the flow's training seconds. With
``--nutpie``, nutpie's ``adaptation="flow"`` on the banana, both funnels and centred eight
schools, in its own venv (``benchmarks/nutpie_flow_driver.py``; ``--nutpie-seeds``, 3: each of its
runs takes minutes, and is kept in the cache folder). Written to
``docs/benchmarks/flow_nuts.csv``.

``--auto``: ``metric="auto"`` against ``"diag"`` (the old default, level with nutpie's: see
``docs/benchmarks/nuts_vs_nutpie.csv``) on gauss100, corr10, the logistic regressions, the
bundled posteriors and the latent-variable models, 5 seeds: the median ESS per 1,000 gradients
of each and their ratio, and which metric ``"auto"`` chose. ``"auto"`` was to become the default
if it held 0.95x diag on every row and 1.5x nutpie's default in the median; it did, and is.
Written to ``docs/benchmarks/nuts_auto.csv``.

``--auto --mams``: the same table for MAMS (``docs/benchmarks/mams_auto.csv``): its default metric
is ``"auto"`` while it passes at least as often as ``"diag"`` on every row, at 0.95x its ESS per
gradient or more.

``--targets A,B``: only those rows, re-measured and merged into the CSV (the others kept as
measured, each row with its own date).

    python benchmarks/nuts_geometry.py --flow [--nutpie] | --auto [--mams] [--seeds N] [--targets A,B]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import workbench as wb
from workbench.diagnostics import chain_diagnostics

sys.path.insert(0, str(Path(__file__).resolve().parent))  # record.py beside this file
from record import stamp  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
FLOW_CSV = BENCHMARKS / "flow_nuts.csv"
AUTO_CSV = BENCHMARKS / "nuts_auto.csv"
MAMS_AUTO_CSV = BENCHMARKS / "mams_auto.csv"
NUTPIE_RUNS = "nutpie_flow_runs"  # the cache's folder of nutpie's flow runs, one file a model and seed
HANDFUL = 5  # divergences a run may have and still count as "a handful" (the banana goal)


def flow_targets() -> dict:
    return {
        "banana": wb.targets.banana(),
        "funnel100": wb.targets.funnel(dim=100),
        # nutpie's own documented flow example (docs/nf-adapt.qmd): log_sigma ~ N(0, 1), a milder neck
        "funnel101_nutpie_docs": wb.targets.funnel(dim=101, v_sd=1.0),
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


def ours(metric: str, target, seed: int, sampler: str = "NUTS") -> dict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = getattr(wb.methods, sampler)(metric=metric, progress=False).run(target, seed=seed)
    except wb.WorkbenchError as exc:  # counted: a default may raise nowhere the diagonal metric does not
        return {"ess_per_1k_grad": 0.0, "divergences": 0, "passes": False, "passes_but_handful": False,
                "r_hat_max": np.nan, "ess_bulk_min": 0.0, "bfmi_min": np.nan, "training_seconds": 0.0,
                "chosen": "raised", "wall_seconds": 0.0, "raised": f"{type(exc).__name__}: {exc}"[:200]}
    row = score(res.draws, res.cost.grad_evals, int(res.stats["diverging"].sum()), res.stats)
    row["training_seconds"] = res.info.get("flow", {}).get("training_seconds", 0.0)
    row["chosen"] = res.info.get("metric_chosen", metric)
    row["wall_seconds"] = res.cost.wall_seconds
    return row


def nutpie_flow(name: str, seeds) -> list[dict]:
    """nutpie's flow adaptation in its venv (``nutpie_reference.nutpie_python(flow=True)``). Each
    seed's run (minutes; 12 on Neal's funnel) is kept in the cache folder (``NUTPIE_RUNS``), keyed
    by the model, the seed and the driver's source, and not run again."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from nutpie_reference import nutpie_python

    from workbench.references.store import default_cache_dir

    driver = Path(__file__).resolve().parent / "nutpie_flow_driver.py"
    digest = hashlib.sha256(driver.read_bytes()).hexdigest()[:12]
    folder = default_cache_dir() / NUTPIE_RUNS
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for s in seeds:
        path = folder / f"{name}_seed{s}_{digest}.npz"
        if not path.exists():
            tmp = path.with_suffix(".tmp.npz")
            proc = subprocess.run([nutpie_python(flow=True), str(driver), name, "flow", str(s), str(tmp)],
                                  capture_output=True, text=True, timeout=4 * 3600)
            if proc.returncode != 0:
                raise RuntimeError(f"nutpie's flow failed on {name}: {proc.stderr[-2000:]}")
            tmp.replace(path)
        out = dict(np.load(path))
        rows.append(dict(score(out[f"draws_{s}"], int(out[f"grads_{s}"][0]), int(out[f"divergences_{s}"][0])),
                         wall_seconds=float(out[f"seconds_{s}"][0])))
    return rows


def summarise(rows: list[dict]) -> dict:
    return {"ess_per_1k_grad": float(np.median([r["ess_per_1k_grad"] for r in rows])),
            "divergences": float(np.median([r["divergences"] for r in rows])),
            "passing": sum(r["passes"] for r in rows), "passing_but_handful": sum(r["passes_but_handful"] for r in rows),
            "bfmi_min": float(np.median([r["bfmi_min"] for r in rows])),
            "training_seconds": float(np.median([r.get("training_seconds", 0.0) for r in rows])),
            "wall_seconds": float(np.median([r["wall_seconds"] for r in rows])), "runs": len(rows)}


NUTPIE_FLOW_TARGETS = ("banana", "funnel100", "funnel101_nutpie_docs", "eight_schools_centered")


def selected(targets: dict, only) -> dict:
    if only is None:
        return targets
    unknown = set(only) - set(targets)
    if unknown:
        raise SystemExit(f"--targets: unknown {sorted(unknown)}; known: {', '.join(targets)}")
    return {k: v for k, v in targets.items() if k in only}


def write_rows(rows: list[dict], path: Path, only, order, keep=None) -> pd.DataFrame:
    """The rows, dated, written to ``path``; with ``only``, merged into the rows already there
    (targets in ``order``, a target's rows in their order); rows already there for which ``keep``
    (a function of the old frame) is true are kept as measured (nutpie's, not run again)."""
    frame = pd.DataFrame(rows)
    frame = stamp(frame)
    if (only is not None or keep is not None) and path.exists():
        old = pd.read_csv(path)
        kept = ~old["target"].isin(only if only is not None else old["target"])
        if keep is not None:
            kept |= keep(old)
        frame = pd.concat([old[kept], frame], ignore_index=True)
        rank = {name: i for i, name in enumerate(order)}
        frame["_rank"] = frame["target"].map(rank).fillna(len(rank))
        # a target's rows: ours, then nutpie's
        frame["_peer"] = frame["sampler"].str.startswith("nutpie") if "sampler" in frame else False
        frame = frame.sort_values(["_rank", "_peer"], kind="stable").drop(columns=["_rank", "_peer"])
    frame.to_csv(path, index=False, float_format="%.4g")
    return frame


def flow_table(seeds: int, with_nutpie: bool, only=None, nutpie_seeds: int = 3) -> int:
    rows = []
    for name, target in selected(flow_targets(), only).items():
        n = 12 if name == "banana" else seeds
        for label, runs in (("flow", [ours("flow", target, s) for s in range(n)]),
                            ("diag", [ours("diag", target, s) for s in range(n)]),
                            *((("nutpie flow", nutpie_flow(name, range(nutpie_seeds))),)
                              if with_nutpie and name in NUTPIE_FLOW_TARGETS else ())):
            row = {"target": name, "d": target.dim, "sampler": label, **summarise(runs)}
            rows.append(row)
            print(f"{name:<24}{label:<12} ESS/1k grads {row['ess_per_1k_grad']:7.2f}  divergences {row['divergences']:5.1f}  "
                  f"pass {row['passing']}/{row['runs']} (with <= {HANDFUL} divergences {row['passing_but_handful']})  "
                  f"E-BFMI {row['bfmi_min']:.2f}  training {row['training_seconds']:.1f} s  wall {row['wall_seconds']:.1f} s",
                  flush=True)
    # without --nutpie, nutpie's rows stay as last measured (each of its runs takes minutes)
    write_rows(rows, FLOW_CSV, only, list(flow_targets()),
               keep=None if with_nutpie else (lambda old: old["sampler"].str.startswith("nutpie")))
    print(f"-> {FLOW_CSV}")
    return 0


def auto_table(seeds: int, only=None, sampler: str = "NUTS") -> int:
    rows = []
    path = AUTO_CSV if sampler == "NUTS" else MAMS_AUTO_CSV
    for name, target in selected(auto_targets(), only).items():
        auto = [ours("auto", target, s, sampler) for s in range(seeds)]
        diag = [ours("diag", target, s, sampler) for s in range(seeds)]
        a, d = (float(np.median([r["ess_per_1k_grad"] for r in runs])) for runs in (auto, diag))
        chosen = pd.Series([r["chosen"] for r in auto]).value_counts()
        row = {"target": name, "d": target.dim, "auto": a, "diag": d, "ratio": a / d,
               "chosen": ", ".join(f"{k} {v}" for k, v in chosen.items()),
               "auto_passing": sum(r["passes"] for r in auto), "diag_passing": sum(r["passes"] for r in diag),
               "auto_raised": sum("raised" in r for r in auto), "diag_raised": sum("raised" in r for r in diag),
               "seeds": seeds}
        rows.append(row)
        print(f"{name:<28} auto {a:8.2f}  diag {d:8.2f}  ratio {a / d:5.2f}  chose {row['chosen']}  "
              f"pass {row['auto_passing']}/{seeds} vs {row['diag_passing']}/{seeds}", flush=True)
    frame = write_rows(rows, path, only, list(auto_targets()))
    print(f"-> {path}; worst ratio {frame['ratio'].min():.2f} ({frame.loc[frame['ratio'].idxmin(), 'target']}), "
          f"median {frame['ratio'].median():.2f}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flow", action="store_true")
    parser.add_argument("--auto", action="store_true")
    parser.add_argument("--nutpie", action="store_true", help="with --flow: nutpie's flow adaptation beside ours")
    parser.add_argument("--mams", action="store_true", help="with --auto: MAMS's metrics, not NUTS's (mams_auto.csv)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--nutpie-seeds", type=int, default=3, help="with --nutpie: its runs a target (minutes each)")
    parser.add_argument("--targets", help="comma-separated rows to re-measure (merged into the CSV)")
    args = parser.parse_args(argv)
    only = args.targets.split(",") if args.targets else None
    if not (args.flow or args.auto):
        parser.error("give --flow or --auto")
    if args.flow:
        flow_table(args.seeds, args.nutpie, only, args.nutpie_seeds)
    if args.auto:
        auto_table(args.seeds, only, "MAMS" if args.mams else "NUTS")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
