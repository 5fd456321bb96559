"""The calibration's report page: ArviZ's PIT-ECDF plots per method (and their coverage form),
the p-values, the cost per fit, how many fits were unhealthy, the test's power, the finding."""

from __future__ import annotations

import math
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..metrics.calibration import LOG_LIK
from ..study.report import Figure, Page

PANELS = 6  # quantities shown per method: the flagged first, then log_lik, then the smallest p-values
TABLE_QUANTITIES = 24  # p-value rows shown on the page (all in p_values.csv)


def shown_quantities(result, method: str) -> list[str]:
    """The quantities a method's figure shows: flagged ones, ``log_lik``, then the smallest p."""
    p = result.p_values.loc[method].dropna().sort_values()
    chosen = list(result.flagged.get(method, []))[:PANELS]
    if LOG_LIK in p.index and LOG_LIK not in chosen and len(chosen) < PANELS:
        chosen.append(LOG_LIK)
    for name in p.index:
        if len(chosen) >= PANELS:
            break
        if name not in chosen:
            chosen.append(name)
    return chosen


def _pit_tree(result, method: str, names: list[str]):
    import arviz as az

    idx = [list(result.quantities).index(n) for n in names]
    values = result.pit[method][:, idx]
    values = values[np.all(np.isfinite(values), axis=1)]
    return az.from_dict({"prior_sbc": {method: values[None]}}, dims={method: ["quantity"]},
                        coords={"quantity": names})


def pit_figure(result, method: str, folder, coverage: bool = False, prefix: str = "") -> str | None:
    """ArviZ's PIT-ECDF (``arviz_plots.plot_ecdf_pit``) of a method's shown quantities, or its
    coverage form; the file name, or None when the method has too few fits."""
    import arviz_plots as azp

    names = shown_quantities(result, method)
    if not names or np.sum(np.all(np.isfinite(result.pit[method]), axis=1)) < 10:
        return None
    tree = _pit_tree(result, method, names)
    pc = azp.plot_ecdf_pit(tree, coverage=coverage, col_wrap=3,
                           figure_kwargs={"figsize": (10.0, 3.2 * math.ceil(len(names) / 3))})
    file = f"{prefix}{'coverage' if coverage else 'pit'}_{_slug(method)}.png"
    fig = pc.viz["figure"].item()
    flagged = result.flagged.get(method)
    fig.suptitle(f"{method}: {'coverage of central intervals' if coverage else 'PIT ECDF'} "
                 f"({'flagged: ' + ', '.join(flagged[:3]) if flagged else 'nothing flagged'})", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, file), dpi=80, bbox_inches="tight")
    plt.close(fig)
    return file


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)


def fits_table(result) -> pd.DataFrame:
    rows = []
    for _, r in result.fits.iterrows():
        method = r["method"]
        p = result.p_values.loc[method]
        worst = p.idxmin() if p.notna().any() else ""
        flagged = result.flagged.get(method, [])
        rows.append({"method": method, "calibrated": "yes" if not flagged and p.notna().any() else "no",
                     "flagged": ", ".join(flagged[:4]) + (" ..." if len(flagged) > 4 else "") or "-",
                     "smallest p": f"{p.min():.2g} ({worst})" if worst else "-",
                     "fits": int(r["fits"]), "failed": int(r["failed"]), "unhealthy": int(r["unhealthy"]),
                     "gradients / fit": r["grad_evals"], "seconds / fit": r["wall_seconds"],
                     "draws ranked": r["draws_ranked"]})
    return pd.DataFrame(rows)


def p_value_table(frame: pd.DataFrame, flagged: dict) -> pd.DataFrame:
    """Quantities as rows, methods as columns (narrow), the flagged and worst first."""
    if frame.empty:
        return frame
    order = frame.min(axis=0).sort_values().index
    keep = [q for q in order if any(q in v for v in flagged.values())] + [q for q in order[:TABLE_QUANTITIES]]
    keep = list(dict.fromkeys(keep))[:max(TABLE_QUANTITIES, len(keep))]
    out = frame[keep].T.map(lambda v: "-" if not np.isfinite(v) else f"{v:.3f}")
    out.insert(0, "quantity", out.index)
    return out.reset_index(drop=True)


