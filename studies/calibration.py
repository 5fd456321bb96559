"""Calibration: simulation-based calibration of the methods on models with a generative form.

For each model, data sets are simulated from its prior and likelihood, every method fits each one
at the same gradient budget, and the ranks of the true parameters and of the log-likelihood among
each fit's draws are tested for uniformity with ArviZ (``wb.calibrate``, ``workbench/calibration``):
no reference posterior is involved. The quick grid: non-centred eight schools and a linear
regression whose features come in pairs with correlation 0.95 (its coefficients' posterior
correlation about -0.95, which a mean-field fit cannot follow), five methods, 60 simulations. The
full grid: every method of the panel on those, a conjugate regression, a logistic regression and
the Brownian motion, 200 simulations.

    python studies/calibration.py [--quick] [--executor local|serial|dask]
"""

from __future__ import annotations

from workbench.calibration import LEVEL, design
from workbench.calibration import page as calibration_page
from workbench.calibration.sbc import result_of, verdicts
from workbench.metrics.calibration import quantity_names
from workbench.study import Page, Study, main_for
from workbench.targets.specs import build_target

BUDGET = 10_000
SEED = 0
QUICK_MODELS = [
    ("eight schools", {"factory": "eight_schools", "centered": False}),
    ("correlated regression", {"factory": "linear_regression", "dim": 4, "n_data": 50, "correlation": 0.95}),
]
FULL_MODELS = QUICK_MODELS + [
    ("conjugate regression", {"factory": "linear_regression", "dim": 10, "n_data": 100}),
    ("logistic regression", {"factory": "logistic_regression", "dim": 5, "n_data": 100}),
    ("Brownian motion", {"factory": "posterior", "name": "brownian_motion", "backend": "numba"}),
]
QUICK_METHODS = ["NUTS", "MeanFieldVI", "FullRankVI", "Pathfinder", "Laplace"]


def _setup(quick: bool):
    models = QUICK_MODELS if quick else FULL_MODELS
    specs = design.method_specs(QUICK_METHODS if quick else None, BUDGET)
    return models, specs, (60 if quick else 200)


def grid(quick: bool):
    models, specs, n_sims = _setup(quick)
    cells = []
    for label, spec in models:
        cells += design.grid(spec, label, specs, n_sims, SEED, BUDGET)
    return cells


def report(run, folder) -> Page:
    models, specs, n_sims = _setup(run.quick)
    findings, figures, tables, notes, headline = [], [], [], [], []
    for label, spec in models:
        target = build_target(spec)
        result = result_of(run, target, specs, quantity_names(target), LEVEL, label)
        prefix = "".join(ch if ch.isalnum() else "_" for ch in label) + "_"
        findings.append(f"{label}: {result.finding}")
        # the index line: every method's verdict, the unhealthy fits' share with it
        headline.append(f"{label}: " + "; ".join(f"{m} {w}" for m, w in
                                                 verdicts(result.flagged, result.p_values, result.fits).items()))
        notes.append(f"{label}: {calibration_page.family_note(result)}")
        figures += calibration_page.figures_of(result, folder, prefix, coverage_too=False)
        calibration_page.save_tables(result, folder, prefix)
        tables.append((f"{label}: calibrated? cost per fit, unhealthy fits", calibration_page.fits_table(result)))
        tables.append((f"{label}: p-values of uniformity (all in {prefix}p_values.csv)",
                       calibration_page.p_value_table(result.p_values, result.flagged)))
        if not notes:
            notes.append(calibration_page.power_note(result.power))
    notes.append(f"Each model: {n_sims} data sets from its prior and likelihood (seed stream {SEED}); every method "
                 f"fitted each at {BUDGET:,} gradients (Laplace: its own optimisation); ranks of the true values and "
                 "of log_lik among each fit's draws thinned by its ESS; Holm's procedure at the family-wise level "
                 f"{LEVEL:g} per method. `workbench calibrate MODEL` runs the same on your own model.")
    return Page(finding=" ".join(findings), figures=figures, tables=tables, notes=notes,
                headline=". ".join(headline) + ".")


STUDY = Study(
    name="calibration",
    title="Calibration: which methods return the right posterior on data their model generates (SBC)",
    grid=grid,
    report=report,
    description=__doc__.split("\n\n")[1].replace("\n", " "),
)

main = main_for(STUDY)

if __name__ == "__main__":
    raise SystemExit(main())
