"""Marginalisation: nn4post's analytic marginals (eq. 6) against the truth and against KDEs of draws.

On a 4-d three-peak Gaussian mixture, the funnel (d = 5) and a small Bayesian neural network,
each method's one-coordinate marginals are compared with the true ones by total-variation
distance on a grid: for nn4post both its analytic marginal (eq. 5-6: the same mixture with the
other coordinates dropped, no sampling) and a Gaussian KDE of its draws; for NUTS and
importance sampling a KDE of theirs (every method gets 4,000 draws, 2,000 in the quick mode, which runs one seed
of the BNN). The truth is exact for the mixture and
the funnel, and a KDE of a long NUTS run for the BNN. Then the paper's transfer argument
(sec. 5): the fitted q's marginal on two of the mixture's coordinates, reused as the
importance-sampling proposal for the exact two-coordinate marginal, against the default
proposal (a wide Student-t) on the same problem.

    python studies/marginalization.py [--quick]
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workbench.study import Cell, Figure, Page, Study, main_for
from workbench.study.style import method_colours, method_style

TARGETS = [
    ("mixture d=4", {"factory": "gaussian_mixture", "dim": 4, "n_components": 3, "weights": [0.2, 0.3, 0.5],
                     "means": [-4.0, 0.0, 4.0], "scales": [0.8, 1.0, 1.2]}),
    ("funnel d=5", {"factory": "funnel", "dim": 5}),
    ("BNN", {"factory": "bnn", "n_data": 40, "widths": [5]}),
]
NN4POST = {  # per target: a fit that finds every peak (a box covering them, restarts ranked by ELBO)
    "mixture d=4": {"n_components": 8, "steps": 4000},
    # the funnel's mode lies deep in its neck (v = -18), a poor start for VI: the paper's box
    "funnel d=5": {"n_components": 8, "steps": 4000, "init": "box"},
    "BNN": {"n_components": 4, "steps": 10_000, "lr_final": 0.01},
}


def grid(quick: bool) -> list[Cell]:
    seeds = (0, 1) if quick else (0, 1, 2, 3, 4)
    draws = 2000 if quick else 4000
    quiet = {"progress": False}
    cells = []
    for label, spec in TARGETS:
        extra = ("marginal_transfer" if label.startswith("mixture") else "marginal_accuracy")
        methods = [
            ("NN4Post", {"method": "NN4Post", "draws": draws, "converge_tol": 0, **NN4POST[label], **quiet}, extra),
            ("NUTS", {"method": "NUTS", "chains": 4, "warmup": 300 if quick else 1000, "draws": draws // 4, **quiet},
             "marginal_accuracy"),
            ("IS", {"method": "ImportanceSampling", "n": draws}, "marginal_accuracy"),
        ]
        # the BNN's runs are the study's costly ones (NUTS builds trees of depth 9-10 there, about
        # 10 s a run): one seed of it in the quick grid
        for seed in seeds[:1] if quick and label == "BNN" else seeds:
            for name, method, fn in methods:
                cells.append(Cell(spec, method, seed, keep=3, extra=fn, labels={"target": label, "method": name}))
    return cells


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Median over seeds of the marginal TV distances: KDE of the draws, and nn4post's analytic one."""
    ok = table[table["status"] == "ok"]
    return (ok.groupby(["target", "method"], sort=False)[["tv_kde", "tv_analytic"]].median().reset_index())


TRANSFER_COLS = ["transfer_q_marginal_ess_frac", "transfer_q_marginal_khat", "transfer_q_marginal_w1",
                 "transfer_default_ess_frac", "transfer_default_khat", "transfer_default_w1"]


def transfer(table: pd.DataFrame) -> pd.DataFrame:
    ok = table[(table["status"] == "ok") & table.get("transfer_q_marginal_ess_frac", pd.Series(dtype=float)).notna()]
    return ok[["target", "seed", "tv_analytic", *TRANSFER_COLS]].reset_index(drop=True)


def finding(table: pd.DataFrame) -> str:
    s = summary(table).set_index(["target", "method"])
    parts = []
    for label, _ in TARGETS:
        if (label, "NN4Post") not in s.index or label == "BNN":
            continue
        n = s.loc[(label, "NN4Post")]
        others = ", ".join(f"{m} KDE {s.loc[(label, m), 'tv_kde']:.3f}" for m in ("NUTS", "IS") if (label, m) in s.index)
        parts.append(f"{label}: nn4post analytic {n['tv_analytic']:.3f} (KDE of its draws {n['tv_kde']:.3f}), {others}")
    text = "Median total-variation distance of the one-coordinate marginals to the truth: " + "; ".join(parts)
    if ("BNN", "NN4Post") in s.index:
        text += (". The BNN's rows are shown for the record and are not meaningful: its weights are not identified "
                 "(permuting hidden units or flipping a unit's signs leaves the likelihood unchanged), so a weight's "
                 "marginal has several equivalent modes and a distance to one run's marginal measures the labelling; "
                 "the accuracy study scores the BNN on what it identifies, its outputs and held-out log density")
    tr = transfer(table)
    if len(tr):
        m = tr[TRANSFER_COLS].median()
        text += (f". Transfer: q's two-coordinate marginal as importance proposal for the exact marginal gives ESS "
                 f"fraction {m['transfer_q_marginal_ess_frac']:.2f} (k-hat {m['transfer_q_marginal_khat']:.2f}, "
                 f"W1 {m['transfer_q_marginal_w1']:.3f} sd) against {m['transfer_default_ess_frac']:.2f} (k-hat "
                 f"{m['transfer_default_khat']:.2f}, W1 {m['transfer_default_w1']:.3f} sd) for the default Student-t "
                 f"(medians over {len(tr)} fits)")
    return text + "."


