"""workbench/methods/importance.py: importance sampling, PSIS, resampling and rejection sampling."""

import math

import numpy as np
import pytest
from scipy import stats

import workbench as wb
from workbench.approximations import Gaussian, StudentT

GAUSS = wb.targets.gaussian(5, scales="logspace", correlation=0.3)
MIXTURE = wb.targets.gaussian_mixture(2, weights=[0.3, 0.7], means=[-3.0, 3.0], scales=1.0)


def _weighted_moments_within_4_mcse(res, target):
    w = res.weights()
    x = res.flat_draws()
    ess = 1.0 / np.sum(w**2)
    mean = w @ x
    sd = np.sqrt(w @ (x - mean) ** 2)
    assert np.all(np.abs(mean - target.truth.mean) < 4 * target.truth.sd / math.sqrt(ess))
    # sd of a near-Gaussian sample: MCSE ~ sd * sqrt((kurtosis - 1) / (4 ess)); kurtosis <= 3 here
    assert np.all(np.abs(sd - target.truth.sd) < 4 * target.truth.sd * math.sqrt(2 / (4 * ess)))


def test_is_with_the_exact_target_as_proposal_has_equal_weights_and_exact_log_z():
    exact = Gaussian(GAUSS.truth.mean, GAUSS.truth.cov)
    res = wb.methods.ImportanceSampling(proposal=exact, n=2000).run(GAUSS, seed=0)
    assert np.ptp(res.log_weights) < 1e-10
    assert res.log_z == pytest.approx(GAUSS.truth.log_z, abs=1e-10)
    assert res.info["ess"] == pytest.approx(2000) and res.info["pareto_k"] == -math.inf


@pytest.mark.parametrize("target", [GAUSS, MIXTURE], ids=["gaussian", "mixture"])
def test_is_with_a_wider_student_t_gets_moments_and_log_z(target):
    prop = StudentT(target.truth.mean, 2.0 * target.truth.cov, df=5)
    res = wb.methods.ImportanceSampling(proposal=prop, n=40_000).run(target, seed=1)
    _weighted_moments_within_4_mcse(res, target)
    assert abs(res.log_z - target.truth.log_z) < 4 * res.log_z_se
    assert res.info["pareto_k"] < 0.7
    row = wb.metrics.evaluate(res, target)  # metrics use the weights
    assert row["ess_bulk_min"] == pytest.approx(res.info["ess"])


def test_ess_falls_with_dimension_and_khat_flags_a_narrow_proposal():
    fractions = []
    for d in (1, 5, 20, 60):
        t = wb.targets.gaussian(d)
        res = wb.methods.ImportanceSampling(proposal=StudentT(np.zeros(d), 2.25 * np.eye(d), df=10), n=4000).run(t, seed=2)
        fractions.append(res.info["ess_fraction"])
    assert all(a > b for a, b in zip(fractions, fractions[1:])), fractions
    assert fractions[0] > 0.5 and fractions[-1] < fractions[0] / 10  # the curse of dimension
    t = wb.targets.gaussian(2)
    narrow = wb.methods.ImportanceSampling(proposal=Gaussian(np.zeros(2), 0.16 * np.eye(2)), n=4000).run(t, seed=3)
    wide = wb.methods.ImportanceSampling(proposal=Gaussian(np.zeros(2), 2.0 * np.eye(2)), n=4000).run(t, seed=3)
    assert narrow.info["pareto_k"] > 0.7 and any("k-hat" in m for m in narrow.messages)
    assert wide.info["pareto_k"] < 0.5


def test_psis_smoothing_and_resampling_give_consistent_answers():
    prop = StudentT(GAUSS.truth.mean, 2.0 * GAUSS.truth.cov, df=5)
    psis = wb.methods.ImportanceSampling(proposal=prop, n=20_000, psis=True).run(GAUSS, seed=4)
    assert np.isclose(np.logaddexp.reduce(psis.log_weights.ravel()), 0.0)  # normalised
    _weighted_moments_within_4_mcse(psis, GAUSS)
    for method in ("systematic", "multinomial"):
        sir = wb.methods.ImportanceSampling(proposal=prop, n=20_000, resample=method).run(GAUSS, seed=4)
        assert sir.log_weights is None and sir.draws.shape == (1, 20_000, 5)
        row = wb.metrics.evaluate(sir, GAUSS)
        assert row["mean_err_max"] < 0.05 and row["sd_err_max"] < 0.05


