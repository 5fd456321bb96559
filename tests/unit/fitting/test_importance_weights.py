"""workbench/fitting/importance_weights.py: resampling keeps the weights' frequencies, PSIS's
k-hat reads degenerate weights as the worst case, the log evidence is log mean w with its
delta-method error, and the log ratios count NaN densities and refuse a proposal that is not
finite at its own draws."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench.fitting.importance_weights import compute_log_ratios, evaluate_log_ratios, log_evidence, pareto_khat, resample


def test_resampling_frequencies_match_the_weights():
    rng = np.random.default_rng(0)
    w = np.array([0.1, 0.2, 0.7])
    for method in ("multinomial", "systematic"):
        idx = resample(np.log(w), 100_000, rng, method)
        np.testing.assert_allclose(np.bincount(idx) / 1e5, w, atol=0.005)
    # systematic resampling is exact to within one draw per category
    idx = resample(np.log(w), 1000, rng, "systematic")
    assert np.all(np.abs(np.bincount(idx, minlength=3) - 1000 * w) <= 1)


def test_weights_too_degenerate_for_a_tail_fit_get_the_worst_khat():
    """Log ratios hundreds of nats apart leave every tail weight at zero beside the largest:
    ArviZ's fit returns NaN there, which must read as the worst k-hat, not as no warning."""
    rng = np.random.default_rng(0)
    assert pareto_khat(np.r_[0.0, -800.0 + rng.normal(0, 1, 9999)])[1] == math.inf
    assert pareto_khat(np.r_[0.0, np.full(999, -np.inf)])[1] == math.inf  # one draw of 1,000 has weight
    assert pareto_khat(np.zeros(500))[1] == -math.inf  # equal weights: no tail
    assert math.isnan(pareto_khat(rng.normal(size=10))[1])  # too few draws to say


def test_the_log_evidence_is_log_mean_w_with_its_delta_method_error():
    rng = np.random.default_rng(1)
    w = rng.lognormal(0.0, 0.5, 10_000)
    log_z, se = log_evidence(np.log(w))
    assert log_z == pytest.approx(math.log(w.mean()))
    assert se == pytest.approx(np.std(w, ddof=1) / (math.sqrt(w.size) * w.mean()))
    assert log_evidence(np.zeros(1))[1] == math.inf  # one draw: no error to estimate


def test_the_log_ratios_count_nan_densities_and_refuse_a_proposal_not_finite_at_its_draws():
    t = wb.targets.gaussian(2)
    q = wb.approximations.Gaussian(np.zeros(2), 4.0 * np.eye(2))
    x = q.sample(1000, np.random.default_rng(0))
    ratios = evaluate_log_ratios(t, q, x, progress=False)
    expected = np.array([t.logp(xi) for xi in x]) - q.logpdf(x)
    np.testing.assert_allclose(ratios.values, expected, rtol=1e-12)
    assert ratios.evaluated.all() and ratios.n_nan == 0 and not ratios.interrupted

    class NaNAtHalf(wb.approximations.Gaussian):
        def logpdf(self, points):
            out = super().logpdf(points)
            out[::2] = np.nan
            return out

    with pytest.raises(ValueError, match="NaN or \\+inf at some of its own draws"):
        compute_log_ratios(t, NaNAtHalf(np.zeros(2), np.eye(2)), x)
