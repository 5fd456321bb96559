"""nn4post ablations: gauge fixing, re-scaling of a, the frozen-out fix, the entropy bound, N_c.

Each option of the paper is switched on its own against a baseline (gauge c(a - mean a), r = 1,
no frozen-out fix, exact entropy), on the original implementation's three-peak test problem
(weights 0.05, 0.25, 0.70 at -3, 0, +3 times the all-ones vector, every scale ln 2), with five
components started near the peaks (one sd away, equal weights), so what is left to fit is the
weights and scales. The loss against iterations is KL(q||p) (the target is normalised); the
final KL is re-estimated from 4,000 fresh draws of q, with the exact entropy, for every
variant. A second start puts weight 1e-12 on the two components at the main peak (the
frozen-out problem, sec. 3.2.3). The N_c sweep fits a 2-d three-peak mixture (weights 0.2,
0.3, 0.5 at -4, 0, +4) from the paper's box start. Several seeds each. It answers the paper's open claims: the gauge c(a - mean a)
"converges apparently faster" than subtracting the mean gradient (sec. 3.2.1), and the
entropy lower bound "cannot get enough accuracy" (sec. 3.3.1). A last part compares the
starts, the paper's box against the mode search (init="modes", the default), each with and
without component adaptation, at the defaults otherwise, on the accuracy study's three-peak
mixtures (random peaks and weights) of d = 2, 10 and 100 at budgets of 10^5, 3 x 10^5 and 10^6
gradients. The option rows keep the paper's settings (a constant learning rate, no adaptation).

    python studies/nn4post_ablation.py [--quick]
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workbench.study import Cell, Figure, Page, Study, main_for
from workbench.study.style import method_colours

EXTRA = "vi_ablation"
LN2 = math.log(2.0)
BASE = "baseline (gauge c(a - mean a))"
GOAL_FACTOR = 2.0  # "converged": the loss stays below twice the baseline's final KL (median over seeds)

VARIANTS = {  # label -> settings changed from the baseline
    "baseline (gauge c(a - mean a))": {},
    "gauge: mean gradient": {"gauge": "mean_grad"},
    "gauge: none": {"gauge": "none"},
    "r dynamic": {"rescale": "dynamic"},
    "r = 0.1": {"r": 0.1},
    "frozen fix: divide": {"frozen_fix": "divide"},
    "frozen fix: clip": {"frozen_fix": "clip"},
    "frozen fix: divide, mean-gradient gauge": {"frozen_fix": "divide", "gauge": "mean_grad"},
    "entropy: lower bound": {"entropy": "lower_bound"},
}
FROZEN = ("baseline (gauge c(a - mean a))", "frozen fix: divide", "frozen fix: clip",
          "frozen fix: divide, mean-gradient gauge")  # the divided dL/da no longer sums to zero: gauges differ
GROUPS = {
    "gauge fixing (sec. 3.2.1)": ["baseline (gauge c(a - mean a))", "gauge: mean gradient", "gauge: none"],
    "re-scaling of a (sec. 3.2.2)": ["baseline (gauge c(a - mean a))", "r dynamic", "r = 0.1"],
    "entropy (sec. 3.3.1)": ["baseline (gauge c(a - mean a))", "entropy: lower bound"],
}


INIT_VARIANTS = {  # label -> settings changed from the defaults
    "box, no adaptation": {"init": "box", "adapt_components": False},
    "box + adaptation": {"init": "box"},
    "modes, no adaptation": {"adapt_components": False},
    "modes + adaptation (default)": {},
}
INIT_BUDGETS = {2: 100_000, 10: 300_000, 100: 1_000_000}


def three_peak_target(dim: int) -> dict:
    return {"factory": "gaussian_mixture", "dim": dim, "n_components": 3, "weights": [0.05, 0.25, 0.70],
            "means": [[-3.0] * dim, [0.0] * dim, [3.0] * dim], "scales": [[LN2] * dim] * 3}


def near_peak_start(dim: int, seed: int, frozen: bool = False) -> dict:
    """Five components one sd per coordinate from the peaks (two at -3, one at 0, two at +3);
    ``frozen``: the two at +3 (the main peak) start at weight 1e-12."""
    rng = np.random.default_rng(1000 + seed)
    centres = np.array([-3.0, -3.0, 0.0, 3.0, 3.0])[:, None] + LN2 * rng.standard_normal((5, dim))
    weights = np.array([1, 1, 1, 1e-12, 1e-12]) if frozen else np.full(5, 0.2)
    return {"weights": (weights / weights.sum()).tolist(), "means": centres.tolist(), "scales": [[LN2] * dim] * 5}


def grid(quick: bool) -> list[Cell]:
    dims = (10,) if quick else (10, 100)
    seeds = (0, 1, 2) if quick else (0, 1, 2, 3, 4)
    steps = 3000 if quick else 10_000
    base = {"method": "NN4Post", "n_components": 5, "samples": 10, "steps": steps, "learning_rate": 0.05,
            "lr_final": 1.0, "adapt_components": False, "converge_tol": 0, "draws": 1000, "progress": False}
    cells = []
    for d in dims:
        for seed in seeds:
            for label, change in VARIANTS.items():
                for start in ("near peaks", "main peak frozen"):
                    if start == "main peak frozen" and label not in FROZEN:
                        continue
                    method = {**base, **change, "init_from": near_peak_start(d, seed, start == "main peak frozen")}
                    cells.append(Cell(three_peak_target(d), method, seed, extra=EXTRA, labels={
                        "target": f"three peaks d={d}", "method": label, "start": start, "part": "options", "dim": d}))
    # N_c sweep from the default box start on a 2-d mixture whose peaks the box covers
    mixture = {"factory": "gaussian_mixture", "dim": 2, "n_components": 3, "weights": [0.2, 0.3, 0.5],
               "means": [-4.0, 0.0, 4.0], "scales": [0.8, 1.0, 1.2]}
    for n_c in (1, 2, 3, 5, 8):
        for seed in seeds:
            method = {**base, "n_components": n_c, "steps": steps, "init": "box"}
            cells.append(Cell(mixture, method, seed, extra=EXTRA, labels={
                "target": "mixture d=2", "method": f"N_c = {n_c}", "n_components": n_c, "part": "N_c", "dim": 2}))
    # the starts: box or mode search, with and without component adaptation, at the defaults otherwise
    for d, budget in INIT_BUDGETS.items():
        if quick and d == 100:
            continue
        for seed in seeds[:3]:
            target = {"factory": "gaussian_mixture", "dim": d, "n_components": 3, "seed": seed}
            for label, change in INIT_VARIANTS.items():
                method = {"method": "NN4Post", "draws": 4000, "progress": False, **change}
                cells.append(Cell(target, method, seed, budget, extra=EXTRA, labels={
                    "target": f"mixture d={d}", "method": label, "start": change.get("init", "modes"),
                    "part": "init", "dim": d}))
    return cells


# ---------------------------------------------------------------------------- analysis


def _traces(run, indices) -> tuple[np.ndarray, np.ndarray]:
    """(iterations, KL traces (cells x blocks)) of the chosen cells (block means of -ELBO)."""
    its, rows = None, []
    for i in indices:
        a = run.arrays(i)
        if "trace_neg_elbo" not in a:
            continue
        its = a["trace_iteration"]
        rows.append(a["trace_neg_elbo"])
    return its, (np.array(rows) if rows else np.zeros((0, 0)))


def iterations_to(its: np.ndarray, trace: np.ndarray, goal: float) -> float:
    """The first iteration after which the (block-mean) loss stays below ``goal``; NaN if never."""
    above = np.nonzero(trace >= goal)[0]
    if above.size == 0:
        return float(its[0])
    if above[-1] == trace.size - 1:
        return math.nan
    return float(its[above[-1] + 1])


def kl_goals(table: pd.DataFrame) -> dict:
    """Per target of the options part: the loss counted as converged, GOAL_FACTOR x the
    baseline's final KL (median over seeds)."""
    ok = table[(table["status"] == "ok") & (table["part"] == "options") & (table["method"] == BASE)
               & (table["start"] == "near peaks")]
    return {t: GOAL_FACTOR * g["kl"].median() for t, g in ok.groupby("target")}


