"""workbench/approximations.py: log densities against SciPy."""


import numpy as np
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


