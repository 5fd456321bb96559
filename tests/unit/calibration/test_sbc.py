"""workbench/calibration/sbc.py: wb.calibrate end to end on a small model (serial, a local pool
and a Dask LocalCluster give the same ranks), its page, its errors, and the command line."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.metrics.calibration import LOG_LIK

REPO = Path(__file__).resolve().parents[3]
MODEL = "linear_regression(dim=3, n_data=20)"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("calibration")
    return wb.calibrate(MODEL, methods=["Laplace", "MeanFieldVI"], n_sims=20, grad_budget=2000, seed=1,
                        executor="serial", out=out, progress=False)


def test_a_calibration_has_ranks_pvalues_and_flags_keyed_by_method(small):
    assert small.methods == ["Laplace", "MeanFieldVI"]
    assert small.quantities == ("theta[0]", "theta[1]", "theta[2]", LOG_LIK)
    for method in small.methods:
        assert small.ranks[method].shape == (20, 4) and small.pit[method].shape == (20, 4)
        assert np.all((small.pit[method] > 0) & (small.pit[method] < 1))
        assert np.all(small.ranks[method] <= small.n_ranked[method][:, None])
    assert list(small.p_values.index) == small.methods and list(small.p_values.columns) == list(small.quantities)
    assert set(small.flagged) == set(small.methods)
    assert set(small.fits["method"]) == set(small.methods) and (small.fits["failed"] == 0).all()
    assert small.power["n_sims"] == 20 and "calibrated" in small.finding


def test_the_page_shows_arviz_pit_plots_the_pvalues_the_cost_and_the_power(small):
    page = small.page.read_text()
    folder = small.page.parent
    assert folder.name.startswith("calibrate_linear_regression")
    for method in small.methods:
        assert (folder / f"pit_{method}.png").stat().st_size > 5000
        assert (folder / f"coverage_{method}.png").exists()
    assert "p-values of uniformity" in page and "gradients / fit" in page and "Power of this calibration" in page
    assert "VSBC" in page and (folder / "p_values.csv").exists()
    assert small.finding.split(" (")[0] in page


def test_the_same_calibration_on_a_dask_cluster_gives_the_same_ranks(small, tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        again = wb.calibrate(MODEL, methods=["Laplace", "MeanFieldVI"], n_sims=20, grad_budget=2000, seed=1,
                             scheduler=cluster.scheduler_address, out=tmp_path, progress=False)
    assert again.run.executor.startswith("Dask at")
    for method in small.methods:
        np.testing.assert_array_equal(again.ranks[method], small.ranks[method])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="n_sims must be an integer >= 10"):
        wb.calibrate(MODEL, n_sims=3)
    with pytest.raises(ValueError, match="grad_budget must be an integer >= 100"):
        wb.calibrate(MODEL, grad_budget=10)
    with pytest.raises(ValueError, match="no generative form"):
        wb.calibrate("gaussian(dim=2)", n_sims=10)
    with pytest.raises(ValueError, match="unknown method"):
        wb.calibrate(MODEL, methods=["Magic"], n_sims=10)


def test_the_command_line_calibrates_a_pymc_file(tmp_path):
    pytest.importorskip("pymc")
    proc = subprocess.run([sys.executable, "-m", "workbench", "calibrate", "examples/pymc_model.py:model",
                           "--methods", "Laplace", "--seeds", "12", "--out", str(tmp_path), "--no-progress",
                           "--executor", "serial"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "12 fits (12 computed" in proc.stdout and "calibrate_pymc_model_model" in proc.stdout
    assert (tmp_path / "full" / "calibrate_pymc_model_model" / "index.html").exists()
    bad = subprocess.run([sys.executable, "-m", "workbench", "calibrate", MODEL, "--seeds", "3"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--seeds" in bad.stderr


def test_each_method_gets_a_verdict_that_says_what_failed():
    """A sampler whose ranks pass but whose own diagnostics distrust most fits is not simply
    'calibrated'; a method with flagged quantities says how many; one with no fits says so."""
    import pandas as pd

    from workbench.calibration.sbc import verdicts

    p = pd.DataFrame({"a": [0.5, 0.5, 0.5, np.nan], "b": [0.4, 0.6, 1e-6, np.nan]},
                     index=["NUTS", "Laplace", "MeanFieldVI", "IS"])
    fits = pd.DataFrame({"method": ["NUTS", "Laplace", "MeanFieldVI", "IS"], "fits": [40, 40, 40, 40],
                         "unhealthy": [39, 3, 0, 40]})
    flagged = {"NUTS": [], "Laplace": [], "MeanFieldVI": ["b"], "IS": []}
    words = verdicts(flagged, p, fits)
    assert words == {"NUTS": "calibrated, but 39 of 40 fits unhealthy", "Laplace": "calibrated (3 of 40 fits unhealthy)",
                     "MeanFieldVI": "miscalibrated (1 quantity)", "IS": "no usable fits"}
