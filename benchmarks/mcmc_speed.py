"""MCMC speed: HMC and NUTS on gaussian(d=100, sds 0.1..10) and Bayesian logistic regression.

Prints, per sampler and target, with one chain: gradient evaluations (warmup + sampling),
wall time, min bulk ESS, ESS per second, ESS per 1,000 gradients (warmup included) and the
overhead ratio = sampling wall time / (gradient evaluations x time of one logp_grad call
measured in a jitted loop right after the run; the median of three repeats), and
``momentum``: the part of that ratio spent drawing the momenta alone (d normals per
transition, timed in the same run), a floor no implementation of the algorithm goes below.

Then NUTS's metrics side by side (``NUTS(metric=...)``, 4 chains of 1,000 warmup and 1,000
draws, the defaults): one column per metric, the median over seeds of min bulk ESS per 1,000
gradients (warmup included), on gauss100, the breast-cancer logistic regression (d = 31),
corr10 (10-d, correlation 0.9) and rot50 (50-d, variances 100, 50, 20 and 1 at a random
rotation); the last column is low_rank / diag. ``dense`` runs for d <= 100 only.

Goals: overhead <= 1.3; NUTS >= 60 bulk-ESS per 1,000 gradients on the Gaussian; low_rank
>= 3x diag on corr10, rot50 and the logistic regression, >= 0.9x on gauss100.

``--nutpie``: NUTS at its defaults against nutpie at its own (nutpie 0.16: 400 tuning steps for
its diagonal metric, 800 for the low-rank one; 4 chains x 1,000 draws both), each metric of
ours against nutpie's same one, and ours at its default, ``metric="auto"``, against nutpie's
default, the diagonal metric, and its best, the low-rank one (``nutpie_metric``), on the same
densities (``benchmarks/nutpie_reference.py`` runs nutpie in its own venv; the default's rows on
gauss100, corr10, logreg26 and the bundled regressions: breast cancer and both diabetes ones), median over 10 seeds
of the min bulk ESS per 1,000 gradients, warmup included, with a 90% bootstrap interval of
the ratio (the min over coordinates moves by +-10% from seed to seed); written to
``docs/benchmarks/nuts_vs_nutpie.csv``, which the performance study's page shows. Goal: ours
>= nutpie's on every row.

``--banana``: NUTS's settings on Haario's banana over long runs (4 chains x 8,000 draws, 4 seeds):
ESS per draw, divergences, R-hat and gradients per draw; and over 12 runs of the default
4 x 1,000 draws, how many pass posteriordb's standard. Written to
``docs/benchmarks/banana_nuts.csv``, which the performance study's page shows. ESS >= 400 from
4,000 draws needs 0.1 ESS per draw.

``--whole-call``: ESS per second of the whole call, as a user times it, on gauss100 at both
tools' defaults (4 chains x 1,000 draws), 7 seeds, kernels compiled beforehand: ours is
``NUTS().run()`` (its health check is computed when first read, timed apart as
``health_seconds``), nutpie's is ``nutpie.sample`` on the same density written in PyMC and
compiled by nutpie's default Numba backend (its best path; a Python-function model is 20x
slower), in its own venv. Written to ``docs/benchmarks/whole_call_vs_nutpie.csv``, which the
performance study's page shows. Goals: a run's fixed cost (call and health less sampling)
<= 0.05 s; ESS per second of the call >= 2x nutpie's.

    python benchmarks/mcmc_speed.py [--quick] [--seed N] [--nutpie] [--banana] [--whole-call]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

import workbench as wb
from workbench.mcmc.timing import seconds_per_gradient, seconds_per_normal

sys.path.insert(0, str(Path(__file__).resolve().parent))  # record.py beside this file
from record import stamp  # noqa: E402


def measure(method, target, seed, repeats=3):
    """One row. The run is repeated (same seed, so the same draws) and timed with the
    gradient right after each repeat; the repeat with the median overhead is reported, so
    one disturbance of this shared machine does not decide the row."""
    timed = []
    for _ in range(repeats):
        res = method.run(target, seed=seed)
        timed.append((res.cost.wall_seconds / (res.cost.grad_evals * seconds_per_gradient(target, res.draws[0, -1])), res))
    timed.sort(key=lambda pair: pair[0])
    overhead, res = timed[len(timed) // 2]
    row = wb.metrics.evaluate(res, target)
    t_grad = res.cost.wall_seconds / (res.cost.grad_evals * overhead)
    transitions = sum(res.info["iterations_per_chain"])
    return {
        "grads": res.cost.grad_evals,
        "warmup_grads": res.cost.warmup_grad_evals,
        "wall_s": res.cost.wall_seconds,
        "ess_bulk_min": row["ess_bulk_min"],
        "ess_per_s": row["ess_per_second"],
        "ess_per_1k_grad": row["ess_per_1k_grad"],
        "grad_us": 1e6 * t_grad,
        "overhead": overhead,
        "momentum": transitions * target.dim * seconds_per_normal() / (res.cost.grad_evals * t_grad),
        "r_hat_max": row["r_hat_max"],
    }


def print_table(rows, columns):
    widths = [max(12, len(c) + 2) for c in columns]
    head = f"{'sampler':<10}{'target':<36}" + "".join(f"{c:>{w}}" for c, w in zip(columns, widths))
    print(head)
    print("-" * len(head))
    for name, target, r in rows:
        cells = "".join(
            f"{r[c]:>{w}.4g}" if isinstance(r[c], float) else f"{r[c]:>{w}}" for c, w in zip(columns, widths)
        )
        print(f"{name:<10}{target:<36}{cells}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer draws")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nutpie", action="store_true", help="NUTS against nutpie, written to docs/benchmarks/")
    parser.add_argument("--banana", action="store_true", help="NUTS's settings on the banana, long runs, written to "
                                                              "docs/benchmarks/")
    parser.add_argument("--whole-call", action="store_true", help="ESS per second of the whole call against nutpie's, "
                                                                  "written to docs/benchmarks/")
    args = parser.parse_args(argv)
    if args.whole_call:
        return whole_call_table(seeds=range(args.seed, args.seed + 7))
    if args.nutpie:
        return nutpie_table(seeds=range(args.seed, args.seed + 10))
    if args.banana:
        return banana_table(seeds=range(100 + args.seed, 104 + args.seed))
    n = 500 if args.quick else 2000
    targets = [
        wb.targets.gaussian(100, scales="logspace"),
        wb.targets.logistic_regression("breast_cancer"),
    ]
    # compile (or load) every kernel first, so that no compile time reaches the table
    for t in targets:
        for M in (wb.methods.HMC, wb.methods.NUTS):
            M(chains=1, warmup=10, draws=10, progress=False).run(t, seed=0)
        seconds_per_gradient(t, min_seconds=0.01)

    rows = []
    for t in targets:
        for name, method in [
            ("HMC", wb.methods.HMC(chains=1, warmup=n, draws=n, progress=False)),
            ("NUTS", wb.methods.NUTS(chains=1, warmup=n, draws=n, progress=False)),
        ]:
            rows.append((name, t.name, measure(method, t, args.seed)))
    print("One chain each; ESS per 1,000 gradients counts warmup and sampling gradients.\n")
    print_table(rows, ["grads", "wall_s", "ess_bulk_min", "ess_per_s", "ess_per_1k_grad", "grad_us", "overhead",
                       "momentum"])

    print()
    metric_table(seeds=[args.seed] if args.quick else [args.seed + k for k in range(3)], quick=args.quick)


METRICS = ("diag", "diag_stan", "low_rank", "dense")


def metric_targets():
    """(short name, target) of the metric comparison."""
    return [
        ("gauss100", wb.targets.gaussian(100, scales="logspace")),
        ("logreg", wb.targets.logistic_regression("breast_cancer")),
        ("corr10", wb.targets.gaussian(10, correlation=0.9)),
        ("rot50", wb.targets.rotated_gaussian(50, variances=[100.0, 50.0, 20.0], seed=0)),
    ]


def metric_table(seeds, quick: bool = False, chains: int = 4):
    """Median ESS per 1,000 gradients of NUTS under each metric; returns {(target, metric): value}."""
    draws = 500 if quick else 1000
    print(f"NUTS metrics: min bulk ESS per 1,000 gradients (warmup included), {chains} chains x "
          f"{draws} warmup + {draws} draws, median over seeds {list(seeds)}\n")
    head = f"{'target':<10}" + "".join(f"{m:>12}" for m in METRICS) + f"{'low_rank/diag':>15}{'r_hat_max':>11}"
    print(head)
    print("-" * len(head))
    table = {}
    for name, target in metric_targets():
        cells, worst_r_hat = [], 1.0
        for metric in METRICS:
            if metric == "dense" and target.dim > 100:
                cells.append(float("nan"))
                continue
            values = []
            for seed in seeds:
                method = wb.methods.NUTS(chains=chains, warmup=draws, draws=draws, metric=metric, progress=False)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    row = wb.metrics.evaluate(method.run(target, seed=seed), target)
                values.append(row["ess_per_1k_grad"])
                worst_r_hat = max(worst_r_hat, row["r_hat_max"])
            table[name, metric] = float(np.median(values))
            cells.append(table[name, metric])
        ratio = table[name, "low_rank"] / table[name, "diag"]
        print(f"{name:<10}" + "".join(f"{c:>12.1f}" for c in cells) + f"{ratio:>15.2f}{worst_r_hat:>11.3f}")
    return table


NUTPIE_ROWS = [  # (target, our metric, nutpie's): nutpie's low-rank metric is its
    # low_rank_modified_mass_matrix; "auto" (NUTS's default) is set against nutpie's default, the
    # diagonal metric, and against nutpie's best adaptation, the low-rank one
    ("gauss100", "diag", "diag"), ("corr10", "diag", "diag"), ("logreg26", "diag", "diag"),
    ("breast_cancer", "diag", "diag"),
    ("rot50", "low_rank", "low_rank"), ("corr10", "low_rank", "low_rank"), ("logreg26", "low_rank", "low_rank"),
    ("gauss100", "auto", "diag"), ("corr10", "auto", "diag"), ("logreg26", "auto", "diag"),
    ("breast_cancer", "auto", "diag"),
    ("gauss100", "auto", "low_rank"), ("corr10", "auto", "low_rank"), ("logreg26", "auto", "low_rank"),
    ("breast_cancer", "auto", "low_rank"),
    ("diabetes_linear", "auto", "diag"), ("diabetes_linear_sigma", "auto", "diag"),
    ("diabetes_linear", "auto", "low_rank"), ("diabetes_linear_sigma", "auto", "low_rank"),
]
NUTPIE_CSV = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "nuts_vs_nutpie.csv"


def nutpie_targets() -> dict:
    return {
        "gauss100": wb.targets.gaussian(100, scales="logspace"),
        "corr10": wb.targets.gaussian(10, correlation=0.9),
        "logreg26": wb.targets.logistic_regression(n_data=1000, dim=26),
        "breast_cancer": wb.targets.logistic_regression("breast_cancer"),
        "rot50": wb.targets.rotated_gaussian(50),
        # the bundled regressions beside breast cancer (wb.posteriors)
        "diabetes_linear": wb.posteriors.load("diabetes_linear"),
        "diabetes_linear_sigma": wb.posteriors.load("diabetes_linear_sigma"),
    }


def ratio_interval(ours, theirs, level: float = 0.9, n_boot: int = 4000) -> tuple[float, float]:
    """A bootstrap interval (over seeds, each side resampled on its own) of the ratio of the
    medians: the min ESS over coordinates moves by +-10% from seed to seed, so a ratio of
    medians of a few seeds is only known to within its interval."""
    rng = np.random.default_rng(0)
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    a = np.median(rng.choice(ours, (n_boot, ours.size)), axis=1)
    b = np.median(rng.choice(theirs, (n_boot, theirs.size)), axis=1)
    low, high = np.quantile(a / b, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def nutpie_table(seeds) -> int:
    """Ours and nutpie's ESS per 1,000 gradients, each at its defaults, one row per target."""
    import pandas as pd
    from nutpie_reference import run_nutpie

    targets, rows, our_runs, nutpie_runs = nutpie_targets(), [], {}, {}
    for name, metric, theirs_metric in NUTPIE_ROWS:
        t = targets[name]
        if (name, metric) not in our_runs:  # one set of runs serves every row of (target, metric)
            ours, ours_acc = [], []
            for seed in seeds:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = wb.methods.NUTS(metric=metric, progress=False).run(t, seed=seed)
                ours.append(wb.metrics.evaluate(res, t)["ess_per_1k_grad"])
                ours_acc.append(float(np.mean(res.stats["accept_prob"])))
            our_runs[name, metric] = ours, ours_acc
        ours, ours_acc = our_runs[name, metric]
        key = (name, theirs_metric)
        if key not in nutpie_runs:
            nutpie_runs[key] = run_nutpie(t, seeds, low_rank=theirs_metric == "low_rank")
        theirs = nutpie_runs[key]
        row = {"target": name, "d": t.dim, "metric": metric, "nutpie_metric": theirs_metric,
               "ours": float(np.median(ours)), "nutpie": float(np.median([r["ess_per_1k_grad"] for r in theirs])),
               "ours_accept": float(np.mean(ours_acc)), "nutpie_accept": float(np.mean([r["accept"] for r in theirs])),
               "nutpie_tune": theirs[0]["tune"]}
        row["ratio"] = row["ours"] / row["nutpie"]
        row["ratio_low"], row["ratio_high"] = ratio_interval(ours, [r["ess_per_1k_grad"] for r in theirs])
        rows.append(row)
        print(f"{name:<22}{metric + ' / ' + theirs_metric:<20}ours {row['ours']:7.1f}  nutpie {row['nutpie']:7.1f}  "
              f"ratio {row['ratio']:.2f} ({row['ratio_low']:.2f}-{row['ratio_high']:.2f})  "
              f"acceptance {row['ours_accept']:.3f} / {row['nutpie_accept']:.3f}", flush=True)
    frame = pd.DataFrame(rows)
    frame = stamp(frame)
    frame["seeds"] = len(list(seeds))
    NUTPIE_CSV.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(NUTPIE_CSV, index=False, float_format="%.4g")
    print(f"-> {NUTPIE_CSV}")
    return 0


