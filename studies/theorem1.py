"""Theorem 1 measured: the relative error of the predictive mean against the loss.

The nn4post paper's Theorem 1 (sec. 2.5) states delta<f>/<f>(x) ~ L: the relative error of
q's predictive mean <f>_q(x) = E_q[f(x; theta)] is of the order of the loss. Here both sides
are measured along training (fits of 30 to 10,000 iterations, each decaying Adam's rate from
0.05 to 0.0005 over its own length: a constant rate leaves Adam jittering about the optimum
by about its step) and across N_c, on the
conjugate linear regression (f = x . theta; exact posterior and evidence) and on a small
Bayesian neural network (f = the network's output; a long NUTS run stands in for the
posterior). The left side is ||<f> - <f>_q|| / ||<f>|| over the inputs (the data rows for
the regression, a grid over the data's range for the BNN). The loss is KL(q||p) =
E_q[log q - log p] + log Z, from 4,000 fresh draws of q; log Z is exact for the regression
and, for the BNN, the importance-sampling estimate with the best fit's q as proposal.

    python studies/theorem1.py [--quick]
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workbench.study import Cell, Figure, Page, Study, main_for
from workbench.study.analysis import loglog_slope

EXTRA = "theorem1_quantities"
TARGETS = [
    ("linear regression", {"factory": "linear_regression", "dataset": "synthetic", "n_data": 200, "dim": 5,
                           "noise_sd": 1.0, "prior_sd": 10.0, "seed": 0}),
    ("BNN", {"factory": "bnn", "n_data": 40, "widths": [5]}),
]


def grid(quick: bool) -> list[Cell]:
    steps = (30, 100, 300, 1000, 3000, 10_000)
    components = (1, 2, 4) if quick else (1, 2, 4, 8)
    seeds = (0,) if quick else (0, 1, 2)
    cells = []
    for label, spec in TARGETS:
        for n_c in components:
            for n in steps:
                # the paper's box start: the study follows the loss along training from far away
                method = {"method": "NN4Post", "n_components": n_c, "steps": n, "learning_rate": 0.05,
                          "lr_final": 0.01, "converge_tol": 0, "draws": 200, "init": "box",
                          "adapt_components": False, "progress": False}
                for seed in seeds:
                    cells.append(Cell(spec, method, seed, extra=EXTRA, labels={
                        "target": label, "method": f"N_c = {n_c}", "n_components": n_c, "iterations": n}))
    return cells


def with_kl(table: pd.DataFrame) -> pd.DataFrame:
    """The ok cells with ``loss`` = KL(q||p): exact where the target's evidence is known (the
    ``kl`` column), else neg_elbo + the importance-sampling log Z of the fit with the lowest
    neg_elbo on that target (``log_z_source`` says which)."""
    t = table[table["status"] == "ok"].copy()
    t["loss"] = t["kl"]
    t["log_z_source"] = "exact"
    for _, g in t.groupby("target"):
        if g["kl"].notna().all():
            continue
        best = g.loc[g["neg_elbo"].idxmin()]
        t.loc[g.index, "loss"] = g["neg_elbo"] + best["log_z_is"]
        t.loc[g.index, "log_z_source"] = f"IS with the best q (k-hat {best['log_z_is_khat']:.2f})"
    return t


def slopes(table: pd.DataFrame) -> pd.DataFrame:
    """log(relative error) against log(loss), per target (all iterations and N_c together)."""
    t = with_kl(table)
    rows = []
    for target, g in t.groupby("target", sort=False):
        ok = g[(g["loss"] > 0) & (g["rel_error"] > 0)]
        if len(ok) < 2:
            continue
        fit = loglog_slope(ok["loss"], ok["rel_error"])
        rows.append({"target": target, "slope": fit.slope, "stderr": fit.stderr, "points": fit.n,
                     "rel_error / loss (median)": float(np.median(ok["rel_error"] / ok["loss"])),
                     "loss at the end (min)": float(ok["loss"].min()),
                     "rel_error at the end (min)": float(ok["rel_error"].min())})
    return pd.DataFrame(rows)


def finding(table: pd.DataFrame) -> str:
    s = slopes(table)
    if s.empty:
        return "No cells finished."
    parts = [f"on the {r.target}, relative error ~ loss^{r.slope:.2f} +- {r.stderr:.2f} over {r.points} fits "
             f"(median ratio relative error / loss {r['rel_error / loss (median)']:.2g}; the best fit reaches loss "
             f"{r['loss at the end (min)']:.2g} and relative error {r['rel_error at the end (min)']:.2g})"
             for _, r in s.iterrows()]
    return ("Theorem 1 predicts relative error ~ loss (slope 1): measured along training and across N_c, "
            + "; ".join(parts) + ". A slope below 1 means the error falls more slowly than the loss (a mean offset "
            "delta costs only delta^2 / 2 in KL, so error ~ sqrt(loss) near the optimum).")


def _scatter(t: pd.DataFrame, folder) -> str:
    targets = list(dict.fromkeys(t["target"]))
    fig, axes = plt.subplots(1, len(targets), figsize=(4.8 * len(targets), 3.9), squeeze=False)
    for ax, target in zip(axes[0], targets):
        g = t[(t["target"] == target) & (t["loss"] > 0)]
        for (n_c, h), colour in zip(g.groupby("n_components"), plt.cm.viridis(np.linspace(0, 0.85, 4))):
            h = h.sort_values("iterations")
            ax.plot(h["loss"], h["rel_error"], "o-", color=colour, ms=4, lw=0.8, label=f"N_c = {int(n_c)}")
        if len(g) >= 2:
            x = np.geomspace(g["loss"].min(), g["loss"].max(), 20)
            mid = np.median(g["rel_error"] / g["loss"])
            ax.plot(x, mid * x, "k:", lw=1, label="slope 1 (Theorem 1)")
            mid_half = np.median(g["rel_error"] / np.sqrt(g["loss"]))
            ax.plot(x, mid_half * np.sqrt(x), "k--", lw=0.7, label="slope 1/2")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("loss = KL(q||p)")
        ax.set_ylabel("relative error of <f>")
        ax.set_title(target, fontsize=10)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(folder / "error_vs_loss.png", dpi=90)
    plt.close(fig)
    return "error_vs_loss.png"


def _training(t: pd.DataFrame, folder) -> str:
    targets = list(dict.fromkeys(t["target"]))
    fig, axes = plt.subplots(2, len(targets), figsize=(4.8 * len(targets), 6.4), squeeze=False)
    for j, target in enumerate(targets):
        g = t[t["target"] == target]
        for (n_c, h), colour in zip(g.groupby("n_components"), plt.cm.viridis(np.linspace(0, 0.85, 4))):
            m = h.groupby("iterations")[["loss", "rel_error"]].median()
            axes[0][j].plot(m.index, np.maximum(m["loss"], 1e-6), "o-", color=colour, label=f"N_c = {int(n_c)}")
            axes[1][j].plot(m.index, m["rel_error"], "o-", color=colour)
        axes[0][j].set_title(target, fontsize=10)
        axes[0][j].set_ylabel("loss = KL(q||p)")
        axes[1][j].set_ylabel("relative error of <f>")
        for ax in axes[:, j]:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("iterations")
            ax.grid(alpha=0.3, which="both")
        axes[0][j].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(folder / "training.png", dpi=90)
    plt.close(fig)
    return "training.png"


def report(run, folder) -> Page:
    t = with_kl(run.table)
    cols = ["target", "method", "iterations", "seed", "neg_elbo", "neg_elbo_se", "loss", "log_z_source", "rel_error",
            "log_z_is", "log_z_is_khat", "grad_evals"]
    return Page(
        finding=finding(run.table),
        figures=[
            Figure(_scatter(t, folder), "Relative error of the predictive mean against the loss, each point one fit "
                   "(lines join the same N_c along training), with slope-1 (Theorem 1) and slope-1/2 guides."),
            Figure(_training(t, folder), "Loss and relative error against iterations, per N_c (median over seeds)."),
        ],
        tables=[("Fitted slope of log relative error against log loss", slopes(run.table)),
                ("Every fit", t[[c for c in cols if c in t]])],
        notes=["Near q = p the theorem's step ln(p/q) ~ p/q - 1 holds, but the sign of p/q - 1 varies over theta, "
               "so E_q[f (p/q - 1)] need not be of the order of E_q[ln(p/q)]: that is what the slope measures.",
               "For the BNN, <f> averages the network's output over the reference NUTS draws (the network's weight "
               "symmetries do not change <f>); log Z comes from importance sampling with the best q as proposal. Its "
               "Pareto k-hat is above 0.7, so that log Z is likely an underestimate and the BNN's losses are lower "
               "bounds, all shifted by the same constant: the slope is unaffected."],
    )


STUDY = Study(name="theorem1", title="Theorem 1: relative error of the predictive mean against the loss", grid=grid,
              report=report, description=__doc__.split("\n\n")[1].replace("\n", " "))

main = main_for(STUDY)

if __name__ == "__main__":
    raise SystemExit(main())
