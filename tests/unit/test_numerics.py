"""workbench/numerics.py: the stable scalar helpers against SciPy and NumPy."""

import math

import numpy as np
import pytest
from scipy import special, stats

from workbench.numerics import log1pexp, logsumexp, mvn_logp_grad, sigmoid, sigmoid_and_log1pexp


@pytest.mark.parametrize("x", [-800.0, -40.0, -1.0, 0.0, 1e-8, 3.0, 40.0, 800.0])
def test_log1pexp_and_sigmoid_are_stable_where_the_naive_forms_overflow(x):
    assert log1pexp(x) == pytest.approx(np.logaddexp(0.0, x), rel=1e-14, abs=1e-300)
    assert sigmoid(x) == pytest.approx(special.expit(x), rel=1e-14, abs=1e-300)
    prob, softplus = sigmoid_and_log1pexp(x)  # the two from one exponential
    assert prob == pytest.approx(special.expit(x), rel=1e-14, abs=1e-300)
    assert softplus == pytest.approx(np.logaddexp(0.0, x), rel=1e-14, abs=1e-300)


def test_logsumexp_matches_scipy_including_empty_and_all_minus_infinity():
    values = np.array([-1000.0, -999.0, 3.0, 2.5])
    assert logsumexp(values) == pytest.approx(special.logsumexp(values), rel=1e-14)
    assert logsumexp(np.array([-np.inf, -np.inf])) == -math.inf
    assert logsumexp(np.zeros(0)) == -math.inf


def test_mvn_logp_grad_with_dense_or_diagonal_precision_matches_scipy_up_to_its_constant():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    mean, x = rng.standard_normal(3), rng.standard_normal(3)
    log_norm = stats.multivariate_normal(mean, cov).logpdf(mean)
    g = np.empty(3)
    assert mvn_logp_grad(x, g, mean, np.linalg.inv(cov), log_norm) == pytest.approx(
        stats.multivariate_normal(mean, cov).logpdf(x), rel=1e-12)
    np.testing.assert_allclose(g, -np.linalg.solve(cov, x - mean), rtol=1e-10)
    sd = np.array([0.5, 1.0, 2.0])
    lp = mvn_logp_grad(x, g, mean, (1 / sd**2)[None, :], 0.0)
    assert lp == pytest.approx(-0.5 * np.sum(((x - mean) / sd) ** 2), rel=1e-12)
    np.testing.assert_allclose(g, -(x - mean) / sd**2, rtol=1e-12)
