"""workbench/targets/latent.py: the latent-variable posteriors' gradients, and the Cholesky
helpers of the LGCP against NumPy."""

import numpy as np
import pytest

import workbench as wb
from workbench.targets.latent import cholesky_in_place, inverse_from_cholesky


@pytest.mark.parametrize("name", ["stochastic_volatility", "brownian_motion", "lgcp"])
def test_gradients_match_central_differences_away_from_the_start(name):
    t = wb.posteriors.load(name)
    rng = np.random.default_rng(4)
    points = t.initial_point + 0.3 * rng.standard_normal((3, t.dim))
    assert wb.check_gradient(t, points=points).max_rel_error < 1e-5


def test_cholesky_and_inverse_agree_with_numpy_and_refuse_a_singular_matrix():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6))
    k = a @ a.T + 0.1 * np.eye(6)
    chol = k.copy()
    assert cholesky_in_place(chol)
    np.testing.assert_allclose(np.tril(chol), np.linalg.cholesky(k), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(inverse_from_cholesky(chol), np.linalg.inv(k), rtol=1e-9, atol=1e-9)
    singular = np.ones((3, 3))
    assert not cholesky_in_place(singular)


def test_lgcp_density_is_minus_infinity_where_its_covariance_cannot_be_factored():
    t = wb.posteriors.load("lgcp")
    x = t.initial_point.copy()
    x[1] = 400.0  # an amplitude of e^400 overflows: no Cholesky factor, as PyMC's posdef check
    assert t.logp(x) == -np.inf


def test_brownian_motion_density_is_minus_infinity_not_nan_where_its_precisions_overflow():
    """A diverging trajectory can reach log sd ~ -400, where 1 / sd^2 overflows and a zero
    increment gives 0 x inf: the density is zero there, not undefined."""
    t = wb.posteriors.load("brownian_motion")
    assert t.param_names[:2] == ("sigma_innov_log__", "sigma_obs_log__")
    flat = np.zeros(t.dim)  # every increment zero
    for u_i, u_o in ((-400.0, 0.0), (0.0, -400.0)):
        flat[:2] = u_i, u_o
        lp, g = t.logp_and_grad(flat)
        assert lp == -np.inf and np.all(np.isfinite(g))
    flat[:2] = -300.0, 0.0  # a tiny sd that does not overflow: still a number
    assert not np.isnan(t.logp_and_grad(flat)[0])