WHOLE_CALL_CSV = NUTPIE_CSV.with_name("whole_call_vs_nutpie.csv")


def whole_call_table(seeds) -> int:
    """Ours and nutpie's wall seconds and ESS per second of the whole call on gauss100."""
    import subprocess
    import tempfile
    import time

    import pandas as pd
    from nutpie_reference import nutpie_python

    from workbench.diagnostics import chain_diagnostics

    target = wb.targets.gaussian(100, scales="logspace")
    _ = wb.methods.NUTS(progress=False).run(target, seed=0).messages  # compile (or load) first
    rows = []
    for seed in seeds:
        start = time.perf_counter()
        res = wb.methods.NUTS(progress=False).run(target, seed=seed)
        call = time.perf_counter() - start
        start = time.perf_counter()
        _ = res.messages
        health = time.perf_counter() - start
        rows.append({"tool": "workbench NUTS", "seed": seed, "call_seconds": call, "health_seconds": health,
                     "sampling_seconds": res.cost.wall_seconds, "grads": res.cost.grad_evals,
                     "ess_bulk_min": res.info["diagnostics"]["ess_bulk_min"]})
    with tempfile.TemporaryDirectory() as tmp:
        out_path = Path(tmp) / "out.npz"
        driver = Path(__file__).resolve().parent / "nutpie_flow_driver.py"
        proc = subprocess.run([nutpie_python(flow=True), str(driver), "gauss100", "diag", ",".join(map(str, seeds)),
                               str(out_path)], capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"nutpie failed on gauss100: {proc.stderr[-2000:]}")
        out = dict(np.load(out_path))
    for seed in seeds:
        rows.append({"tool": "nutpie", "seed": seed, "call_seconds": float(out[f"seconds_{seed}"][0]),
                     "health_seconds": np.nan, "sampling_seconds": np.nan, "grads": int(out[f"grads_{seed}"][0]),
                     "ess_bulk_min": chain_diagnostics(out[f"draws_{seed}"]).ess_bulk_min})
    frame = pd.DataFrame(rows)
    frame["ess_per_second"] = frame["ess_bulk_min"] / frame["call_seconds"]
    frame["ess_per_second_with_health"] = frame["ess_bulk_min"] / (frame["call_seconds"] + frame["health_seconds"])
    frame["fixed_seconds"] = frame["call_seconds"] + frame["health_seconds"] - frame["sampling_seconds"]
    summary = frame.groupby("tool", sort=False).median(numeric_only=True).drop(columns="seed").reset_index()
    ours, theirs = summary.iloc[0], summary.iloc[1]
    summary["ratio_to_nutpie"] = summary["ess_per_second"] / theirs["ess_per_second"]
    summary = stamp(summary)
    summary["seeds"] = len(list(seeds))
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"ours / nutpie, ESS per second of the call: {ours['ess_per_second'] / theirs['ess_per_second']:.2f}; "
          f"with our health check read: {ours['ess_per_second_with_health'] / theirs['ess_per_second']:.2f}; "
          f"our fixed cost {ours['fixed_seconds']:.3f} s")
    summary.to_csv(WHOLE_CALL_CSV, index=False, float_format="%.4g")
    print(f"-> {WHOLE_CALL_CSV}")
    return 0


