"""The scientific studies (issue 7): each quick mode runs end to end and its quantities agree
with direct calculations."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.approximations import GaussianMixture
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


@pytest.mark.slow
def test_minibatch_quick_study_renders_its_finding(quick_study):
    run, page = quick_study("minibatch")
    assert run.failed == 0
    text = page.read_text()
    assert "sd_ratio.png" in text and (page.parent / "sd_ratio.png").stat().st_size > 1000
    assert "Finding." in text and "mean-field optimum" in text
    s = run.table.groupby(["method", "batch"])["sd_ratio_mean_field"].median()
    assert np.all(np.abs(s["with N_D/N_m"] - 1) < 0.1)  # the factor gives the right sds
    np.testing.assert_allclose(s["without"], np.sqrt(200 / s["without"].index.values), rtol=0.15)


@pytest.mark.slow
def test_dimension_scaling_quick_study(quick_study):
    run, page = quick_study("dimension_scaling")
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
def test_nn4post_ablation_quick_study(quick_study):
    run, page = quick_study("nn4post_ablation")
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


def test_theorem1_quantities_against_the_conjugate_posterior_by_hand():
    from workbench.study.extras import theorem1_quantities

    t = wb.targets.linear_regression("synthetic", n_data=200, dim=3, noise_sd=1.0, prior_sd=10.0, seed=0)
    X, y = t.data[0], t.data[1]
    precision = X.T @ X + np.eye(3) / 100.0  # the conjugate posterior, directly
    cov = np.linalg.inv(precision)
    mean = cov @ X.T @ y
    m_q = mean + np.array([0.02, -0.01, 0.03])  # an imperfect mean-field q
    s_q = 1.2 / np.sqrt(np.diag(precision))
    fake = wb.Result(method="fake", target=t.name, draws=np.zeros((1, 1, 3)), cost=wb.Cost(0, 0, 0.0),
                     param_names=t.param_names, approximation=GaussianMixture([1.0], m_q[None], s_q[None]))
    out = theorem1_quantities(fake, t)
    # Theorem 1's left side: ||X (m - m_q)|| / ||X m||, with f(x; theta) = x . theta
    assert out["rel_error"] == pytest.approx(np.linalg.norm(X @ (mean - m_q)) / np.linalg.norm(X @ mean), rel=1e-10)
    # the loss: KL(q||p) between two Gaussians in closed form
    kl = 0.5 * (np.trace(precision @ np.diag(s_q**2)) + (m_q - mean) @ precision @ (m_q - mean) - 3
                + np.linalg.slogdet(cov)[1] - np.sum(np.log(s_q**2)))
    assert abs(out["kl"] - kl) < 4 * out["neg_elbo_se"] + 1e-3
    assert abs(out["log_z_is"] - t.truth.log_z) < 0.05  # q is close: importance sampling recovers the evidence


@pytest.mark.slow
def test_theorem1_quick_study(quick_study):
    run, page = quick_study("theorem1")
    assert run.failed == 0
    text = page.read_text()
    for png in ("error_vs_loss.png", "training.png"):
        assert png in text and (page.parent / png).stat().st_size > 1000
    assert "Finding." in text and "Theorem 1 predicts" in text
    module = __import__("sys").modules["workbench_studies.theorem1"]
    t = module.with_kl(run.table)
    lin = t[t["target"] == "linear regression"]
    assert (lin["log_z_source"] == "exact").all() and np.allclose(lin["loss"], lin["kl"])
    # training lowers both sides of the theorem: the longest fits beat the shortest
    for _, g in t.groupby("target"):
        first, last = g[g["iterations"] == g["iterations"].min()], g[g["iterations"] == g["iterations"].max()]
        assert last["loss"].max() < 0.1 * first["loss"].min() and last["rel_error"].max() < first["rel_error"].min()
    slopes = module.slopes(run.table)
    assert np.all((slopes["slope"] > 0.2) & (slopes["slope"] < 1.2))  # error and loss rise and fall together


def test_marginal_accuracy_against_closed_form_total_variation():
    from scipy import stats

    from workbench.study.extras import marginal_accuracy

    t = wb.targets.gaussian(3)
    shift = np.array([0.5, 0.0, 1.0])
    q = GaussianMixture([1.0], shift[None], np.ones((1, 3)))
    draws = q.sample(4000, np.random.default_rng(0))[None]
    fake = wb.Result(method="fake", target=t.name, draws=draws, cost=wb.Cost(0, 0, 0.0), param_names=t.param_names,
                     approximation=q)
    out = marginal_accuracy(fake, t)
    # TV between N(delta, 1) and N(0, 1) is 2 Phi(delta / 2) - 1; the grid covers 99% of the truth
    exact = np.mean(2 * stats.norm.cdf(shift / 2) - 1)
    assert out["tv_analytic"] == pytest.approx(exact, abs=0.01)
    assert abs(out["tv_kde"] - exact) < 0.05  # a KDE of 4,000 draws adds smoothing and noise
    assert out["_arrays"]["pdf_analytic"].shape == (3, out["_arrays"]["grid"].shape[1])


@pytest.mark.slow
def test_marginalization_quick_study(quick_study):
    run, page = quick_study("marginalization")
    assert run.failed == 0
    text = page.read_text()
    for png in ("tv.png", "marginals_mixture.png", "marginals_funnel.png", "marginals_bnn.png"):
        assert png in text and (page.parent / png).stat().st_size > 1000
    assert "Finding." in text and "Transfer" in text
    module = __import__("sys").modules["workbench_studies.marginalization"]
    s = module.summary(run.table).set_index(["target", "method"])
    assert ((s["tv_kde"].dropna() <= 1) & (s["tv_kde"].dropna() >= 0)).all()
    # on the mixture and the funnel, the analytic marginal beats a KDE of the same q's draws
    for target in ("mixture d=4", "funnel d=5"):
        assert s.loc[(target, "NN4Post"), "tv_analytic"] < s.loc[(target, "NN4Post"), "tv_kde"]
    tr = module.transfer(run.table)
    assert len(tr) and (tr["transfer_q_marginal_ess_frac"] > tr["transfer_default_ess_frac"]).all()