def _density_figure(run, label: str, folder) -> str:
    t = run.table
    idx = [i for i in t.index[(t["target"] == label) & (t["status"] == "ok")] if t.loc[i, "seed"] == t["seed"].min()]
    arrays = {t.loc[i, "method"]: run.arrays(i) for i in idx}
    arrays = {m: a for m, a in arrays.items() if "grid" in a}
    if not arrays:
        return ""
    first = next(iter(arrays.values()))
    k_max = first["grid"].shape[0]
    colours = method_colours(arrays)
    fig, axes = plt.subplots(1, k_max, figsize=(4.0 * k_max, 3.3), squeeze=False)
    for k, ax in enumerate(axes[0]):
        ax.plot(first["grid"][k], first["pdf_truth"][k], "k-", lw=2.2, alpha=0.5,
                label="truth" if label != "BNN" else "reference (KDE of long NUTS)")
        for method, a in arrays.items():
            c = colours[method]
            if "pdf_analytic" in a:
                ax.plot(a["grid"][k], a["pdf_analytic"][k], "-", color=c, lw=1.3, label=f"{method}: analytic (eq. 6)")
            ax.plot(a["grid"][k], a["pdf_kde"][k], "--", color=c, lw=1, label=f"{method}: KDE of draws")
        ax.set_title(f"coordinate {k}", fontsize=9)
        ax.set_yticks([])
    axes[0][0].legend(fontsize=6)
    fig.suptitle(label, fontsize=10)
    fig.tight_layout()
    file = "marginals_" + label.split()[0].lower() + ".png"
    fig.savefig(folder / file, dpi=85)
    plt.close(fig)
    return file


def _tv_figure(table: pd.DataFrame, folder) -> str:
    s = summary(table)
    labels = [label for label, _ in TARGETS if label in set(s["target"])]
    bars = [("NN4Post", "tv_analytic", "nn4post analytic"), ("NN4Post", "tv_kde", "nn4post KDE"),
            ("NUTS", "tv_kde", "NUTS KDE"), ("IS", "tv_kde", "IS KDE")]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    width = 0.8 / len(bars)
    for j, (method, col, name) in enumerate(bars):
        vals = [s[(s["target"] == t) & (s["method"] == method)][col].median() for t in labels]
        # each method in its colour on every figure; q's KDE hatched apart from its analytic marginal
        ax.bar(np.arange(len(labels)) + j * width, vals, width, label=name, color=method_style(method).colour,
               hatch="//" if name == "nn4post KDE" else None, edgecolor="white" if name == "nn4post KDE" else None)
    ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2, labels)
    ax.set_ylabel("marginal TV distance (median)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(folder / "tv.png", dpi=90)
    plt.close(fig)
    return "tv.png"


def report(run, folder) -> Page:
    figures = [Figure(_tv_figure(run.table, folder),
                      "Total-variation distance between each method's one-coordinate marginals and the truth (mean over "
                      "the first three coordinates, median over seeds).")]
    for label, _ in TARGETS:
        file = _density_figure(run, label, folder)
        if file:
            figures.append(Figure(file, f"{label}: marginal densities of the first seed's runs. Solid: the truth and "
                                  "nn4post's analytic marginal; dashed: KDEs of the draws."))
    return Page(finding=finding(run.table), figures=figures,
                tables=[("Marginal TV distance (median over seeds)", summary(run.table)),
                        ("Transfer: q's marginal as the proposal for the exact marginal", transfer(run.table))],
                notes=["TV = half the integral of |p - p_hat| on a 200-point grid over the truth's 0.5%-99.5% range "
                       "(widened by 10%). KDEs are scipy's gaussian_kde (Scott's bandwidth), weighted for IS; importance "
                       "weights in effect on one draw (Kish ESS < 2) are a point mass, TV 1.",
                       "The transfer uses coordinates 0 and 1; k-hat is the Pareto diagnostic of the importance "
                       "weights (above 0.7: the proposal's tails are too light for reliable estimates)."])


STUDY = Study(name="marginalization", title="Marginalisation: analytic mixture marginals against draws", grid=grid,
              report=report, description=__doc__.split("\n\n")[1].replace("\n", " "))

main = main_for(STUDY)

if __name__ == "__main__":
    raise SystemExit(main())
