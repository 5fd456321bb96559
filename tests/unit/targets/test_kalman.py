"""workbench/targets/kalman.py: the random walk's filter, smoother and backward sampler
against dense Gaussian algebra."""

import math

import numpy as np
import pytest

from workbench.targets import brownian_motion as B
from workbench.targets.kalman import backward_sample, random_walk_filter, rts_smoother, smoothed_covariance


def _dense(q, r, y, seen):
    """The random walk's joint Gaussian: prior Cov(x_s, x_t) = q (min(s, t) + 1), and the
    observed steps' marginal likelihood and the path's conditional mean and covariance."""
    steps = len(y)
    t = np.arange(steps)
    prior = q * (np.minimum(t[:, None], t[None, :]) + 1.0)
    h = np.eye(steps)[seen]
    s = h @ prior @ h.T + r * np.eye(seen.sum())
    e = y[seen]
    sign, logdet = np.linalg.slogdet(s)
    log_lik = -0.5 * (len(e) * math.log(2 * math.pi) + logdet + e @ np.linalg.solve(s, e))
    gain = prior @ h.T @ np.linalg.inv(s)
    return log_lik, gain @ e, prior - gain @ h @ prior


def test_filter_and_smoother_equal_dense_gaussian_conditioning():
    y, steps = B.data()
    full, seen = B._observations(y, steps)
    q = np.array([0.01, 0.3, 2.0])
    r = np.array([0.02, 0.5, 0.001])
    f = random_walk_filter(full, seen, q, r)
    mean, var, gain = rts_smoother(f)
    cov = smoothed_covariance(var, gain)
    for k in range(len(q)):
        log_lik, m, c = _dense(q[k], r[k], full, seen)
        assert f.log_lik[k] == pytest.approx(log_lik, rel=1e-10)
        np.testing.assert_allclose(mean[:, k], m, atol=1e-10)
        np.testing.assert_allclose(cov[:, :, k], c, atol=1e-10)


def test_backward_sampling_draws_the_smoothed_path():
    y, steps = B.data()
    full, seen = B._observations(y, steps)
    n = 40_000
    f = random_walk_filter(full, seen, np.full(n, 0.05), np.full(n, 0.02))
    x = backward_sample(f, np.random.default_rng(3))  # (T, n)
    mean, var, gain = rts_smoother(random_walk_filter(full, seen, 0.05, 0.02))
    cov = smoothed_covariance(var, gain)
    z = (x.mean(axis=1) - mean) / np.sqrt(var / n)
    assert np.abs(z).max() < 4.5
    # Var of a sample variance of normal draws: 2 var^2 / n
    np.testing.assert_allclose(np.cov(x), cov, atol=4.5 * np.sqrt(2.0 / n) * var.max())
