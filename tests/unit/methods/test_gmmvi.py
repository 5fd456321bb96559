"""workbench/methods/gmmvi.py: GMMVI (SAMTRON) against closed forms: a Gaussian target is fitted
exactly by one component, a two-peak mixture's weights are recovered, and the run keeps the
Method contract (budget, seed, health messages, memory, settings)."""

import numpy as np
import pytest

import workbench as wb
from tests.user_functions import nan_beyond_one_and_half
from workbench.running.memory import TooLargeError
from workbench.vi.fit import STATUS_BUDGET


def test_one_component_converges_to_a_gaussian_target():
    """On a Gaussian target the natural-gradient fixed point is the target itself: once q = p the
    log ratio is constant, Stein's estimates are exactly zero and q stays (up to rounding)."""
    t = wb.targets.rotated_gaussian(5, seed=3)
    res = wb.methods.GMMVI(adapt_components=False, steps=300, draws=100, progress=False).run(t, seed=1)
    q = res.approximation
    assert q.weights.size == 1
    np.testing.assert_allclose((q.mean - t.truth.mean) / t.truth.sd, 0.0, atol=1e-6)
    np.testing.assert_allclose(q.cov, t.truth.cov, atol=1e-6 * t.truth.sd.max() ** 2)
    assert abs(res.log_z - t.truth.log_z) < 1e-6  # an exact fit's ELBO is log Z


def test_a_two_peak_mixture_is_found_with_its_weights():
    t = wb.targets.gaussian_mixture(2, n_components=2, weights=[0.3, 0.7], seed=1)
    res = wb.methods.GMMVI(steps=300, draws=100, progress=False).run(t, seed=2)
    q = res.approximation
    peak_of_component = t.truth.extras["assign_component"](q.means)
    weights = np.bincount(peak_of_component, weights=q.weights, minlength=2)
    np.testing.assert_allclose(weights, [0.3, 0.7], atol=0.02)
    assert res.info["components_added"] == 300 // 30 - 1 + 1  # one every 30 iterations (not at 0)


def test_the_run_is_reproducible_from_its_seed_and_keeps_its_budget():
    t = wb.targets.gaussian_mixture(3, n_components=2, seed=0)
    m = wb.methods.GMMVI(draws=50, progress=False)
    a, b = m.run(t, seed=5, grad_budget=5000), m.run(t, seed=5, grad_budget=5000)
    np.testing.assert_array_equal(a.draws, b.draws)
    assert a.cost.grad_evals <= 5000
    # it ends at the budget, or at the budget's iteration cap having reused its draws: (4750 - 475) / 100
    # iterations, 5% of the budget kept for the search for peaks and a tenth of the rest for the k-hat check
    assert a.info["status"] == STATUS_BUDGET or a.info["steps"] == 42


def test_draws_where_the_density_is_nan_are_left_out_and_their_share_said():
    t = wb.Target.from_numba(nan_beyond_one_and_half, dim=2, name="half_nan", check_gradient=False)
    res = wb.methods.GMMVI(steps=40, draws=100, init_scale=2.0, progress=False).run(t, seed=0)
    assert res.info["nonfinite_draws"] > 0
    assert any("NaN or infinite density" in m and "%" in m for m in res.messages)
    assert np.all(np.isfinite(res.approximation.means))


def test_a_run_that_cannot_fit_in_memory_is_refused_before_it_starts():
    t = wb.targets.gaussian(40_000)
    with pytest.raises(TooLargeError, match="components"):
        wb.methods.GMMVI(progress=False).run(t, seed=0)


@pytest.mark.parametrize("kwargs, word", [
    ({"n_components": 0}, "n_components"), ({"min_weight": 1.5}, "min_weight"),
    ({"n_components": 5, "max_components": 2}, "max_components"), ({"samples_per_component": 0}, "samples_per"),
    ({"reuse_ratio": -1}, "reuse_ratio"), ({"covariance": "dense"}, "covariance"),
])
def test_bad_settings_are_named(kwargs, word):
    with pytest.raises(ValueError, match=word):
        wb.methods.GMMVI(**kwargs)


def test_diagonal_components_fit_an_axis_aligned_gaussian_and_a_mixture():
    """covariance="diag": one diagonal component is exact on an axis-aligned Gaussian (q = p is
    the fixed point), and a two-peak mixture's weights are found."""
    t = wb.targets.gaussian(dim=5, scales=np.array([0.2, 0.5, 1.0, 2.0, 3.0]))
    res = wb.methods.GMMVI(covariance="diag", adapt_components=False, steps=300, draws=100, progress=False).run(t, seed=1)
    q = res.approximation
    assert isinstance(q, wb.approximations.GaussianMixture) and q.weights.size == 1
    np.testing.assert_allclose((q.mean - t.truth.mean) / t.truth.sd, 0.0, atol=1e-6)
    np.testing.assert_allclose(q.sd / t.truth.sd, 1.0, atol=1e-6)
    m = wb.targets.gaussian_mixture(2, n_components=2, weights=[0.3, 0.7], seed=1)
    q = wb.methods.GMMVI(covariance="diag", steps=300, draws=100, progress=False).run(m, seed=2).approximation
    weights = np.bincount(m.truth.extras["assign_component"](q.means), weights=q.weights, minlength=2)
    np.testing.assert_allclose(weights, [0.3, 0.7], atol=0.02)


def test_diagonal_components_need_memory_linear_in_d():
    t = wb.targets.gaussian(40_000)
    need = wb.methods.GMMVI(covariance="diag").memory_needs(t, wb.result.Budget())
    assert "components (K x d)" in need and need["components (K x d)"] == 8 * 4 * 20 * 40_000