def test_rejection_sampling_is_exact_with_an_envelope_and_flags_violations():
    t = wb.targets.gaussian_mixture(1, weights=[0.3, 0.7], means=[-3.0, 3.0], scales=1.0)
    q = StudentT(np.zeros(1), 16.0 * np.eye(1), df=3)
    x = np.linspace(-40, 40, 200_001)[:, None]
    log_m = float(np.max(np.log(t.truth.marginal_pdf(0, x[:, 0])) - q.logpdf(x)))  # sup of p / q on a grid
    res = wb.methods.RejectionSampling(proposal=q, n=20_000, log_m=log_m + 0.01).run(t, seed=0)
    x = res.draws[0, :, 0]
    assert res.info["violations"] == 0 and 0 < res.info["acceptance_rate"] < 1
    assert abs(x.mean() - t.truth.mean[0]) < 4 * t.truth.sd[0] / math.sqrt(len(x))
    assert abs(x.std() - t.truth.sd[0]) < 4 * t.truth.sd[0] * math.sqrt(1 / len(x))
    assert abs(res.log_z - 0.0) < 4 * res.log_z_se
    with pytest.warns(UserWarning, match="envelope is violated"):
        bad = wb.methods.RejectionSampling(proposal=q, n=2000, log_m=-1.0).run(t, seed=0)
    assert bad.info["violations"] > 0 and any("approximately" in m for m in bad.messages)
    with pytest.warns(UserWarning, match="not a guarantee"):
        wb.methods.RejectionSampling(proposal=q, n=500).run(t, seed=1)


class _Liar:
    """Samples N(0, 1) but claims density 0 above 1: its weights there are infinite."""

    def sample(self, n, rng):
        return rng.standard_normal((n, 1))

    def logpdf(self, x):
        x = np.asarray(x)[:, 0]
        return np.where(x > 1.0, -np.inf, stats.norm.logpdf(x))


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: wb.methods.ImportanceSampling(proposal=object()), ValueError, "lacks logpdf and sample"),
        (lambda: wb.methods.RejectionSampling(proposal=object()), ValueError, "lacks logpdf and sample"),
        (lambda: wb.methods.ImportanceSampling(n=0), ValueError, "n must be an integer >= 1"),
        (lambda: wb.methods.RejectionSampling(proposal=StudentT(np.zeros(1), np.eye(1)), n=0), ValueError,
         "n must be an integer >= 1"),
        (lambda: wb.methods.ImportanceSampling(resample="stratified"), ValueError, "resample must be"),
        (lambda: wb.methods.ImportanceSampling(proposal=_Liar(), n=500).run(wb.targets.gaussian(1), seed=0), ValueError,
         "infinite"),
        (lambda: wb.methods.ImportanceSampling(proposal=StudentT(np.zeros(3), np.eye(3))).run(wb.targets.gaussian(2), seed=0),
         ValueError, "dimension 3"),
    ],
)
def test_bad_input_is_named(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_log_weights_do_not_overflow_in_thousands_of_dimensions():
    d = 3000
    t = wb.targets.gaussian(d)
    prop = Gaussian(np.zeros(d), 1.01 * np.eye(d))  # slightly wide: log ratios are O(d) in size
    res = wb.methods.ImportanceSampling(proposal=prop, n=500).run(t, seed=0)
    assert np.all(np.isfinite(res.log_weights))
    assert abs(res.log_z - t.truth.log_z) < 4 * res.log_z_se + 1e-6


def test_a_vi_fit_corrected_by_importance_sampling_in_one_line():
    t = wb.targets.gaussian(2, scales=[1.0, 2.0], correlation=0.8)  # mean-field VI underestimates sds here
    vi = wb.methods.MeanFieldVI(steps=2000, converge_tol=0).run(t, seed=0)
    corrected = wb.methods.ImportanceSampling(proposal=vi.approximation, n=20_000).run(t, seed=1)
    before = wb.metrics.evaluate(vi, t)["sd_err_max"]
    after = wb.metrics.evaluate(corrected, t)["sd_err_max"]
    assert before > 0.2 and after < before / 2


def test_the_wide_default_proposal_works_without_settings():
    t = wb.targets.gaussian(2)
    res = wb.methods.ImportanceSampling(n=20_000).run(t, seed=0)
    assert res.settings["proposal"].startswith("default")
    assert abs(res.log_z - t.truth.log_z) < 4 * res.log_z_se
    assert wb.metrics.evaluate(res, t)["mean_err_max"] < 0.1


def test_importance_sampling_says_so_when_one_draw_carries_all_the_weight():
    """A 16-d BNN posterior is far narrower than the wide Student-t proposal: one draw of
    10,000 carries the weight. The run must say so (its k-hat is the worst), not return calmly."""
    t = wb.targets.bnn(n_data=40, widths=[5])
    r = wb.methods.ImportanceSampling().run(t, seed=0, grad_budget=10_000)
    assert r.info["ess"] < 2 and r.info["pareto_k"] == math.inf
    assert any(m.startswith("Pareto k-hat inf") for m in r.messages)