def summary(run) -> pd.DataFrame:
    """Per target, start and variant: final KL (median and range over seeds), weight error,
    and iterations until the loss stays below the target's goal (``kl_goals``; median over seeds)."""
    t = run.table.copy()
    t["start"] = t["start"].fillna("box")  # the N_c sweep starts from the default box
    goals = kl_goals(t)
    t["iterations_to_goal"] = np.nan
    for i in t.index[(t["status"] == "ok") & t["target"].isin(list(goals))]:
        a = run.arrays(i)
        if "trace_neg_elbo" in a:
            t.loc[i, "iterations_to_goal"] = iterations_to(a["trace_iteration"], a["trace_neg_elbo"], goals[t.loc[i, "target"]])
    t = t[t["status"] == "ok"].copy()
    g = t.groupby(["target", "start", "method"], sort=False)
    out = g.agg(kl_median=("kl", "median"), kl_min=("kl", "min"), kl_max=("kl", "max"),
                weight_err_median=("weight_err_max", "median"), iterations_to_goal=("iterations_to_goal", "median"),
                unconverged=("iterations_to_goal", lambda s: int(s.isna().sum())), seeds=("seed", "count"))
    return out.reset_index()


def finding(run) -> str:
    s = summary(run)
    near = s[s["start"] == "near peaks"]
    if near.empty:
        return "No option cells finished."
    d = near["target"].iloc[0]
    v = near[near["target"] == d].set_index("method")

    def kl(label):
        return f"{v.loc[label, 'kl_median']:.3g}" if label in v.index else "n/a"

    def its(label):
        if label not in v.index:
            return "n/a"
        x = v.loc[label, "iterations_to_goal"]
        return "never" if not np.isfinite(x) else f"{x:.0f}"

    base = BASE
    goal = kl_goals(run.table.assign(start=run.table["start"].fillna("box"))).get(d, np.nan)
    parts = [f"On {d} (median over {int(v.loc[base, 'seeds'])} seeds), iterations until the loss stays below "
             f"{goal:.3g} nats: gauge c(a - mean a) {its(base)}, mean-gradient gauge {its('gauge: mean gradient')}, "
             f"no gauge {its('gauge: none')} (final KL {kl(base)}, {kl('gauge: mean gradient')}, {kl('gauge: none')}): "
             "the three forms give the same gradient in exact arithmetic, since softmax is shift-invariant and dL/da "
             "already sums to zero, so the paper's 'the later converges faster' is not reproduced",
             f"the entropy lower bound ends at KL {kl('entropy: lower bound')} against {kl(base)} with the exact entropy",
             f"r dynamic {kl('r dynamic')}, r = 0.1 {kl('r = 0.1')}"]
    frozen = s[(s["start"] == "main peak frozen") & (s["target"] == d)].set_index("method")
    if len(frozen):
        parts.append("with the main peak's components started at weight 1e-12, final KL " + ", ".join(
            f"{m.replace('baseline (gauge c(a - mean a))', 'no fix')} {frozen.loc[m, 'kl_median']:.3g}" for m in frozen.index))
    init = s[s["method"].isin(list(INIT_VARIANTS))]
    for target, g in init.groupby("target", sort=False):
        parts.append(f"on the {target} three-peak mixture the largest peak-weight error (median over seeds) is " + ", ".join(
            f"{m} {w:.3f}" for m, w in zip(g["method"], g["weight_err_median"])))
    nc = s[(s["target"] == "mixture d=2") & s["method"].str.startswith("N_c")]
    if len(nc):
        parts.append("on the 2-d three-peak mixture the final KL by N_c is " + ", ".join(
            f"{m.split('= ')[1]}: {k:.3g}" for m, k in zip(nc["method"], nc["kl_median"])))
    return "; ".join(parts) + "."