def power_note(power: dict) -> str:
    if not power:
        return "Too few simulations to state the test's power."
    smallest = power["smallest_90"]
    head = (f"Power of this calibration ({power['n_sims']} simulations, {power['n_quantities']} quantities, "
            f"family-wise level {power['level']:g}): a fitted sd too small by ")
    if math.isfinite(smallest):
        head += (f"{smallest:.0%} or more is flagged in at least 90% of calibrations (measured on {power['replicates']} "
                 "simulated calibrations of a Gaussian posterior; smaller shortfalls may pass unseen).")
    else:
        head += "up to 50% is flagged less than 90% of the time: run more simulations."
    table = ", ".join(f"{k:.0%}: {v:.0%}" for k, v in power["power"].items())
    return head + f" Power by shortfall: {table}."


def figures_of(result, folder, prefix: str = "", coverage_too: bool = True) -> list[Figure]:
    """Each method's PIT-ECDF figure (and its coverage form), with captions."""
    figures = []
    for method in result.methods:
        for coverage in (False, True) if coverage_too else (False,):
            file = pit_figure(result, method, folder, coverage, prefix)
            if file is not None:
                what = ("coverage of the central credible intervals (ArviZ's plot_ecdf_pit, coverage=True): below the "
                        "band, intervals that miss the truth too often (too narrow)" if coverage else
                        "PIT ECDF minus the uniform CDF, ArviZ's simultaneous band (plot_ecdf_pit, pot_c): a curve "
                        "outside it is not uniform; an S below-then-above is a fit too narrow (U-shaped ranks)")
                figures.append(Figure(file, f"{prefix.replace('_', ' ').strip() + ': ' if prefix else ''}{method}: "
                                            f"{what}; panels: {', '.join(shown_quantities(result, method))}."))
    return figures


def save_tables(result, folder, prefix: str = "") -> None:
    """p_values.csv, vsbc.csv and pit.npz (every PIT value) beside the page."""
    result.p_values.to_csv(os.path.join(folder, f"{prefix}p_values.csv"))
    if not result.vsbc.empty:
        result.vsbc.to_csv(os.path.join(folder, f"{prefix}vsbc.csv"))
    np.savez_compressed(os.path.join(folder, f"{prefix}pit.npz"), **{_slug(m): v for m, v in result.pit.items()},
                        quantities=np.array(result.quantities))


def page(result, folder, budget: int, seed: int) -> Page:
    figures = figures_of(result, folder)
    save_tables(result, folder)
    tables = [("Per method: calibrated? (no quantity flagged), cost per fit, unhealthy fits", fits_table(result)),
              ("p-values of uniformity (ArviZ's uniformity_test, pot_c), per quantity and method; all in p_values.csv",
               p_value_table(result.p_values, result.flagged))]
    if not result.vsbc.empty:
        tables.append(("VSBC (Yao et al. 2018): p-values of the symmetry of the approximations' PIT, their point "
                       "estimates' bias; all in vsbc.csv", p_value_table(result.vsbc, {})))
    notes = [
        power_note(result.power),
        f"Each of {len(next(iter(result.pit.values()), []))} data sets was simulated from the prior and the model "
        f"(seed stream {seed}), and every method fitted it at {budget:,} gradient evaluations (Laplace: its own "
        "optimisation). Ranks are of the true value among each fit's draws, thinned by the run's draws per effective "
        "draw (ArviZ's bulk ESS) so that about ESS draws remain; ties broken at random; the test quantity log_lik is "
        "the log-likelihood of the simulated data at each draw (it catches a fit that ignores the data, which the "
        "parameters' ranks cannot: the prior is the average posterior).",
        f"flagged: the quantities whose p-value fails Holm's step-down procedure at the family-wise level "
        f"{result.level:g} over that method's {len(result.quantities)} quantities. Unhealthy fits (divergences, R-hat, "
        "k-hat, not converged) count in the ranks all the same: a method is judged by what it returns.",
    ]
    return Page(finding=result.finding, figures=figures, tables=tables, notes=notes)
