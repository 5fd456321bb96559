"""The scientific studies (issue 7): each quick mode runs end to end and its quantities agree
with direct calculations."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.approximations import GaussianMixture
from workbench.study import load_study, run_and_report
from workbench.study.extras import mean_field_sd, posterior_sd_ratios


def test_posterior_sd_ratios_against_the_conjugate_posterior_by_hand():
    t = wb.targets.linear_regression("synthetic", n_data=200, dim=3, noise_sd=1.0, prior_sd=10.0, seed=0)
    X = t.data[0]
    precision = X.T @ X / 1.0**2 + np.eye(3) / 10.0**2  # the conjugate posterior, directly
    exact_sd = np.sqrt(np.diag(np.linalg.inv(precision)))
    mf_sd = 1 / np.sqrt(np.diag(precision))
    np.testing.assert_allclose(mean_field_sd(t.truth.cov), mf_sd, rtol=1e-10)
    scales = np.array([[1.0, 2.0, 3.0]]) * mf_sd
    fake = wb.Result(method="fake", target=t.name, draws=np.zeros((1, 1, 3)), cost=wb.Cost(0, 0, 0.0),
                     param_names=t.param_names, approximation=GaussianMixture([1.0], t.truth.mean[None], scales))
    ratios = posterior_sd_ratios(fake, t)
    assert ratios["sd_ratio_mean_field"] == pytest.approx(2.0)
    assert ratios["sd_ratio_exact"] == pytest.approx(np.median(scales[0] / exact_sd))


def test_minibatch_quick_study_renders_its_finding(tmp_path):
    run, page = run_and_report(load_study("minibatch"), quick=True, executor="serial", out=tmp_path, progress=False)
    assert run.failed == 0
    text = page.read_text()
    assert "sd_ratio.png" in text and (page.parent / "sd_ratio.png").stat().st_size > 1000
    assert "Finding." in text and "mean-field optimum" in text
    s = run.table.groupby(["method", "batch"])["sd_ratio_mean_field"].median()
    assert np.all(np.abs(s["with N_D/N_m"] - 1) < 0.1)  # the factor gives the right sds
    np.testing.assert_allclose(s["without"], np.sqrt(200 / s["without"].index.values), rtol=0.15)


@pytest.mark.slow
def test_dimension_scaling_quick_study(tmp_path):
    study = load_study("dimension_scaling")
    run, page = run_and_report(study, quick=True, executor="local", workers=2, out=tmp_path, progress=False)
    assert run.failed == 0
    text = page.read_text()
    for png in ("cost_vs_dimension.png", "accuracy_vs_dimension.png", "step_size.png", "rwm_optimal_acceptance.png", "r1.png"):
        assert png in text and (page.parent / png).stat().st_size > 1000
    assert "Finding." in text and "theory 0.234" in text
    module = __import__("sys").modules["workbench_studies.dimension_scaling"]
    # random-walk Metropolis at fixed scales on a 100-d Gaussian: ESJD peaks near acceptance 0.234
    opt = module.sweep_optimum(run.table)
    assert abs(opt["optimal_acceptance"].iloc[0] - 0.234) < 0.05
    # the adapted random-walk step shrinks with d, roughly as d^-1/2; IS's ESS fraction collapses
    slopes = module.slopes(run.table).set_index(["target", "method", "quantity"])
    assert -0.75 < slopes.loc[("gaussian", "RWM", "step_size"), "slope"] < -0.35
    collapse = module.is_collapse(run.table)
    g = collapse[collapse["target"] == "gaussian"].sort_values("dim")["ess_frac"].values
    assert np.all(np.diff(g) < 0) and g[-1] < 0.01 * g[0]


@pytest.mark.slow
def test_nn4post_ablation_quick_study(tmp_path):
    run, page = run_and_report(load_study("nn4post_ablation"), quick=True, executor="serial", out=tmp_path, progress=False)
    assert run.failed == 0
    text = page.read_text()
    for png in ("options_d10.png", "n_components.png"):
        assert png in text and (page.parent / png).stat().st_size > 1000
    assert "Finding." in text and "entropy lower bound" in text
    module = __import__("sys").modules["workbench_studies.nn4post_ablation"]
    s = module.summary(run).set_index(["target", "start", "method"]).sort_index()["kl_median"]
    near = s.loc[("three peaks d=10", "near peaks")]
    frozen = s.loc[("three peaks d=10", "main peak frozen")]
    base = module.BASE
    # softmax is shift-invariant: the three gauge forms give the same fit
    assert near["gauge: none"] == pytest.approx(near[base], rel=1e-3)
    assert near["gauge: mean gradient"] == pytest.approx(near[base], rel=1e-3)
    assert near["entropy: lower bound"] > 3 * near[base]  # the bound costs accuracy (sec. 3.3.1)
    assert frozen[base] > 0.8 and frozen["frozen fix: divide"] < 0.2  # the fix revives the main peak
    nc = s.loc[("mixture d=2", "box")]
    assert nc["N_c = 1"] > 0.8 and nc["N_c = 5"] < 0.05