# ---------------------------------------------------------------------------- figures


def _trace_panel(ax, run, table, labels, start="near peaks", goal=np.nan):
    colours = method_colours(labels)
    for label in labels:
        idx = table.index[(table["method"] == label) & (table["start"] == start) & (table["status"] == "ok")]
        its, tr = _traces(run, idx)
        if tr.size == 0:
            continue
        for row in tr:
            ax.plot(its, np.maximum(row, 1e-4), color=colours[label], lw=0.5, alpha=0.35)
        ax.plot(its, np.maximum(np.median(tr, axis=0), 1e-4), color=colours[label], lw=1.6, label=label)
    if np.isfinite(goal):
        ax.axhline(goal, color="k", ls=":", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss = KL(q||p) (block means)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")


def _option_figure(run, folder, dim) -> str:
    table = run.table
    sub = table[(table["part"] == "options") & (table["dim"] == dim)]
    goal = kl_goals(table).get(sub["target"].iloc[0], np.nan) if len(sub) else np.nan
    panels = list(GROUPS.items()) + [("frozen-out fix (sec. 3.2.3), main peak started frozen", list(FROZEN))]
    fig, axes = plt.subplots(2, 2, figsize=(10.5, 7.5))
    for ax, (title, labels) in zip(axes.ravel(), panels):
        start = "main peak frozen" if title.startswith("frozen") else "near peaks"
        _trace_panel(ax, run, sub, labels, start, goal)
        ax.set_title(title, fontsize=9)
    fig.suptitle(f"three-peak mixture, d = {dim}: loss against iterations (thin: seeds, thick: median)", fontsize=10)
    fig.tight_layout()
    file = f"options_d{dim}.png"
    fig.savefig(folder / file, dpi=85)
    plt.close(fig)
    return file


def _nc_figure(run, folder) -> str:
    t = run.table[(run.table["part"] == "N_c") & (run.table["status"] == "ok")]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, col, label in ((axes[0], "kl", "final KL(q||p)"), (axes[1], "weight_err_max", "largest peak-weight error")):
        ax.plot(t["n_components"], np.maximum(t[col], 1e-4), "o", alpha=0.6)
        med = t.groupby("n_components")[col].median()
        ax.plot(med.index, np.maximum(med.values, 1e-4), "k-", lw=1)
        ax.axvline(3, color="grey", ls=":", lw=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("N_c (the target has 3 peaks)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(folder / "n_components.png", dpi=85)
    plt.close(fig)
    return "n_components.png"


def _init_figure(run, folder) -> str:
    t = run.table[(run.table["part"] == "init") & (run.table["status"] == "ok")]
    dims = sorted(t["dim"].unique())
    fig, axes = plt.subplots(1, len(dims), figsize=(3.6 * len(dims), 3.4), squeeze=False)
    labels = list(INIT_VARIANTS)
    for ax, d in zip(axes[0], dims):
        sub = t[t["dim"] == d]
        for j, label in enumerate(labels):
            v = sub.loc[sub["method"] == label, "weight_err_max"].to_numpy(float)
            if v.size:
                ax.bar(j, np.median(v), color="0.85", edgecolor="0.4")
                ax.plot(np.full(v.size, j), v, "o", color="C0", ms=4)
        ax.set_xticks(range(len(labels)), [x.replace(" (default)", "\n(default)").replace(", ", ",\n").replace(" + ", "\n+ ")
                                           for x in labels], fontsize=7)
        ax.set_title(f"three-peak mixture, d = {int(d)}", fontsize=9)
        ax.set_ylabel("largest peak-weight error")
        ax.set_ylim(0, 0.75)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(folder / "starts.png", dpi=85)
    plt.close(fig)
    return "starts.png"


def report(run, folder) -> Page:
    if "start" in run.table:
        run.table["start"] = run.table["start"].fillna("box")
    dims = sorted(run.table.loc[run.table["part"] == "options", "dim"].dropna().unique())
    figures = [Figure(_option_figure(run, folder, int(d)),
                      f"Three-peak mixture, d = {int(d)}: the loss (KL, as the target is normalised) against iterations for "
                      "each option switched on its own. The lower-bound run's trace is its own (bound-based) loss; its "
                      "final KL in the table uses the exact entropy. Dotted: the goal of the iterations column (twice the "
                      "baseline's final KL).")
               for d in dims]
    figures.append(Figure(_nc_figure(run, folder),
                          "N_c sweep on a 2-d three-peak mixture from the paper's box start: final KL and the largest "
                          "peak-weight error per seed (line: median). Fewer components than peaks must miss mass."))
    if (run.table["part"] == "init").any():
        figures.append(Figure(_init_figure(run, folder),
                              "The starts at the defaults otherwise: the largest peak-weight error per seed (dots) and "
                              "median (bar) for the box and the mode search, with and without component adaptation. "
                              "0.67 means every component sits on one peak."))
    return Page(finding=finding(run), figures=figures,
                tables=[("Per variant (over seeds)", summary(run))],
                notes=["Final KL = E_q[log q - log p] from 4,000 fresh draws of q (the target's log Z = 0), standard "
                       "error about 0.003 nats; the traces are per-iteration estimates (50 draws) in block means.",
                       "Weight error: q's draws assigned to their most responsible peak, against the true weights.",
                       "Against GMMVI, the best Gaussian-mixture VI (Arenz et al. 2023), see the mixture_vi study: on "
                       "full-covariance multimodal targets NN4Post's diagonal components and its five-component default "
                       "leave it behind (full grid, 2 seeds: GMM20 largest weight error 0.34-0.36 and KL 12.7 at every budget "
                       "up to 10^6 gradients, where GMMVI is within 0.009 at 10^5; STM20 0.65 against GMMVI's 0.061 at "
                       "10^6), and on the nn4post 3-peak benchmark its mode search finds every peak (within 0.01 at "
                       "N_d = 100 and 10,000) where GMMVI, started at N(0, I), sees only the one it starts on."])


STUDY = Study(name="nn4post_ablation", title="nn4post ablations: which of the paper's options matter", grid=grid,
              report=report, description=__doc__.split("\n\n")[1].replace("\n", " "))

main = main_for(STUDY)

if __name__ == "__main__":
    raise SystemExit(main())
