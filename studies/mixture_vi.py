"""Mixture VI: NN4Post against GMMVI, the best Gaussian-mixture VI, on multimodal targets.

NN4Post (the source documents' mixture VI, from its defaults and with the paper's own options:
the box start, a constant learning rate, no component adaptation), GMMVI (Arenz et al. 2023,
SAMTRON at the authors' defaults), MeanFieldVI, FullRankVI and SMC at equal gradient budgets
on GMMVI's own benchmarks (GMM20 and GMM100: ten full-covariance Gaussians in 20 and 100
dimensions; STM20: ten Student-t's with 2 degrees of freedom in 20), the nn4post paper's
three-peak benchmark (weights 0.05, 0.25, 0.70 at -3, 0, +3 times the all-ones vector, scales
ln 2) at N_d = 100 and 10,000 (there GMMVI with diagonal components), and the bundled BNN. Scores: every mode's weight
error (draws
assigned to their most responsible component), the sliced Wasserstein distance to exact draws,
the ELBO and importance-sampling evidence (the targets are normalised: KL = -ELBO), per
gradient and per second. The quick version runs the three-peak benchmark at N_d = 10 and a
five-component 10-d version of GMM20 at 3 x 10^4 gradients, one seed, without SMC (whose
default needs 1.28 x 10^5 gradients) and the paper-options NN4Post.

    python studies/mixture_vi.py [--quick]
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workbench.study import Cell, Figure, Page, Study, main_for
from workbench.study.style import method_colours

LN2 = math.log(2.0)
GOAL_WEIGHT_ERR = 0.03  # "found every component": every weight within 0.03
VI_DRAWS = 4000
METHODS = {  # label -> spec
    "NN4Post": {"method": "NN4Post"},
    "NN4Post (paper)": {"method": "NN4Post", "init": "box", "adapt_components": False, "lr_final": 1.0},
    "GMMVI": {"method": "GMMVI"},
    "MeanFieldVI": {"method": "MeanFieldVI"},
    "FullRankVI": {"method": "FullRankVI"},
    "SMC": {"method": "SMC"},
}
VI = ("NN4Post", "NN4Post (paper)", "GMMVI", "MeanFieldVI", "FullRankVI")
FULL_COVARIANCE_MAX_DIM = 1000  # above, GMMVI runs with diagonal components (the authors' option)
LARGE_DATABASE = 20_000  # ... and keeps 2 x 10^4 draws for its adding rule, not 10^5
# and FullRankVI is left out: its natural-gradient step costs O(d^3) (56 s for 3,000 gradients at
# d = 1,000 on this project's 2-core machines, so hours per 1,000 gradients at 10,000)


def three_peaks(dim: int) -> dict:
    return {"factory": "gaussian_mixture", "dim": dim, "n_components": 3, "weights": [0.05, 0.25, 0.70],
            "means": [[-3.0] * dim, [0.0] * dim, [3.0] * dim], "scales": [[LN2] * dim] * 3}


def targets(quick: bool) -> dict:
    if quick:
        return {"three peaks N_d=10": three_peaks(10),
                "GMM10 (5 components)": {"factory": "dense_mixture", "dim": 10, "n_components": 5, "seed": 0}}
    return {"GMM20": {"factory": "dense_mixture", "dim": 20, "seed": 0},
            "GMM100": {"factory": "dense_mixture", "dim": 100, "seed": 0},
            "STM20": {"factory": "dense_mixture", "dim": 20, "family": "student_t", "seed": 0},
            "three peaks N_d=100": three_peaks(100),
            "three peaks N_d=10,000": three_peaks(10_000),
            "BNN": {"factory": "bnn"}}


def grid(quick: bool) -> list[Cell]:
    budgets = (30_000,) if quick else (100_000, 300_000, 1_000_000)
    seeds = (0,) if quick else (0, 1)
    cells = []
    for tname, target in targets(quick).items():
        for label, spec in METHODS.items():
            if quick and label in ("NN4Post (paper)", "SMC"):  # SMC's default needs >= 128,000 gradients
                continue
            method = {**spec, "progress": False}
            if label == "FullRankVI" and target.get("dim", 0) > FULL_COVARIANCE_MAX_DIM:
                continue
            if label == "GMMVI" and target.get("dim", 0) > FULL_COVARIANCE_MAX_DIM:
                method["covariance"] = "diag"  # full covariances at N_d = 10,000 would need 83 GB
                # and the adding rule's archive of 10^5 draws (the authors' default) 8 GB: with it the
                # run was refused on a 24 GB machine (19.4 GB sized at 20 components)
                method["database_size"] = LARGE_DATABASE
            if label in VI:
                method["draws"] = VI_DRAWS
            for budget in budgets:
                for seed in seeds:
                    cells.append(Cell(target, method, seed, budget,
                                      extra="vi_ablation" if label in VI else "",
                                      labels={"target": tname, "method": label, "budget": budget}))
    return cells


# ---------------------------------------------------------------------------- analysis


def weight_error(table: pd.DataFrame) -> pd.Series:
    """The largest mode-weight error of each row: from q's own draws (VI) or the method's draws."""
    own = table["weight_err_max"] if "weight_err_max" in table else pd.Series(np.nan, index=table.index)
    return own.fillna(table.get("mode_weight_err_max", pd.Series(np.nan, index=table.index)))


def summary(run) -> pd.DataFrame:
    """Per target, method and budget (medians over seeds): the largest weight error, the sliced
    Wasserstein distance (in the target's sds), KL = -ELBO, wall seconds, gradients."""
    t = run.table[run.table["status"] == "ok"].copy()
    if t.empty:
        return pd.DataFrame()
    t["weight_err"] = weight_error(t)
    for col in ("sliced_w1", "kl", "log_z_is", "wall_seconds", "grad_evals"):
        if col not in t:
            t[col] = np.nan
    g = t.groupby(["target", "method", "budget"], sort=False)
    out = g.agg(weight_err=("weight_err", "median"), weight_err_worst=("weight_err", "max"),
                sliced_w1=("sliced_w1", "median"), kl=("kl", "median"), log_z_is=("log_z_is", "median"),
                wall_seconds=("wall_seconds", "median"), grad_evals=("grad_evals", "median"), seeds=("seed", "count"))
    return out.reset_index()


def gradients_to_goal(run) -> pd.DataFrame:
    """Per target and method: the smallest budget at which every seed has every weight within
    ``GOAL_WEIGHT_ERR`` (NaN: none of the budgets), with the gradients the runs spent there."""
    s = summary(run)
    rows = []
    for (target, method), g in s.groupby(["target", "method"], sort=False):
        ok = g[g["weight_err_worst"] <= GOAL_WEIGHT_ERR].sort_values("budget")
        rows.append({"target": target, "method": method,
                     "budget_to_goal": float(ok["budget"].iloc[0]) if len(ok) else math.nan,
                     "gradients_spent": float(ok["grad_evals"].iloc[0]) if len(ok) else math.nan,
                     "weight_err_at_largest_budget": float(g.sort_values("budget")["weight_err"].iloc[-1]),
                     "kl_at_largest_budget": float(g.sort_values("budget")["kl"].iloc[-1]),
                     "sliced_w1_at_largest_budget": float(g.sort_values("budget")["sliced_w1"].iloc[-1])})
    return pd.DataFrame(rows)


def _reached(row) -> str:
    """Where a method first had every weight within the goal: "at 3e4 gradients" or "at no budget"."""
    x = row["budget_to_goal"]
    return "at no budget" if not np.isfinite(x) else "at " + f"{x:.0e}".replace("e+0", "e") + " gradients"


def finding(run) -> str:
    goal = gradients_to_goal(run)
    if goal.empty:
        return "No cells finished."
    parts = []
    for target, g in goal.groupby("target", sort=False):
        v = g.set_index("method")
        if "GMMVI" not in v.index or "NN4Post" not in v.index:
            continue
        gm, nn = v.loc["GMMVI"], v.loc["NN4Post"]
        if not (np.isfinite(gm["weight_err_at_largest_budget"]) or np.isfinite(nn["weight_err_at_largest_budget"])):
            w1 = v["sliced_w1_at_largest_budget"].dropna().sort_values()
            parts.append(f"on {target} (no modes to weigh) the sliced W1 to the reference at the largest budget is "
                         + ", ".join(f"{m} {x:.2f}" for m, x in w1.items()))
            continue
        if np.isfinite(gm["budget_to_goal"]) and np.isfinite(nn["budget_to_goal"]):
            ratio = nn["gradients_spent"] / gm["gradients_spent"]
            verdict = ("level with" if 0.5 <= ratio <= 2 else "ahead of" if ratio < 0.5 else "behind")
            parts.append(f"on {target} NN4Post is {verdict} GMMVI (every weight within {GOAL_WEIGHT_ERR} at "
                         f"{nn['gradients_spent']:.3g} against {gm['gradients_spent']:.3g} gradients)")
        else:
            parts.append(f"on {target} the largest weight error at the largest budget is NN4Post "
                         f"{nn['weight_err_at_largest_budget']:.3f}, GMMVI {gm['weight_err_at_largest_budget']:.3f}, "
                         # (max with 0: a KL of 0 comes out as about -1e-15)
                         f"KL {max(nn['kl_at_largest_budget'], 0.0):.2g} against {max(gm['kl_at_largest_budget'], 0.0):.2g} "
                         f"(every weight within {GOAL_WEIGHT_ERR}: NN4Post {_reached(nn)}, GMMVI {_reached(gm)})")
    mixtures = goal[~goal["target"].str.startswith("three peaks")].set_index(["target", "method"])["kl_at_largest_budget"]
    behind = [t for t in dict.fromkeys(goal["target"]) if (t, "NN4Post") in mixtures and (t, "GMMVI") in mixtures
              and mixtures[(t, "NN4Post")] > 2 * mixtures[(t, "GMMVI")] + 0.1]
    if behind:
        parts.append(f"on {', '.join(behind)} NN4Post is behind because its components are diagonal (each one "
                     "pays the KL of its mode's correlations) and, at its default of five, fewer than the modes; "
                     "GMMVI's are full and it adds one every 30 iterations")
    peaks = goal[goal["target"].str.startswith("three peaks") & (goal["method"] == "GMMVI")]
    missed = peaks[peaks["weight_err_at_largest_budget"] >= 0.25]  # the 0.25 or the 0.70 peak is missing
    if len(missed):
        parts.append(f"on {', '.join(missed['target'])} GMMVI misses peaks (largest weight error "
                     f"{missed['weight_err_at_largest_budget'].max():.2f}): each new component starts at a stored "
                     "draw of q, and every draw of a q that starts on the middle peak lies nearer it than the outer "
                     "peaks, 3 sqrt(N_d) away; NN4Post's mode search starts its ascents out to sqrt(N_d) and finds them")
    single = goal[goal["method"].isin(["MeanFieldVI", "FullRankVI"])]
    if len(single):
        parts.append("a single Gaussian cannot: MeanFieldVI and FullRankVI end at a largest weight error of "
                     f"{single['weight_err_at_largest_budget'].min():.2f} or more")
    return "Mixture VI: " + "; ".join(parts) + "." if parts else "No target had both NN4Post and GMMVI finished."


# ---------------------------------------------------------------------------- figures


def _panels(run, folder, column: str, ylabel: str, file: str, log: bool = True) -> str:
    s = summary(run)
    # a target with no value of the column has no panel (the BNN has no modes to weigh)
    names = [n for n in dict.fromkeys(s["target"]) if np.isfinite(s.loc[s["target"] == n, column].to_numpy(float)).any()]
    if not names:
        names = list(dict.fromkeys(s["target"]))[:1]
    colours = method_colours(list(METHODS))
    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.0 * nrows + 0.5), squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, names):
        sub = s[s["target"] == name]
        for method, g in sub.groupby("method", sort=False):
            g = g.sort_values("budget")
            y = g[column].to_numpy(float)
            if log:
                y = np.maximum(y, 1e-4)
            # the paper-options NN4Post shares NN4Post's colour: dashed, so the two can be told apart
            ax.plot(g["budget"], y, "o--" if "(paper)" in method else "o-", color=colours[method], label=method,
                    lw=1.2, ms=4)
        if column == "weight_err":
            ax.axhline(GOAL_WEIGHT_ERR, color="k", ls=":", lw=0.8)
        ax.set_xscale("log")
        if log and np.any(np.isfinite(sub[column].to_numpy(float))):
            ax.set_yscale("log")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("gradient budget")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel(ylabel)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.5 / (3.0 * nrows + 0.5), 1, 1))
    fig.savefig(folder / file, dpi=85)
    plt.close(fig)
    return file


