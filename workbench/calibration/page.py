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


def simultaneous_band(n: int, prob: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, lower, upper): ArviZ's simultaneous band for the ECDF of ``n`` uniform values, as the
    ECDF's difference from the uniform CDF (``arviz_stats.ecdf_utils.ecdf_pit``: the band that
    holds the whole curve with probability ``prob``, Säilynoja, Bürkner and Vehtari 2022)."""
    from arviz_stats.ecdf_utils import ecdf_pit

    x, _, lower, upper = ecdf_pit(np.linspace(0.0, 1.0, n), prob, 1000, rng=np.random.default_rng(seed))
    return np.asarray(x), np.asarray(lower) - np.asarray(x), np.asarray(upper) - np.asarray(x)


def pit_figure(result, method: str, folder, coverage: bool = False, prefix: str = "") -> str | None:
    """A method's PIT-ECDF (the ECDF of its PIT values less the uniform CDF) for its shown
    quantities, or its coverage form (the ECDF of 2 |PIT - 1/2|), each panel inside ArviZ's
    simultaneous band (:func:`simultaneous_band`); the file name, or None when the method has
    too few fits. (arviz_plots.plot_ecdf_pit draws the band only with method="envelope", which
    it deprecates and which fails in arviz-plots 1.3.2; its default marks suspicious points.)"""
    names = shown_quantities(result, method)
    if not names:
        return None
    values = result.pit[method][:, [list(result.quantities).index(n) for n in names]]
    values = values[np.all(np.isfinite(values), axis=1)]
    if len(values) < 10:
        return None
    if coverage:
        values = 2.0 * np.abs(values - 0.5)
    n = len(values)
    x, lower, upper = simultaneous_band(n, 1.0 - result.level)
    rows = math.ceil(len(names) / 3)
    fig, axes = plt.subplots(rows, min(3, len(names)), figsize=(10.0, 2.6 * rows), squeeze=False, sharey=True)
    for ax, k, name in zip(axes.flat, range(len(names)), names):
        ax.fill_between(x, lower, upper, color="#9ecae1", alpha=0.5, lw=0)
        ecdf = np.searchsorted(np.sort(values[:, k]), x, side="right") / n
        inside = bool(np.all((ecdf - x >= lower - 1e-12) & (ecdf - x <= upper + 1e-12)))
        ax.plot(x, ecdf - x, color="#08519c" if inside else "#cb181d", lw=1.4)
        ax.axhline(0.0, color="black", lw=0.6)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("coverage level" if coverage else "PIT", fontsize=8)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    axes[0][0].set_ylabel("ECDF - uniform", fontsize=8)
    file = f"{prefix}{'coverage' if coverage else 'pit'}_{_slug(method)}.png"
    flagged = result.flagged.get(method)
    said = ("flagged: " + ", ".join(flagged[:3]) + (f" and {len(flagged) - 3} more" if len(flagged) > 3 else "")
            if flagged else "nothing flagged")
    fig.suptitle(f"{method}: {'coverage of central intervals' if coverage else 'PIT ECDF'} ({said})", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, file), dpi=80, bbox_inches="tight")
    plt.close(fig)
    return file


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)


COVERAGE_LEVELS = np.linspace(0.05, 0.95, 19)


def coverage(pit: np.ndarray, levels=COVERAGE_LEVELS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(empirical coverage, lower, upper) of the central intervals at each nominal level, pooled
    over the columns of ``pit`` (sims, q): the share of (simulation, quantity) pairs whose truth
    lies inside the central interval, |2 PIT - 1| <= level, with a 95% Jeffreys interval on the
    simulations' count (the quantities of one simulation are not independent: counted once)."""
    from scipy.stats import beta

    x = pit[np.all(np.isfinite(pit), axis=1)]
    n = len(x)
    inside = (np.abs(2.0 * x - 1.0)[..., None] <= levels).mean(axis=1)  # per simulation, the share
    share = inside.mean(axis=0) if n else np.full(len(levels), np.nan)
    k = share * n
    lower, upper = beta.ppf(0.025, k + 0.5, n - k + 0.5), beta.ppf(0.975, k + 0.5, n - k + 0.5)
    return share, lower, upper


def coverage_figure(result, folder, prefix: str = "") -> str | None:
    """What R's SBC package shows beside the PIT-ECDFs: each method's empirical coverage of its
    central credible intervals against their nominal level (coverage minus nominal, so a
    calibrated method lies on 0), with its uncertainty, over the tested quantities."""
    columns = [list(result.quantities).index(q) for q in (result.tested or result.quantities)]
    methods = [m for m in result.methods if np.sum(np.all(np.isfinite(result.pit[m]), axis=1)) >= 10]
    if not methods:
        return None
    from ..study.style import method_colours

    colours = method_colours(methods)
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for m in methods:
        share, lower, upper = coverage(result.pit[m][:, columns])
        ax.plot(COVERAGE_LEVELS, share - COVERAGE_LEVELS, "-o", ms=3, color=colours[m], label=m)
        ax.fill_between(COVERAGE_LEVELS, lower - COVERAGE_LEVELS, upper - COVERAGE_LEVELS, color=colours[m], alpha=0.07)
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xlabel("nominal level of the central interval")
    ax.set_ylabel("coverage - nominal")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.tight_layout()
    file = f"{prefix}coverage.png"
    fig.savefig(os.path.join(folder, file), dpi=80, bbox_inches="tight")
    plt.close(fig)
    return file


