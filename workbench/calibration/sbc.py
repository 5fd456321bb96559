"""``wb.calibrate(model, ...)``: simulation-based calibration of every method on one model, side
by side at equal cost (Talts et al. 2018; Modrák et al. 2023; Yao et al. 2018 for VI).

For each of ``n_sims`` simulations: parameters from the prior, a data set from the model at them
(the model's ``generative`` form: PyMC's forward sampler, or a built-in model's simulator),
every method fitted to that data set at the same gradient budget, and the rank of the true
parameters (and of the test quantity ``log_lik``) among each fit's thinned draws
(``metrics/calibration.py``). A calibrated method's ranks are uniform; ArviZ's uniformity test
says where they are not (``uniformity.py``). The fits are cells of the study runner: cached,
resumable after a kill, on the local pool or a Dask cluster, with a progress bar and the time
left. No reference posterior is needed anywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics.calibration import quantity_names, tested_quantities
from ..study.options import RunOptions
from ..target import Target
from ..targets.specs import register_target, resolve
from . import design, uniformity

LEVEL = 0.01
QUICK_SIMS = 100


@dataclass
class Calibration:
    """What :func:`calibrate` returns.

    ``ranks``: method -> (n_sims, quantities) ranks of the truth among each fit's draws (NaN
    where the fit failed); ``pit``: the same as PIT values in (0, 1) (each fit ranked against its
    own number of draws, ``n_ranked``); ``quantities``: their names, the model's variables with
    their index (``beta[3]``), then the test quantities (``log_lik``); ``p_values``: ArviZ's
    uniformity test (``pot_c``), one row per method, one column per quantity; ``flagged``:
    method -> the quantities that fail at the family-wise level ``level`` (Holm); ``vsbc``: Yao
    et al.'s test of the approximations' point estimates; ``fits``: per method, how many fits
    ran, failed, were unhealthy, and their median cost; ``power``: the smallest under-dispersion
    the test flags 90% of the time at this many simulations; ``finding``: the verdict in words.
    """

    target: Target
    methods: list
    quantities: tuple
    ranks: dict
    pit: dict
    n_ranked: dict
    p_values: pd.DataFrame
    flagged: dict
    level: float
    vsbc: pd.DataFrame
    fits: pd.DataFrame
    power: dict
    finding: str = ""
    page: Path | None = None
    run: object = field(default=None, repr=False)
    tested: tuple = ()  # the family of quantities tested (metrics.calibration.tested_quantities)
    left_out: dict = field(default_factory=dict)  # the others, and why each is not tested
    verdicts: dict = field(default_factory=dict)  # method -> its verdict in words (:func:`verdicts`)

    def calibrated(self, method: str) -> bool:
        """No quantity of ``method`` flagged (and its fits ran)."""
        return not self.flagged.get(method) and bool(np.isfinite(self.p_values.loc[method]).any())


def collect(run, specs: list, quantities: tuple, target_label: str | None = None) -> tuple[dict, dict, dict, pd.DataFrame]:
    """(ranks, pit, n_ranked, fits) from a calibration's study run (of the cells whose target
    label is ``target_label``, when a study calibrates several models)."""
    table = run.table if target_label is None else run.table[run.table["target"] == target_label]
    n_sims = int(table["simulation"].max()) + 1 if len(table) else 0
    q = len(quantities)
    labels = [label for label, _ in specs]
    ranks = {m: np.full((n_sims, q), np.nan) for m in labels}
    pit = {m: np.full((n_sims, q), np.nan) for m in labels}
    n_ranked = {m: np.zeros(n_sims, dtype=int) for m in labels}
    for i, row in table.iterrows():
        method, sim = row["method"], int(row["simulation"])
        if row["status"] != "ok":
            continue
        arrays = run.arrays(i)
        if "pit" in arrays and arrays["pit"].shape == (q,):
            ranks[method][sim], pit[method][sim] = arrays["ranks"], arrays["pit"]
            n_ranked[method][sim] = int(row.get("n_ranked", 0) or 0)
    fits = []
    for label in labels:
        rows = table[table["method"] == label]
        ok = rows[rows["status"] == "ok"]
        health = ok["health"].astype(str) if "health" in ok else pd.Series([], dtype=str)
        fits.append({"method": label, "fits": len(rows), "failed": int((rows["status"] != "ok").sum()),
                     "unhealthy": int((~health.isin(["ok", "", "nan"])).sum()),
                     "grad_evals": float(ok["grad_evals"].median()) if len(ok) else math.nan,
                     "wall_seconds": float(ok["wall_seconds"].median()) if len(ok) else math.nan,
                     "draws_ranked": float(ok["n_ranked"].median()) if "n_ranked" in ok and len(ok) else math.nan})
    return ranks, pit, n_ranked, pd.DataFrame(fits)


def verdicts(flagged: dict, p_values: pd.DataFrame, fits: pd.DataFrame) -> dict:
    """method -> its verdict in a few words: "calibrated", "calibrated, but k of n fits unhealthy"
    (a sampler whose ranks are uniform though its own diagnostics distrust most of its fits),
    "miscalibrated (q quantities)", or "no usable fits"."""
    out = {}
    for method, names in flagged.items():
        row = fits[fits["method"] == method]
        unhealthy, n = (int(row["unhealthy"].iloc[0]), int(row["fits"].iloc[0])) if len(row) else (0, 0)
        if not np.isfinite(p_values.loc[method]).any():
            out[method] = "no usable fits"
        elif names:
            out[method] = f"miscalibrated ({len(names)} quantit{'y' if len(names) == 1 else 'ies'})"
        elif unhealthy > n / 2:
            out[method] = f"calibrated, but {unhealthy} of {n} fits unhealthy"
        else:
            out[method] = "calibrated" + (f" ({unhealthy} of {n} fits unhealthy)" if unhealthy else "")
    return out


def finding(flagged: dict, pit: dict, quantities, p_values: pd.DataFrame, fits: pd.DataFrame, level: float,
            n_sims: int) -> str:
    """The verdict in words: every method's, and how the miscalibrated ones fail."""
    words = verdicts(flagged, p_values, fits)
    calibrated = [m for m, w in words.items() if w.startswith("calibrated")]
    parts = []
    for method, names in flagged.items():
        if not names:
            continue
        by_shape: dict[str, list[str]] = {}
        for name in names:
            k = list(quantities).index(name)
            by_shape.setdefault(uniformity.shape(pit[method][:, k]), []).append(name)
        said = "; ".join(f"{how} in {', '.join(n[:6])}{' ...' if len(n) > 6 else ''}" for how, n in by_shape.items())
        parts.append(f"{method} {said}")
    text = (f"{n_sims} simulations, no quantity flagged at the family-wise {level:g} level for "
            f"{_join(calibrated)}" if calibrated else "No method calibrated")
    text += ". Verdicts: " + "; ".join(f"{m} {w}" for m, w in words.items())
    if parts:
        text += ". How they fail: " + "; ".join(parts)
    return text + "."


