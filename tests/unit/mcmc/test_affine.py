"""workbench/mcmc/affine.py: the whitened density and its gradient against finite differences,
and the shrinkage covariance's factor against a known covariance."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc.affine import affine_target, dense_factor


def test_the_whitened_density_is_the_target_at_m_plus_cz_with_gradient_ct_g():
    target = wb.targets.logistic_regression(dataset="breast_cancer")
    rng = np.random.default_rng(0)
    d = target.dim
    mean = 0.1 * rng.standard_normal(d)
    chol = np.tril(0.05 * rng.standard_normal((d, d))) + np.diag(rng.uniform(0.05, 0.3, d))
    whitened = affine_target(target, mean, chol)
    z = rng.standard_normal(d)
    lp_z, g_z = whitened.logp_and_grad(z)
    lp_x, g_x = target.logp_and_grad(mean + chol @ z)
    assert lp_z == pytest.approx(lp_x, rel=1e-12)
    np.testing.assert_allclose(g_z, chol.T @ g_x, rtol=1e-12, atol=1e-12)
    assert wb.check_gradient(whitened, points=rng.standard_normal((3, d))).max_rel_error < 1e-5


def test_the_dense_factor_recovers_a_correlated_covariance():
    target = wb.targets.gaussian(6, scales=np.array([0.1, 0.5, 1.0, 2.0, 5.0, 10.0]), correlation=0.9)
    draws = target.truth.sample(20_000, np.random.default_rng(1))
    mean, chol = dense_factor(draws)
    sd = target.truth.sd
    np.testing.assert_allclose(mean / sd, target.truth.mean / sd, atol=0.03)  # 4 MCSE of a mean: 0.03 sd
    np.testing.assert_allclose((chol @ chol.T) / np.outer(sd, sd), target.truth.cov / np.outer(sd, sd), atol=0.04)