def fits_table(result) -> pd.DataFrame:
    words = result.verdicts
    rows = []
    for _, r in result.fits.iterrows():
        method = r["method"]
        p = result.p_values.loc[method]
        worst = p.idxmin() if p.notna().any() else ""
        flagged = result.flagged.get(method, [])
        rows.append({"method": method, "verdict": words.get(method, ""),
                     "flagged": ", ".join(flagged[:4]) + (" ..." if len(flagged) > 4 else "") or "-",
                     "smallest p": f"{p.min():.2g} ({worst})" if worst else "-",
                     "fits": int(r["fits"]), "failed": int(r["failed"]), "unhealthy": int(r["unhealthy"]),
                     "gradients / fit": r["grad_evals"], "seconds / fit": r["wall_seconds"],
                     "draws ranked": r["draws_ranked"] if np.isfinite(r["draws_ranked"]) else "-"})
    return pd.DataFrame(rows)


def family_note(result) -> str:
    """The family of quantities tested, and the others with why each is left out."""
    tested = result.tested or result.quantities
    text = (f"The family tested: {len(tested)} of the {len(result.quantities)} quantities ranked (Holm's correction "
            "is over the family, so each quantity added costs the others power).")
    if result.left_out:
        by_why: dict[str, list[str]] = {}
        for name, why in result.left_out.items():
            by_why.setdefault(why.split(" of ")[0].split(" to ")[0], []).append(f"{name} ({why})")
        text += " Left out, judged on 200 draws from the prior: " + "; ".join(
            ", ".join(v[:6]) + (f" and {len(v) - 6} more" if len(v) > 6 else "") for v in by_why.values()) + "."
    return text


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
    """The methods' coverage of their central intervals, then each method's PIT-ECDF figure (and
    its coverage form), with captions."""
    figures = []
    file = coverage_figure(result, folder, prefix)
    if file is not None:
        figures.append(Figure(file, f"{prefix.replace('_', ' ').strip() + ': ' if prefix else ''}Empirical coverage "
                                    "of the central credible intervals against their nominal level, coverage minus "
                                    "nominal, pooled over the tested quantities, with a 95% interval for the number "
                                    "of simulations (R's SBC package shows the same): 0 is calibrated, below 0 "
                                    "intervals too narrow (over-confident), above too wide."))
    for method in result.methods:
        for coverage in (False, True) if coverage_too else (False,):
            file = pit_figure(result, method, folder, coverage, prefix)
            if file is not None:
                what = ("coverage of the central credible intervals (the ECDF of 2 |PIT - 1/2| less the uniform, in "
                        "ArviZ's simultaneous band): below it, intervals that miss the truth too often (too narrow)"
                        if coverage else
                        f"PIT ECDF minus the uniform CDF inside ArviZ's {1 - result.level:.0%} simultaneous band "
                        "(arviz_stats' ecdf_pit): a curve outside it (red) is not uniform; an S below-then-above is "
                        "a fit too narrow (U-shaped ranks)")
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
    tables = [("Per method: its verdict (calibrated: no quantity flagged), cost per fit, unhealthy fits", fits_table(result)),
              ("p-values of uniformity (ArviZ's uniformity_test, pot_c), per quantity and method; all in p_values.csv",
               p_value_table(result.p_values, result.flagged))]
    if not result.vsbc.empty:
        tables.append(("VSBC (Yao et al. 2018): p-values of the symmetry of the approximations' PIT, their point "
                       "estimates' bias; all in vsbc.csv", p_value_table(result.vsbc, {})))
    notes = [
        family_note(result),
        power_note(result.power),
        f"Each of {len(next(iter(result.pit.values()), []))} data sets was simulated from the prior and the model "
        f"(seed stream {seed}), and every method fitted it at {budget:,} gradient evaluations (Laplace: its own "
        "optimisation). Ranks are of the true value among each fit's draws, thinned by the run's draws per effective "
        "draw (ArviZ's bulk ESS) so that about ESS draws remain; ties broken at random; the test quantity log_lik is "
        "the log-likelihood of the simulated data at each draw (it catches a fit that ignores the data, which the "
        "parameters' ranks cannot: the prior is the average posterior).",
        f"flagged: the quantities whose p-value fails Holm's step-down procedure at the family-wise level "
        f"{result.level:g} over that method's {len(result.tested or result.quantities)} tested quantities. "
        "Unhealthy fits (divergences, R-hat, "
        "k-hat, not converged) count in the ranks all the same: a method is judged by what it returns.",
    ]
    return Page(finding=result.finding, figures=figures, tables=tables, notes=notes)
