"""workbench/mcmc/mass_adaptation.py: Welford, the two variance estimators, Stan's windows."""

import numpy as np
import pytest

from workbench.mcmc.mass_adaptation import (
    gradient_based_variance,
    stan_regularised_variance,
    stan_windows,
    welford_add,
)


def test_welford_and_the_two_variance_estimators():
    rng = np.random.default_rng(1)
    sd = np.array([0.1, 1.0, 10.0])
    x = rng.standard_normal((5000, 3)) * sd
    grad = -x / sd**2  # the gradient of a Gaussian log density
    mean, m2, gm, gm2 = (np.zeros(3) for _ in range(4))
    n = 0
    for xi, gi in zip(x, grad):
        welford_add(gm, gm2, n, gi)
        n = welford_add(mean, m2, n, xi)
    np.testing.assert_allclose(mean, x.mean(0), atol=1e-12)
    np.testing.assert_allclose(m2 / (n - 1), x.var(0, ddof=1), rtol=1e-10)
    stan = np.empty(3)
    stan_regularised_variance(m2, n, stan)
    np.testing.assert_allclose(stan, n / (n + 5) * x.var(0, ddof=1) + 1e-3 * 5 / (n + 5), rtol=1e-10)
    grad_based = np.ones(3)
    gradient_based_variance(m2, gm2, grad_based)
    np.testing.assert_allclose(grad_based, sd**2, rtol=0.05)


def test_gradient_based_estimate_needs_few_draws():
    """Two Gaussian draws already fix sigma^2 exactly: x / grad = -sigma^2 for each of them."""
    sd = np.array([0.1, 3.0])
    x = np.array([[0.05, 1.0], [-0.2, 4.0], [0.1, -2.0]]) * np.array([1.0, 1.0])
    grad = -x / sd**2
    mean, m2, gm, gm2 = (np.zeros(2) for _ in range(4))
    n = 0
    for xi, gi in zip(x, grad):
        welford_add(gm, gm2, n, gi)
        n = welford_add(mean, m2, n, xi)
    out = np.ones(2)
    gradient_based_variance(m2, gm2, out)
    np.testing.assert_allclose(out, sd**2, rtol=1e-10)


@pytest.mark.parametrize(
    "n_warmup, start, ends",
    [
        (1000, 75, [100, 150, 250, 450, 950]),
        (200, 75, [100, 150]),
        (100, 15, [90]),  # buffers shrink to 15% / 10% when the defaults do not fit
        (10, 10, []),
    ],
)
def test_stan_window_schedule(n_warmup, start, ends):
    s, e = stan_windows(n_warmup)
    assert s == start and e.tolist() == ends


