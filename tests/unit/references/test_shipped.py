"""workbench/references/shipped.py: the references shipped with the package are found for the
targets they were built on (and their PyMC twins), refused for a changed density, used by
studies without running anything, and rebuilding one gives the same summaries within MCSE."""

import json

import numpy as np
import pytest

import workbench as wb
from workbench.references import shipped as S
from workbench.references.recipe import disagreement
from workbench.targets.specs import build_target


@pytest.mark.parametrize("name", sorted(S.SHIPPED))
def test_every_shipped_reference_is_present_and_found_for_its_targets(name):
    for spec in S.SHIPPED[name]:
        target = build_target(spec)
        ref = S.shipped_reference(target)
        assert ref is not None, f"{name}: rebuild with python -m workbench.references.shipped {name}"
        assert ref.draws.shape == (S.SHIPPED_DRAWS, target.dim) and ref.shipped.startswith(f"{name}.npz#")
        assert np.all(np.isfinite(ref.summary["mcse_mean"])) and (ref.cross_check is not None or not ref.passes)


def test_a_shipped_reference_is_refused_when_the_density_changed():
    target = wb.posteriors.load("eight_schools_noncentered")
    assert S.shipped_reference(target) is not None
    other = wb.targets.eight_schools(centered=False).replace(spec=dict(target.spec), data=(np.zeros(8), np.ones(8)))
    assert S.shipped_reference(other) is None


def test_the_pymc_twin_finds_the_numba_forms_reference():
    pytest.importorskip("pymc")
    twin = wb.posteriors.load("eight_schools_noncentered", backend="pymc")
    ref = wb.reference(twin)
    assert ref.shipped.startswith("eight_schools_noncentered.npz")


def test_rebuilding_a_shipped_reference_gives_the_same_summaries_within_mcse(tmp_path):
    ref = S.build_shipped("eight_schools_noncentered", directory=tmp_path, seed=7)
    with np.load(tmp_path / "eight_schools_noncentered.npz") as f:
        assert json.loads(str(f["meta"]))["info"]["seed"] == 7
    shipped = S.shipped_reference(wb.posteriors.load("eight_schools_noncentered"))
    z, worst = disagreement(ref.summary, shipped.summary, shipped.param_names)
    assert z < 4.0, (z, worst)


def test_a_study_on_a_bundled_posterior_runs_no_reference(tmp_path):
    from workbench.study import Cell, Study, run_study

    spec = {"factory": "posterior", "name": "eight_schools_noncentered", "backend": "numba"}
    study = Study("shipped_only", "t", lambda quick: [Cell(spec, {"method": "Laplace", "draws": 500}, 0)])
    run = run_study(study, quick=True, executor="serial", out=tmp_path, progress=False)
    (info,) = run.references.values()
    assert info["shipped"].startswith("eight_schools_noncentered.npz") and info["passes"]
    assert run.table["truth"].iloc[0] == "reference (shipped NUTS)"
    assert run.table["status"].iloc[0] == "ok" and np.isfinite(run.table["mean_err_max"].iloc[0])


@pytest.mark.parametrize("name", sorted(S.SHIPPED))
def test_every_shipped_reference_passes_posteriordbs_standard(name):
    """Every bundled posterior without an exact truth is scored against a reference that passes
    (R-hat < 1.01, bulk and tail ESS >= 400, no divergences, E-BFMI > 0.2)."""
    ref = S.shipped_reference(build_target(S.SHIPPED[name][0]))
    d = ref.diagnostics
    assert ref.passes, (name, ref.why_not)
    assert d.r_hat_max < 1.01 and min(d.ess_bulk_min, d.ess_tail_min) >= 400 and d.divergences == 0, (name, d)
    assert not d.bfmi_min <= 0.2, (name, d)
