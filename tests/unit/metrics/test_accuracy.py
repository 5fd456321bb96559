"""workbench/metrics/accuracy.py (evaluate): exact draws score within their Monte Carlo error, a shifted sample as
expected, references stand in for a missing truth."""

import math

import numpy as np
import pytest
from scipy import stats

import workbench as wb
from workbench import metrics
from workbench.result import Cost, Result


def test_every_key_is_present():
    t = wb.targets.gaussian(3)
    row = metrics.evaluate(wb.methods.Exact(chains=2, draws=100).run(t, seed=0), t)
    assert tuple(row) == metrics.METRIC_KEYS


def test_exact_draws_score_within_monte_carlo_error():
    t = wb.targets.gaussian(10, scales="logspace", correlation=0.4)
    res = wb.methods.Exact(chains=4, draws=1000).run(t, seed=1)
    row = metrics.evaluate(res, t)
    n = 4000
    # per coordinate mean error in sd units ~ |N(0, 1/n)|; the max of 10 is < 4.5 / sqrt(n)
    assert row["mean_err_max"] < 4.5 / math.sqrt(n)
    # sd of a Gaussian sample: relative SE 1 / sqrt(2n)
    assert row["sd_err_max"] < 4.5 / math.sqrt(2 * n)
    # W1 of n exact draws against m reference draws: O(1/sqrt(n)) floor
    assert row["w1_max"] < 3.0 / math.sqrt(n) * 2 and row["sliced_w1"] < 0.06
    assert row["log_z_err"] == 0.0
    assert 0.999 < row["r_hat_max"] < 1.01 and row["ess_bulk_min"] > 0.8 * n
    assert math.isnan(row["ess_per_1k_grad"])  # Exact evaluates no gradients


def test_a_shifted_sample_gives_the_expected_errors():
    t = wb.targets.gaussian(4, scales=[1.0, 2.0, 0.5, 3.0])
    res = wb.methods.Exact(chains=4, draws=2000).run(t, seed=2)
    shift = np.array([0.5, 0.0, 0.0, 0.0]) * t.truth.sd
    scaled = res.draws * np.array([1.0, 1.0, 1.3, 1.0])
    shifted = Result("Shifted", t.name, scaled + shift, Cost(), t.param_names)
    row = metrics.evaluate(shifted, t)
    tol = 4.5 / math.sqrt(8000)
    assert row["mean_err_max"] == pytest.approx(0.5, abs=tol)
    assert row["sd_err_max"] == pytest.approx(0.3, abs=1.3 * 4.5 / math.sqrt(16000))
    # W1 between N(0.5, 1) and N(0, 1) is 0.5; between N(0, 1.3^2) and N(0, 1) it is 0.3 sqrt(2/pi)
    assert row["w1_max"] == pytest.approx(0.5, abs=0.03)
    assert row["w1_mean"] == pytest.approx((0.5 + 0.3 * math.sqrt(2 / math.pi)) / 4, abs=0.02)
    assert row["sliced_w1"] > 0.05


def test_weighted_draws_are_treated_as_weighted():
    """Self-normalised IS draws from a wide proposal score like exact draws, with Kish ESS."""
    t = wb.targets.gaussian(2, scales=[1.0, 2.0])
    rng = np.random.default_rng(3)
    n = 20_000
    x = rng.standard_normal((n, 2)) * 2.0 * t.truth.sd  # proposal twice as wide
    lw = stats.norm.logpdf(x, 0, t.truth.sd).sum(1) - stats.norm.logpdf(x, 0, 2 * t.truth.sd).sum(1)
    res = Result("IS", t.name, x[None], Cost(), t.param_names, log_weights=lw[None])
    row = metrics.evaluate(res, t)
    w = np.exp(lw - lw.max())
    kish = w.sum() ** 2 / (w**2).sum()
    assert row["ess_bulk_min"] == pytest.approx(kish)
    assert math.isnan(row["r_hat_max"]) and math.isnan(row["ess_tail_min"])
    assert row["mean_err_max"] < 4.5 / math.sqrt(kish)
    assert row["sd_err_max"] < 0.05 and row["w1_max"] < 0.05
    # ignoring the weights would be badly wrong: the check can fail
    unweighted = metrics.evaluate(Result("raw", t.name, x[None], Cost(), t.param_names), t)
    assert unweighted["sd_err_max"] > 0.9


def test_mode_weights_on_a_mixture():
    t = wb.targets.gaussian_mixture(2, weights=[0.2, 0.8], means=[-4.0, 4.0], scales=1.0)
    good = wb.methods.Exact(chains=2, draws=5000).run(t, seed=0)
    assert metrics.evaluate(good, t)["mode_weight_err_max"] < 4.5 * math.sqrt(0.16 / 10_000)
    x = good.flat_draws()
    one_peak = x[x[:, 0] > 0][None, :2000]  # a method stuck on the main peak
    row = metrics.evaluate(Result("stuck", t.name, one_peak, Cost(), t.param_names), t)
    assert row["mode_weight_err_max"] == pytest.approx(0.2)


def test_efficiency_metrics_use_the_cost():
    t = wb.targets.gaussian(2)
    res = wb.methods.Exact(chains=2, draws=500).run(t, seed=4)
    res.cost = Cost(grad_evals=2000, wall_seconds=2.0)
    row = metrics.evaluate(res, t)
    assert row["ess_per_1k_grad"] == pytest.approx(row["ess_bulk_min"] / 2)
    assert row["ess_per_second"] == pytest.approx(row["ess_bulk_min"] / 2)


