"""The reference distribution's density and gradient against SciPy."""

import numpy as np
import pytest
from scipy import stats

import workbench as wb
from workbench.numerics import mvn_logp_grad
from workbench.smc.reference import as_reference, diagonal_gaussian, gaussian


def _check(ref, mean, cov):
    rng = np.random.default_rng(1)
    x = ref.sample(5, rng)
    want = stats.multivariate_normal(mean, cov).logpdf(x)
    assert ref.logpdf(x) == pytest.approx(want)
    for xi in x:
        g = np.empty(mean.size)
        assert mvn_logp_grad(xi, g, ref.mean, ref.precision, ref.log_norm) == pytest.approx(
            stats.multivariate_normal(mean, cov).logpdf(xi))
        np.testing.assert_allclose(g, -np.linalg.solve(cov, xi - mean), rtol=1e-10, atol=1e-12)


def test_a_diagonal_reference_is_stored_as_one_row_and_matches_scipy():
    mean, sd = np.array([1.0, -2.0, 0.5]), np.array([0.5, 2.0, 3.0])
    ref = diagonal_gaussian(mean, sd, "test")
    assert ref.diagonal and ref.precision.shape == (1, 3)
    _check(ref, mean, np.diag(sd**2))


def test_a_dense_reference_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    cov = a @ a.T + 4 * np.eye(4)
    mean = rng.normal(size=4)
    ref = gaussian(mean, cov, "test")
    assert not ref.diagonal
    _check(ref, mean, cov)


def test_fitted_gaussians_and_priors_become_references_and_others_are_refused():
    t = wb.targets.linear_regression(dataset="diabetes")
    ref = as_reference(t.prior, t.dim, "prior")
    assert ref.diagonal and ref.dim == t.dim
    low_rank = wb.approximations.LowRankGaussian(np.zeros(3), np.ones(3), np.ones((3, 1)), np.eye(1))
    assert as_reference(low_rank, 3, "pathfinder").dim == 3
    with pytest.raises(ValueError, match="dimension 3 but the target has dimension 5"):
        as_reference(low_rank, 5, "x")
    with pytest.raises(ValueError, match="reference must be"):
        as_reference(wb.approximations.StudentT(np.zeros(2), np.eye(2)), 2, "t")
    with pytest.raises(ValueError, match="not positive definite"):
        gaussian(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]), "bad")
