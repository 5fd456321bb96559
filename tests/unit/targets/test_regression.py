"""workbench/targets/regression.py: the conjugate posterior and the mini-batch form on real data."""

import math

import numpy as np
import pytest
from scipy import stats

import workbench as wb
from workbench.targets.regression import conjugate_posterior

T = wb.targets


def test_conjugate_posterior_matches_brute_force():
    t = T.linear_regression(n_data=25, dim=2, noise_sd=0.7, prior_sd=1.5, seed=4)
    X, y, _ = t.data
    # evidence: the marginal likelihood y ~ N(0, sigma^2 I + tau^2 X X^T), computed directly
    direct = stats.multivariate_normal(np.zeros(len(y)), 0.49 * np.eye(len(y)) + 2.25 * X @ X.T).logpdf(y)
    assert t.truth.log_z == pytest.approx(direct, abs=1e-9)
    # posterior: normalised density on a fine grid
    m, s = t.truth.mean, t.truth.sd
    a = np.linspace(m[0] - 9 * s[0], m[0] + 9 * s[0], 601)
    b = np.linspace(m[1] - 9 * s[1], m[1] + 9 * s[1], 601)
    lp = np.array([[t.logp(np.array([u, v])) for v in b] for u in a])
    w = np.exp(lp - lp.max())
    area = (a[1] - a[0]) * (b[1] - b[0])
    assert lp.max() + math.log(w.sum() * area) == pytest.approx(t.truth.log_z, abs=1e-6)
    w /= w.sum()
    A, B = np.meshgrid(a, b, indexing="ij")
    mean = np.array([(w * A).sum(), (w * B).sum()])
    cov = np.array(
        [
            [(w * (A - mean[0]) ** 2).sum(), (w * (A - mean[0]) * (B - mean[1])).sum()],
            [(w * (A - mean[0]) * (B - mean[1])).sum(), (w * (B - mean[1]) ** 2).sum()],
        ]
    )
    np.testing.assert_allclose(mean, t.truth.mean, atol=1e-6 * s.max())
    np.testing.assert_allclose(cov, t.truth.cov, rtol=1e-5, atol=1e-8)


def test_conjugate_posterior_function_against_textbook_inverse():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    y = rng.standard_normal(40)
    mean, cov, _ = conjugate_posterior(X, y, 0.5, 2.0)
    S = np.linalg.inv(X.T @ X / 0.25 + np.eye(4) / 4.0)
    np.testing.assert_allclose(cov, S, rtol=1e-10)
    np.testing.assert_allclose(mean, S @ X.T @ y / 0.25, rtol=1e-10)


def test_scaled_random_batches_average_to_full_on_real_data():
    t = T.linear_regression("diabetes")
    x = t.truth.mean + 0.3 * t.truth.sd
    full, _ = t.logp_and_grad(x)
    rng = np.random.default_rng(0)
    vals = [t.logp_and_grad_batch(x, rng.choice(t.n_data, 32, replace=False), t.n_data / 32)[0] for _ in range(4000)]
    assert abs(np.mean(vals) - full) < 5 * np.std(vals) / math.sqrt(len(vals))


def test_logistic_log_density_and_gradient_equal_scipys_bernoulli_logit_form():
    """The fused row (one exponential for sigmoid and softplus) against the textbook form,
    at moderate and at extreme linear predictors (|eta| up to about 60); compared as
    differences from theta = 0 so the prior's normalising constant drops out."""
    from scipy.special import expit

    t = T.logistic_regression(n_data=60, dim=4, seed=3)
    X, y, params = t.data
    inv_prior_var = params[0]

    def textbook(theta):
        eta = X @ theta
        loglik = np.sum(stats.bernoulli.logpmf(y, expit(eta))) if np.abs(eta).max() < 30 \
            else np.sum(y * eta - np.logaddexp(0.0, eta))  # expit rounds to 0 or 1 out there
        return loglik - 0.5 * inv_prior_var * theta @ theta

    rng = np.random.default_rng(1)
    for scale in (0.3, 1.0, 20.0):
        theta = scale * rng.standard_normal(4)
        logp, grad = t.logp_and_grad(theta)
        assert logp - t.logp(np.zeros(4)) == pytest.approx(textbook(theta) - textbook(np.zeros(4)), rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(grad, X.T @ (y - expit(X @ theta)) - inv_prior_var * theta, rtol=1e-10, atol=1e-10)
