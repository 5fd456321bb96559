"""workbench/approximations.py: log densities against SciPy."""


import numpy as np
import pytest
from scipy import stats

from workbench.approximations import Gaussian, StudentT


def test_approximations_logpdf_match_scipy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    x = rng.standard_normal((5, 3))
    np.testing.assert_allclose(Gaussian(np.ones(3), cov).logpdf(x), stats.multivariate_normal(np.ones(3), cov).logpdf(x))
    np.testing.assert_allclose(StudentT(np.ones(3), cov, 4).logpdf(x), stats.multivariate_t(np.ones(3), cov, df=4).logpdf(x))
    draws = StudentT(np.zeros(3), cov, 6).sample(200_000, rng)
    np.testing.assert_allclose(np.cov(draws.T), cov * 6 / 4, rtol=0.05, atol=0.05)




def test_low_rank_gaussian_against_its_dense_covariance():
    """diag(alpha) + beta gamma beta^T through the thin QR (Pathfinder's Algorithm 4): the
    density equals SciPy's with the dense matrix, the sds its diagonal, and the map from
    standard normals has A A^T = cov; also when the rank exceeds d."""
    from workbench.approximations import LowRankGaussian

    rng = np.random.default_rng(1)
    for d, m in [(7, 4), (3, 6)]:
        alpha = rng.uniform(0.5, 2.0, d)
        beta = rng.standard_normal((d, m))
        g = rng.standard_normal((m, m))
        q = LowRankGaussian(rng.standard_normal(d), alpha, beta, 0.1 * g @ g.T)
        x = rng.standard_normal((5, d))
        np.testing.assert_allclose(q.logpdf(x), stats.multivariate_normal(q.mean, q.cov).logpdf(x), rtol=1e-10)
        np.testing.assert_allclose(q.sd, np.sqrt(np.diag(q.cov)), rtol=1e-12)
        a_t = q.transform(np.eye(d)) - q.mean  # rows A e_i: A^T
        np.testing.assert_allclose(a_t.T @ a_t, q.cov, atol=1e-12)
        np.testing.assert_allclose(q.marginal_pdf(0, 0.3), stats.norm.pdf(0.3, q.mean[0], q.sd[0]))
        draws, log_q = q.sample_with_logpdf(4, rng)
        np.testing.assert_allclose(log_q, q.logpdf(draws), rtol=1e-10)


def test_low_rank_gaussian_refuses_a_covariance_that_is_not_positive_definite():
    from workbench.approximations import LowRankGaussian

    with pytest.raises(np.linalg.LinAlgError):
        LowRankGaussian(np.zeros(2), np.ones(2), np.eye(2), -2.0 * np.eye(2))
    with pytest.raises(np.linalg.LinAlgError):
        LowRankGaussian(np.zeros(2), np.array([1.0, -1.0]), np.eye(2), np.eye(2))


def test_mixture_logpdf_in_blocks_matches_scipy(monkeypatch):
    """The mixture density is evaluated a component and a block of points at a time (O(block x d)
    memory); blocks of 3 points give scipy's values, as one block does."""
    from scipy import stats

    import workbench.approximations as A

    rng = np.random.default_rng(0)
    q = A.GaussianMixture(np.array([0.2, 0.3, 0.5]), rng.standard_normal((3, 7)), np.exp(rng.standard_normal((3, 7))))
    x = rng.standard_normal((50, 7))
    exact = np.log(sum(w * stats.multivariate_normal(m, np.diag(s**2)).pdf(x)
                       for w, m, s in zip(q.weights, q.means, q.scales)))
    np.testing.assert_allclose(q.logpdf(x), exact, rtol=1e-12)
    monkeypatch.setattr(A, "_BLOCK_FLOATS", 21)
    np.testing.assert_allclose(q.logpdf(x), exact, rtol=1e-12)


def test_full_covariance_mixture_against_scipy_and_its_own_draws():
    from scipy.special import logsumexp

    from workbench.approximations import FullCovarianceMixture

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3))
    covs = a @ a.transpose(0, 2, 1) + np.eye(3)
    means = np.array([[0.0, 1.0, -1.0], [4.0, 0.0, 2.0]])
    q = FullCovarianceMixture([0.25, 0.75], means, np.linalg.cholesky(covs))
    x = rng.standard_normal((5, 3))
    expected = logsumexp(np.stack([np.log(w) + stats.multivariate_normal.logpdf(x, m, c)
                                   for w, m, c in zip([0.25, 0.75], means, covs)], axis=-1), axis=-1)
    np.testing.assert_allclose(q.logpdf(x), expected, rtol=1e-10)
    draws = q.sample(200_000, rng)
    assert np.all(np.abs(draws.mean(0) - q.mean) < 4 * q.sd / np.sqrt(len(draws)))  # 4 Monte Carlo standard errors
    np.testing.assert_allclose(np.cov(draws.T), q.cov, rtol=0.03, atol=0.03)
    np.testing.assert_allclose(np.sqrt(np.diag(q.cov)), q.sd, rtol=1e-12)
    grid = np.linspace(-15, 20, 4001)
    assert np.trapezoid(q.marginal_pdf(1, grid), grid) == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(ValueError, match="disagree"):
        FullCovarianceMixture([1.0], means, np.linalg.cholesky(covs))