def calibrate(model, methods=None, n_sims: int | None = None, grad_budget: int | None = None, seed: int = 0,
              options: RunOptions | None = None, *, level: float = LEVEL, backend: str = "numba",
              **run_options) -> Calibration:
    """Simulation-based calibration of ``methods`` on ``model`` (module docstring).

    Parameters
    ----------
    model : pymc.Model, Target, or str
        A PyMC model (its observed values become data; PyMC draws the simulations), a ``Target``
        with a ``generative`` form, a built-in model's name or call (``"eight_schools"``,
        ``"linear_regression(dim=10)"``), a bundled posterior's name, or ``path/to/file.py:NAME``.
    methods : list, optional
        Names (``"NUTS"``, ``"MeanFieldVI"``) or ``Method`` instances; default every method of
        the panel ``workbench compare`` runs, and Laplace. ``p_values`` and ``flagged`` are keyed
        by their names.
    n_sims : int
        Simulated data sets (default 200; 100 with ``quick``).
    grad_budget : int
        Gradient evaluations per fit, the same for every method (default 10,000).
    seed : int
        The simulations' stream (simulation ``i`` uses ``SeedSequence([seed, i])``).
    options : RunOptions, optional
        How the fits run (``quick``, ``executor``, ``scheduler``, ``workers``, ``out``, ``fresh``,
        ``progress``), or its fields as keywords. A model given as a Python object runs in this
        process (workers cannot rebuild it); give ``path/to/file.py:NAME`` to use a pool or Dask.
    level : float
        The family-wise level of ``flagged`` (0.01).
    """
    from ..study import Study
    from ..study.main import run_and_report
    from . import page

    options = RunOptions.of(options, **run_options)
    if isinstance(n_sims, bool) or (n_sims is not None and (not isinstance(n_sims, (int, np.integer)) or n_sims < 10)):
        raise ValueError(f"n_sims must be an integer >= 10 (simulated data sets), got {n_sims!r}")
    n_sims = int(n_sims) if n_sims is not None else (QUICK_SIMS if options.quick else 200)
    budget = design.DEFAULT_BUDGET if grad_budget is None else grad_budget
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 100:
        raise ValueError(f"grad_budget must be an integer >= 100 (gradient evaluations per fit), got {grad_budget!r}")
    if not (isinstance(level, float) and 0.0 < level < 1.0):
        raise ValueError(f"level must be a number in (0, 1) (the family-wise level of the flags), got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    target, spec, rebuildable = _resolve(model, backend)
    if target.generative is None:
        raise ValueError(
            f"{target.name!r} has no generative form, so data sets cannot be simulated from it: calibrate a PyMC model, "
            "a built-in model with one (linear_regression, logistic_regression, eight_schools, bnn, and the bundled "
            "posteriors), or give a Target a wb.target_forms.Generative(simulate, log_likelihood)")
    specs = design.method_specs(methods, int(budget))
    quantities = quantity_names(target)
    executor = options.executor if options.executor is not None else ("local" if rebuildable else "serial")
    if executor != "serial" and not rebuildable:
        raise ValueError(f"{target.name!r} was built from a Python object: only executor='serial' can run it "
                         "(or give it as path/to/file.py:NAME)")
    cells = design.grid(spec, target.name, specs, n_sims, seed, int(budget))
    holder: dict = {}

    def report(run, folder):
        holder["result"] = result = result_of(run, target, specs, quantities, level)
        return page.page(result, folder, int(budget), seed)

    name = f"calibrate_{_slug(target.name)}" + ("" if budget == design.DEFAULT_BUDGET else f"_{int(budget)}")
    study = Study(name=name,
                  title=f"Calibration of every method on {target.name}: simulation-based, no reference needed",
                  grid=lambda quick: cells, report=report,
                  description=(f"{n_sims} data sets simulated from {target.description or target.name} (d = "
                               f"{target.dim}); {len(specs)} methods fitted to each at {int(budget):,} gradients; the "
                               "ranks of the true parameters and log-likelihood among each fit's draws, tested for "
                               "uniformity with ArviZ."))
    run, path = run_and_report(study, options.replace(executor=executor))
    result = holder["result"]
    result.page, result.run = path, run
    return result


def result_of(run, target, specs, quantities, level, target_label: str | None = None) -> Calibration:
    """The :class:`Calibration` of ``target`` from a study run's cells (those of ``target_label``):
    every quantity ranked, the family of ``tested_quantities`` tested (no constants, mirror
    duplicates or monotone transforms of a quantity already tested)."""
    ranks, pit, n_ranked, fits = collect(run, specs, quantities, target_label)
    tested, left_out = tested_quantities(target)
    columns = [list(quantities).index(q) for q in tested]
    p = uniformity.p_values({m: v[:, columns] for m, v in pit.items()}, tested)
    flagged = {m: uniformity.holm(p.loc[m], level) for m in p.index}
    approximations = {m: pit[m][:, columns] for m, spec in specs if spec["method"] in design.APPROXIMATIONS}
    vsbc = uniformity.vsbc(approximations, tested)
    n_sims = max((len(v) for v in pit.values()), default=0)
    power = uniformity.power(n_sims, len(tested), level) if n_sims >= 10 else {}
    text = finding(flagged, pit, quantities, p, fits, level, n_sims)
    return Calibration(target=target, methods=[m for m, _ in specs], quantities=tuple(quantities), ranks=ranks,
                       pit=pit, n_ranked=n_ranked, p_values=p, flagged=flagged, level=level, vsbc=vsbc, fits=fits,
                       power=power, finding=text, tested=tested, left_out=left_out,
                       verdicts=verdicts(flagged, p, fits))


def _resolve(model, backend: str) -> tuple[Target, dict, bool]:
    """(target, spec, rebuildable) for a PyMC model object, a Target or what ``resolve`` takes."""
    import sys

    pm = sys.modules.get("pymc")
    if pm is not None and isinstance(model, pm.Model):
        target = Target.from_pymc(model, name=model.name or "pymc_model", observed_as_data=True)
        spec = {"factory": "registered", "name": target.name, "spec": dict(target.spec)}
        return target, register_target(target, spec), False
    return resolve(model, backend, observed_as_data=True)


def _join(names: list) -> str:
    """'A', 'A and B', 'A, B and C'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in text)[:60]
