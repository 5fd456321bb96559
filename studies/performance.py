"""Performance: effective sample size per second and per 1,000 gradients, and overhead.

Each method runs with its default-like settings (no budget) on targets from cheap
(a Gaussian, where the method's own bookkeeping shows) to expensive (regressions, a BNN,
where the target's gradient dominates). Reported per cell: bulk and tail ESS (the minimum
over coordinates; warmup gradients count in the cost), ESS per second of sampling, ESS
per 1,000 gradient evaluations, and the overhead ratio = wall time / (gradient evaluations
x the time of one ``logp_grad`` call measured in the same worker). An overhead near 1
means the method costs what its gradients cost. For VI, Laplace and IS the draws are
independent, so their ESS says how many draws were asked for, not how good they are:
the accuracy study says that. Samplers run one chain, so a worker process uses one core and
the wall time is not shared between threads.

    python studies/performance.py [--quick] [--executor local|serial|dask]
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from workbench.study import Cell, Figure, Page, Study, main_for
from workbench.study import figures as F


def grid(quick: bool) -> list[Cell]:
    targets = [
        ("gaussian d=100", {"factory": "gaussian", "dim": 100, "scales": "logspace"}),
        ("banana d=2", {"factory": "banana", "dim": 2}),
        ("logistic regression", {"factory": "logistic_regression", "dataset": "breast_cancer"}),
    ]
    if not quick:
        targets += [
            ("funnel d=10", {"factory": "funnel", "dim": 10}),
            ("BNN", {"factory": "bnn", "n_data": 40, "widths": [5]}),
            ("gaussian d=1000", {"factory": "gaussian", "dim": 1000, "scales": "logspace"}),
        ]
    n = 500 if quick else 2000
    quiet = {"progress": False}
    methods = [
        ("RWM", {"method": "RandomWalkMH", "chains": 1, "warmup": 10 * n, "draws": 10 * n, **quiet}),
        ("HMC", {"method": "HMC", "chains": 1, "warmup": n, "draws": n, **quiet}),
        ("NUTS", {"method": "NUTS", "chains": 1, "warmup": n, "draws": n, **quiet}),
        ("IS", {"method": "ImportanceSampling", "n": 10 * n}),
        ("Laplace", {"method": "Laplace", "draws": 2 * n}),
        ("MeanFieldVI", {"method": "MeanFieldVI", "steps": 4 * n, "draws": 2 * n, "converge_tol": 0, **quiet}),
        ("NN4Post", {"method": "NN4Post", "n_components": 5, "steps": 4 * n, "draws": 2 * n, "converge_tol": 0, **quiet}),
        # NUTS's metrics side by side (NUTS above is the default, "auto": on these two targets it
        # keeps the diagonal or the low-rank metric); dense for d <= 100 only
        ("NUTS (low_rank)", {"method": "NUTS", "chains": 1, "warmup": n, "draws": n, "metric": "low_rank", **quiet}),
        ("NUTS (dense)", {"method": "NUTS", "chains": 1, "warmup": n, "draws": n, "metric": "dense", **quiet}),
    ]
    seeds = (0,) if quick else (0, 1)
    cells = [
        Cell(spec, method, seed, labels={"target": t, "method": m}, timing=True)
        for t, spec in targets
        for m, method in methods
        for seed in seeds
        if not (m == "NUTS (dense)" and t == "gaussian d=1000")  # a dense metric is for d <= a few hundred
    ]
    # the dimension sweep: samplers on isotropic Gaussians, ESS per gradient against d
    for d in (10, 100) if quick else (10, 100, 1000):
        for m, method in methods[:3]:
            for seed in seeds:
                cells.append(Cell({"factory": "gaussian", "dim": d}, method, seed, timing=True,
                                  labels={"target": f"isotropic gaussian d={d}", "method": m, "dim": d}))
    return cells


def _finding(table: pd.DataFrame) -> str:
    ok = table[table["status"] == "ok"]
    med = ok.groupby(["target", "method"])[["ess_per_1k_grad", "overhead"]].median()
    parts = []
    for target in ("gaussian d=100", "logistic regression"):
        if target not in med.index.get_level_values(0):
            continue
        m = med.loc[target]
        samplers = [s for s in ("NUTS", "NUTS (low_rank)", "NUTS (dense)", "HMC", "RWM") if s in m.index]
        ess = ", ".join(f"{s} {m.loc[s, 'ess_per_1k_grad']:.3g}" for s in samplers)
        over = ", ".join(f"{s} {m.loc[s, 'overhead']:.2g}" for s in samplers)
        parts.append(f"on {target}, bulk ESS per 1,000 gradients: {ess}; overhead: {over}")
    return "Among the samplers, " + "; ".join(parts) + " (overhead = wall time / (gradients x one gradient's time))."


# ESS per gradient at the optimal tuning: RWM ~ d^-1, HMC ~ d^-1/4 (Beskos et al. 2013); NUTS
# adds log-d tree growth on top of HMC's scaling
THEORY = {"RWM": -1, "HMC": -0.25, "NUTS": "~ -0.25"}


NUTPIE_CSV = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "nuts_vs_nutpie.csv"


def _provenance(path) -> str:
    """"measured <date> on <machine>" of a benchmark record (its first row's)."""
    row = pd.read_csv(path).iloc[0]
    return f"measured {row.get('measured', '?')} on {row.get('machine', '?')}"


def nutpie_comparison() -> tuple[str, pd.DataFrame] | None:
    """The recorded benchmark of NUTS against nutpie (``benchmarks/mcmc_speed.py --nutpie``): a
    sentence saying where we lead and where we trail, and the table; None before it is run."""
    if not NUTPIE_CSV.exists():
        return None
    table = pd.read_csv(NUTPIE_CSV)
    label = table["target"] + " (" + table["metric"] + ")"
    if "nutpie_metric" in table:  # ours against a different nutpie metric: say which
        other = table["nutpie_metric"] != table["metric"]
        label = label.where(~other, table["target"] + " (" + table["metric"] + " vs nutpie's "
                            + table["nutpie_metric"] + ")")
    intervals = "ratio_low" in table
    if not intervals:  # a record from before the intervals: the ratio alone
        table["ratio_low"] = table["ratio_high"] = table["ratio"]
    rows = list(zip(label, table["ratio"], table["ratio_low"], table["ratio_high"]))

    def listed(keep):
        return ", ".join(f"{n} {r:.2f}x" + (f" ({lo:.2f}-{hi:.2f})" if intervals else "")
                         for n, r, lo, hi in rows if keep(r, lo, hi)) or "none"

    sentence = (f"Against nutpie, each of our metrics against nutpie's (benchmark of {table['measured'].iloc[0]}, median of "
                f"{table['seeds'].iloc[0]} seeds, ESS per gradient ours / nutpie's"
                + (" with a 90% bootstrap interval over seeds): " if intervals else "): ")
                + f"ahead on {listed(lambda r, lo, hi: lo >= 1.0)}; level within the seeds' noise on "
                f"{listed(lambda r, lo, hi: lo < 1.0 <= hi)}; behind on {listed(lambda r, lo, hi: hi < 1.0)}.")
    # the ratio beside the rows it compares; the record's provenance (date, machine, command) is
    # one value for the whole table, said in its caption, not repeated in columns of every row
    first = [c for c in ("target", "d", "metric", "nutpie_metric", "ratio", "ratio_low", "ratio_high", "ours", "nutpie")
             if c in table]
    shown = table[first + [c for c in table if c not in first and c not in ("machine", "command", "measured")]]
    return sentence, shown


WHOLE_CALL_CSV = NUTPIE_CSV.with_name("whole_call_vs_nutpie.csv")


def whole_call_comparison() -> tuple[str, pd.DataFrame] | None:
    """The recorded whole-call timing against nutpie (``benchmarks/mcmc_speed.py --whole-call``)."""
    if not WHOLE_CALL_CSV.exists():
        return None
    table = pd.read_csv(WHOLE_CALL_CSV)
    ours, theirs = table.iloc[0], table.iloc[1]
    sentence = (f"A whole NUTS().run() on gauss100 takes {ours['call_seconds']:.3f} s against nutpie.sample's "
                f"{theirs['call_seconds']:.3f} s ({table['measured'].iloc[0]}, median of {table['seeds'].iloc[0]} "
                f"seeds): ESS per second of the call {ours['ess_per_second'] / theirs['ess_per_second']:.1f}x "
                f"nutpie's, {ours['ess_per_second_with_health'] / theirs['ess_per_second']:.1f}x with our health "
                f"check read ({ours['health_seconds']:.3f} s; a run's fixed cost {ours['fixed_seconds']:.3f} s).")
    return sentence, table


BANANA_CSV = NUTPIE_CSV.with_name("banana_nuts.csv")


def banana_health() -> tuple[str, pd.DataFrame] | None:
    """The recorded long runs of NUTS's settings on the banana (``benchmarks/mcmc_speed.py
    --banana``): a sentence on what 4 x 1,000 draws can hold there, and the table."""
    if not BANANA_CSV.exists():
        return None
    table = pd.read_csv(BANANA_CSV)
    default = table[table["setting"] == "default"].iloc[0]
    best = table.loc[table["short_runs_passing"].idxmax()]
    fastest = table.loc[table["ess_per_draw"].idxmax()]
    n = int(table["short_runs"].iloc[0])
    sentence = (f"On the banana, R-hat <= 1.01 with bulk ESS >= 400 at 4 x 1,000 draws holds in "
                f"{int(default['short_runs_passing'])} of {n} default runs and at best in {int(best['short_runs_passing'])} "
                f"of {n} ({best['setting']}). Long runs put NUTS's ESS per draw there at {default['ess_per_draw']:.3f} by "
                f"default and at most {fastest['ess_per_draw']:.3f} ({fastest['setting']}); ESS 400 from 4,000 draws "
                f"needs 0.1.")
    return sentence, table


def report(run, folder) -> Page:
    sweep = run.table[run.table["dim"].notna()] if "dim" in run.table else run.table.iloc[:0]
    table = run.table[run.table["dim"].isna()] if "dim" in run.table else run.table
    figures = [
        Figure(F.bars(table, "ess_per_1k_grad", folder, "ess_per_1k_grad.png", "min bulk ESS per 1,000 gradients"),
               "Minimum bulk ESS over coordinates per 1,000 gradient evaluations (warmup included), median over seeds."),
        Figure(F.bars(table, "ess_per_second", folder, "ess_per_second.png", "min bulk ESS per second"),
               "Minimum bulk ESS per second of sampling (compile time excluded)."),
        Figure(F.bars(table, "overhead", folder, "overhead.png", "wall / (gradients x one gradient)", log=True),
               "Overhead ratio: wall time over the time its gradient evaluations alone would take. 1 = the method "
               "costs exactly its gradients; cheap targets expose the method's own work."),
    ]
    if len(sweep):
        figures.append(Figure(
            F.metric_vs_dimension(sweep, "ess_per_1k_grad", folder, "ess_vs_dimension.png",
                                  "min bulk ESS per 1,000 gradients", THEORY),
            "Dimension sweep on isotropic Gaussians: ESS per 1,000 gradients against d (log-log), with each "
            "sampler's fitted slope beside the theoretical one for optimally tuned RWM and HMC."))
    # the finding's measures first (ESS per gradient, overhead), then what they are made of
    cols = ["target", "method", "seed", "ess_per_1k_grad", "overhead", "ess_per_second", "r_hat_max", "grad_evals",
            "wall_seconds", "ess_bulk_min", "ess_tail_min", "grad_seconds", "w1_mean"]
    summary = (table[table["status"] == "ok"].groupby(["target", "method"], sort=False)
               [["ess_per_1k_grad", "overhead", "ess_per_second", "r_hat_max", "grad_evals", "ess_bulk_min"]]
               .median().reset_index())
    tables = [("Median over seeds", summary), ("Every cell", table[cols])]
    finding = _finding(table)
    nutpie = nutpie_comparison()
    if nutpie is not None:
        sentence, frame = nutpie
        finding += " " + sentence
        tables.insert(1, ("NUTS against nutpie, our metric against nutpie's nutpie_metric (4 chains x 1,000 draws; "
                          "nutpie's tuning steps in nutpie_tune; recorded by benchmarks/mcmc_speed.py --nutpie, nutpie run "
                          f"in its own venv on the same densities, {_provenance(NUTPIE_CSV)})", frame))
    whole = whole_call_comparison()
    if whole is not None:
        sentence, frame = whole
        finding += " " + sentence
        tables.insert(1, ("The whole call on gauss100, as a user times it: NUTS().run() and nutpie.sample at their "
                          "defaults, kernels compiled beforehand; our health check is computed when first read "
                          "(recorded by benchmarks/mcmc_speed.py --whole-call)",
                          frame[["tool", "call_seconds", "health_seconds", "fixed_seconds", "ess_bulk_min",
                                 "ess_per_second", "ess_per_second_with_health", "ratio_to_nutpie"]]))
    banana = banana_health()
    if banana is not None:
        sentence, frame = banana
        finding += " " + sentence
        n = int(frame["short_runs"].iloc[0])
        shown = frame[["setting", "ess_per_draw", "ess_per_draw_min", "ess_per_draw_max", "divergences_per_1k_draws",
                       "grads_per_draw", "short_runs_passing", "short_runs_ess_400"]].rename(columns={
            "ess_per_draw": "ESS/draw", "ess_per_draw_min": "min", "ess_per_draw_max": "max",
            "divergences_per_1k_draws": "div/1k draws", "grads_per_draw": "grads/draw",
            "short_runs_passing": f"pass (of {n})", "short_runs_ess_400": f"ESS>=400 (of {n})"})
        tables.insert(1, (f"NUTS's settings on the banana: ESS per draw over long runs ({frame['draws'].iloc[0]} "
                          f"draws, {frame['seeds'].iloc[0]} seeds); runs of 4 x 1,000 draws passing R-hat <= 1.01 "
                          f"and ESS >= 400 (benchmarks/mcmc_speed.py --banana)", shown))
    if len(sweep):
        tables.insert(1, ("Dimension sweep (median over seeds)", sweep.groupby(["method", "dim"], sort=False)
                          [["grad_evals", "ess_bulk_min", "ess_per_1k_grad", "overhead"]].median().reset_index()))
    return Page(finding=finding, figures=figures, tables=tables)


STUDY = Study(
    name="performance",
    title="Performance: ESS per second, per 1,000 gradients, and overhead",
    grid=grid,
    report=report,
    description=__doc__.split("\n\n")[1].replace("\n", " "),
)

main = main_for(STUDY)

if __name__ == "__main__":
    raise SystemExit(main())