BANANA_CSV = NUTPIE_CSV.with_name("banana_nuts.csv")
BANANA_SETTINGS = [
    ("default", {}),
    ("target_accept=0.95 (fixed)", {"target_accept": 0.95, "adapt_target": False}),
    ("target_accept=0.99 (fixed)", {"target_accept": 0.99, "adapt_target": False}),
    ("walnuts=True", {"walnuts": True}),
    ("metric=identity", {"metric": "identity"}),
    ("metric=identity, target_accept=0.95 (fixed)",
     {"metric": "identity", "target_accept": 0.95, "adapt_target": False}),
]


def _banana_run(settings: dict, seed: int, draws: int):
    from workbench.diagnostics import chain_diagnostics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = wb.methods.NUTS(progress=False, **settings).run(wb.targets.banana(), seed=seed,
                                                              budget=wb.Budget(draws=draws))
    return res, chain_diagnostics(res.draws, res.stats)


def banana_table(seeds, draws: int = 8000, short_seeds=range(12)) -> int:
    """NUTS's settings on ``banana()``: over long runs (``draws`` per chain, ``seeds``), what
    each holds once the chains have visited the arms, median over seeds with the range; over
    the default 4 x 1,000 draws (``short_seeds``), how many runs pass posteriordb's standard
    (R-hat <= 1.01, bulk ESS >= 400) and the median divergences."""
    import pandas as pd

    rows = []
    for name, settings in BANANA_SETTINGS:
        per_draw, divergences, rhat, grads = [], [], [], []
        for seed in seeds:
            res, diag = _banana_run(settings, seed, draws)
            n = res.draws.shape[0] * res.draws.shape[1]
            per_draw.append(diag.ess_bulk_min / n)
            divergences.append(int(res.stats["diverging"].sum()))
            rhat.append(diag.r_hat_max)
            grads.append(res.cost.grad_evals / n)
        short = [_banana_run(settings, seed, 1000)[1] for seed in short_seeds]
        row = {"setting": name, "ess_per_draw": float(np.median(per_draw)), "ess_per_draw_min": min(per_draw),
               "ess_per_draw_max": max(per_draw), "divergences_per_1k_draws": 1000 * float(np.median(divergences)) / n,
               "r_hat_max": max(rhat), "grads_per_draw": float(np.median(grads)),
               "short_runs_passing": sum(d.r_hat_max <= 1.01 and d.ess_bulk_min >= 400 for d in short),
               "short_runs_ess_400": sum(d.ess_bulk_min >= 400 for d in short),
               "short_runs_divergences": float(np.median([d.divergences for d in short]))}
        rows.append(row)
        print(f"{name:<46} ESS per draw {row['ess_per_draw']:.3f} ({row['ess_per_draw_min']:.3f}-"
              f"{row['ess_per_draw_max']:.3f})  divergences {divergences}  gradients per draw "
              f"{row['grads_per_draw']:.1f}  4 x 1,000 draws: {row['short_runs_passing']} of {len(short)} pass, "
              f"{row['short_runs_ess_400']} with ESS >= 400", flush=True)
    frame = pd.DataFrame(rows)
    frame["draws"] = f"4 x {draws}"
    frame["short_runs"] = len(list(short_seeds))
    frame = stamp(frame)
    frame["seeds"] = len(list(seeds))
    frame.to_csv(BANANA_CSV, index=False, float_format="%.4g")
    print(f"-> {BANANA_CSV}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # nutpie_reference.py beside this file
    raise SystemExit(main())
