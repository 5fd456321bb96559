"""Mini-batches and the N_D/N_m factor: posterior sds of mini-batch VI against the exact posterior.

Mean-field VI (nn4post with N_c = 1) on the conjugate linear regression (200 synthetic rows,
3 coefficients, a wide prior), with mini-batches of N_m rows, once with the likelihood
scaled by N_D / N_m (nn4post sec. 3.4.1, eq. 18-20) and once without. With the factor the
fitted sds should match the mean-field optimum at every batch size (1 / sqrt((Sigma^-1)_jj),
the best any mean-field q can do against the exact posterior); without it the batch is
treated as the whole data set, so the sds come out about sqrt(N_D / N_m) times too wide.

    python studies/minibatch.py [--quick]
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workbench.study import Cell, Figure, Page, Study, main_for
from workbench.study.analysis import loglog_slope

N_DATA = 200
TARGET = {"factory": "linear_regression", "dataset": "synthetic", "n_data": N_DATA, "dim": 3, "noise_sd": 1.0,
          "prior_sd": 10.0, "seed": 0}


def grid(quick: bool) -> list[Cell]:
    batches = (10, 20, 40, 200) if quick else (5, 10, 20, 40, 100, 200)
    seeds = (0,) if quick else (0, 1, 2)
    cells = []
    for b in batches:
        for factor in (True, False):
            if b == N_DATA and not factor:
                continue  # the full batch has no factor to drop
            method = {"method": "MeanFieldVI", "steps": 6000, "batch_size": b, "batch_factor": factor,
                      "learning_rate": 0.01, "lr_final": 0.05, "converge_tol": 0, "progress": False}
            for seed in seeds:
                cells.append(Cell(TARGET, method, seed, labels={"method": "with N_D/N_m" if factor else "without",
                                                                 "batch": b, "N_D/N_m": N_DATA / b},
                                  extra="posterior_sd_ratios"))
    return cells


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    ok = table[table["status"] == "ok"]
    return (ok.groupby(["method", "batch", "N_D/N_m"], sort=False)[["sd_ratio_mean_field", "sd_ratio_exact"]]
            .median().reset_index().sort_values(["method", "batch"]))


def finding(table: pd.DataFrame) -> str:
    s = summarise(table)
    with_f = s[s["method"] == "with N_D/N_m"]
    without = s[s["method"] == "without"]
    worst = float(np.max(np.abs(with_f["sd_ratio_mean_field"] - 1))) if len(with_f) else np.nan
    slope = loglog_slope(without["N_D/N_m"], without["sd_ratio_mean_field"]) if len(without) >= 2 else None
    text = (f"With the N_D/N_m factor the mini-batch sds are within {100 * worst:.0f}% of the mean-field optimum "
            f"at every batch size ({', '.join(str(b) for b in with_f['batch'])} of {N_DATA} rows)")
    if slope is not None:
        text += (f"; without it they are too wide by (N_D/N_m)^{slope.slope:.2f} +- {slope.stderr:.2f} "
                 f"(theory: 0.5), e.g. x{without['sd_ratio_mean_field'].max():.1f} at N_m = {int(without['batch'].min())}.")
    return text


def report(run, folder) -> Page:
    s = summarise(run.table)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for method, marker in (("with N_D/N_m", "o"), ("without", "s")):
        g = s[s["method"] == method]
        ax.plot(g["N_D/N_m"], g["sd_ratio_mean_field"], marker + "-", label=f"mean-field VI, {method}")
    x = np.geomspace(1, s["N_D/N_m"].max(), 50)
    ax.plot(x, np.sqrt(x), "k:", label="sqrt(N_D / N_m)")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N_D / N_m")
    ax.set_ylabel("fitted sd / mean-field optimum sd")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(folder / "sd_ratio.png", dpi=90)
    plt.close(fig)
    n_seeds = run.table["seed"].nunique()
    over = "coordinates and seeds" if n_seeds > 1 else "coordinates; one seed"
    return Page(
        finding=finding(run.table),
        figures=[Figure("sd_ratio.png", f"Fitted posterior sd over the mean-field optimum's (median over {over}) "
                        "against N_D / N_m; the dotted line is the sqrt(N_D / N_m) that dropping the factor predicts.")],
        tables=[("Median over seeds" if n_seeds > 1 else "One seed", s)],
        notes=["sd_ratio_exact compares with the exact posterior's marginal sds instead: mean-field VI underestimates "
               "them whenever the posterior is correlated, with or without mini-batches."],
    )


STUDY = Study(name="minibatch", title="Mini-batches need the N_D/N_m factor", grid=grid, report=report,
              description=__doc__.split("\n\n")[1].replace("\n", " "))

main = main_for(STUDY)

if __name__ == "__main__":
    raise SystemExit(main())