def test_without_truth_metrics_are_nan_or_use_reference_draws():
    t = wb.targets.logistic_regression(n_data=30, dim=2)
    x = np.random.default_rng(0).normal(size=(1, 400, 2))
    res = Result("R", t.name, x, Cost(), t.param_names)
    row = metrics.evaluate(res, t, reference=False)
    assert math.isnan(row["mean_err_max"]) and math.isnan(row["w1_max"]) and math.isnan(row["log_z_err"])
    assert row["ess_bulk_min"] > 0
    ref = np.random.default_rng(1).normal(size=(4000, 2))
    row = metrics.evaluate(res, t, reference=ref)
    assert row["mean_err_max"] < 0.25 and row["w1_max"] < 0.15


def test_without_truth_evaluate_scores_against_the_targets_reference_posterior():
    t = wb.targets.logistic_regression(n_data=30, dim=2)
    x = np.random.default_rng(0).normal(size=(1, 400, 2))
    res = Result("R", t.name, x, Cost(), t.param_names)
    row = metrics.evaluate(res, t)  # builds (and caches) wb.reference(t)
    ref = wb.reference(t)
    assert ref.passes
    mean = x[0].mean(axis=0)
    expected = np.max(np.abs(mean - ref.draws.mean(axis=0)) / ref.draws.std(axis=0))
    assert row["mean_err_max"] == pytest.approx(expected)
    assert row["w1_max"] > 0 and math.isnan(row["log_z_err"])  # the result makes no log Z estimate


def test_tail_ess_equals_arviz_summary():
    t = wb.targets.gaussian(3)
    res = wb.methods.Exact(chains=4, draws=300).run(t, seed=5)
    row = metrics.evaluate(res, t)
    summary = res.summary()
    assert row["ess_tail_min"] == pytest.approx(summary["ess_tail"].min())
    assert row["ess_bulk_min"] == pytest.approx(summary["ess_bulk"].min())
    assert row["r_hat_max"] == pytest.approx(summary["r_hat"].max())


def test_a_result_without_draws_scores_nan_not_an_error():
    """A sampler whose gradient budget ran out before its first transition returns no draws:
    every score is NaN."""
    t = wb.targets.funnel(5)
    res = wb.methods.NUTS(chains=2, warmup=1000, draws=100).run(t, seed=0, grad_budget=4)
    assert res.draws.shape[1] == 0
    row = metrics.evaluate(res, t)
    assert row["n_draws"] == 0 and row["grad_evals"] >= 4
    assert all(math.isnan(row[k]) for k in ("mean_err_max", "w1_mean", "sliced_w1", "ess_bulk_min"))


def test_nan_rows_in_the_reference_are_left_out_with_a_warning_in_the_row():
    t = wb.targets.logistic_regression(n_data=30, dim=2)
    x = np.random.default_rng(0).normal(size=(1, 400, 2))
    res = Result("R", t.name, x, Cost(), t.param_names)
    ref = np.random.default_rng(1).normal(size=(4000, 2))
    clean = metrics.evaluate(res, t, reference=ref)
    ref[[5, 17], 1] = np.nan
    ref[99, 0] = np.inf
    with pytest.warns(UserWarning, match="3 of 4000 reference rows have NaN or inf"):
        row = metrics.evaluate(res, t, reference=ref)
    assert row["reference_warning"].startswith("3 of 4000 reference rows") and "reference_warning" not in clean
    assert np.isfinite(row["w1_max"]) and abs(row["w1_max"] - clean["w1_max"]) < 0.01
    with pytest.raises(ValueError, match="every row of the reference draws"):
        metrics.evaluate(res, t, reference=np.full((10, 2), np.nan))


def test_a_fit_far_from_the_answer_is_flagged_in_its_row():
    """Laplace at one peak of a three-peak mixture ends far from the mixture's mean: the row
    says so (and the health column gets the flag); an exact sampler's row does not."""
    from workbench.diagnostics import health_flags

    t = wb.targets.gaussian_mixture(dim=2, n_components=3, seed=0)
    row = wb.metrics.evaluate(wb.methods.Laplace().run(t, seed=0), t)
    assert row["mean_err_max"] > 0.5
    assert row["fit_warning"].startswith("far from the answer") and "Laplace failed" in row["fit_warning"]
    assert health_flags([row["fit_warning"]]) == "far from the answer"
    exact = wb.metrics.evaluate(wb.methods.Exact(chains=2, draws=500).run(t, seed=0), t)
    assert "fit_warning" not in exact


def test_log_z_z_is_the_error_in_the_results_own_standard_errors():
    t = wb.targets.gaussian(3, mean=[1.0, -1.0, 0.5], scales=[0.5, 1.0, 2.0])
    res = wb.methods.ImportanceSampling(n=2000).run(t, seed=0)
    row = metrics.evaluate(res, t)
    assert row["log_z_z"] == pytest.approx((res.log_z - t.truth.log_z) / res.log_z_se)
    exact = metrics.evaluate(wb.methods.Exact(chains=1, draws=50).run(t, seed=0), t)
    assert math.isnan(exact["log_z_z"])  # an exact log Z has no standard error