def report(run, folder) -> Page:
    figures = [
        Figure(_panels(run, folder, "weight_err", "largest mode-weight error", "weight_error.png"),
               f"Largest mode-weight error against the gradient budget (median over seeds; dotted: {GOAL_WEIGHT_ERR}). "
               "A single Gaussian sits on one mode: its error is one minus that mode's weight."),
        Figure(_panels(run, folder, "sliced_w1", "sliced W1 to exact draws (sds)", "sliced_wasserstein.png"),
               "Sliced Wasserstein distance between each method's draws and exact draws, in the target's sds."),
    ]
    return Page(finding=finding(run), figures=figures,
                tables=[("Gradients to every weight within 0.03 (smallest budget where every seed is)", gradients_to_goal(run)),
                        ("Per target, method and budget (medians over seeds)", summary(run))],
                notes=["KL = -ELBO from 4,000 fresh draws of q (the targets are normalised); log_z_is is the "
                       "importance-sampling estimate of log Z = 0 with q as proposal.",
                       f"Above N_d = {FULL_COVARIANCE_MAX_DIM:,} GMMVI runs with diagonal components (covariance='diag', "
                       "the authors' use_diagonal_covs): full covariances at N_d = 10,000 would need 83 GB; its adding rule "
                       f"keeps {LARGE_DATABASE:,} draws there, not the authors' 10^5 (8 GB). FullRankVI "
                       "is not run there: its step costs O(d^3) (56 s for 3,000 gradients at d = 1,000).",
                       "GMMVI's iterations reuse stored draws: once its components settle it spends about one "
                       "gradient per component an iteration, so at a large budget it may stop at its iteration "
                       "cap with gradients left (the gradient column says what it spent)."])


STUDY = Study(name="mixture_vi", title="Mixture VI: NN4Post against GMMVI on multimodal targets", grid=grid,
              report=report, description=__doc__.split("\n\n")[1].replace("\n", " "))

main = main_for(STUDY)

if __name__ == "__main__":
    raise SystemExit(main())
