"""workbench/targets/noncentered.py: the whitened forms are the same posteriors as the centred
ones (the densities differ by the map's log Jacobian, exactly), their gradients are right, and
the reverse-mode Cholesky against finite differences."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench.targets import latent, noncentered
from workbench.targets.eight_schools import noncentered_to_centered


def _random_points(target, rng, n=4, scale=0.3):
    return target.initial_point + scale * rng.standard_normal((n, target.dim))


def test_cholesky_backward_is_the_gradient_through_the_factor():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((7, 7))
    k = a @ a.T + 0.5 * np.eye(7)
    weights = np.tril(rng.standard_normal((7, 7)))  # F(A) = sum of weights * chol(A)

    def f(m):
        return float(np.sum(weights * np.linalg.cholesky(m)))

    chol = k.copy()
    assert latent.cholesky_in_place(chol)
    lbar = weights.copy()
    noncentered.cholesky_backward(np.tril(chol), lbar)
    h = 1e-6
    for i in range(7):
        for j in range(i + 1):
            dk = np.zeros((7, 7))
            dk[i, j] = dk[j, i] = h  # the lower element i >= j and its mirror: one input
            numeric = (f(k + dk) - f(k - dk)) / (2 * h)
            assert lbar[i, j] == pytest.approx(numeric, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("name", ["stochastic_volatility", "lgcp"])
def test_whitened_gradients_match_central_differences(name):
    form = wb.posteriors.load(name).reparametrization.build()
    points = _random_points(form, np.random.default_rng(3), 3)
    assert wb.check_gradient(form, points=points).max_rel_error < 1e-5


def _log_jacobian(name, z):
    if name == "eight_schools_centered":
        return 8 * z[1]  # theta = mu + tau eta: tau^8
    if name == "stochastic_volatility":
        phi = 2.0 / (1.0 + math.exp(-z[1])) - 1.0
        n = z.size - 3
        return n * z[2] - 0.5 * math.log(1.0 - phi * phi)  # diag(sigma / sqrt(1 - phi^2), sigma, ...)
    x, _, _ = latent.lgcp_data()
    k = math.exp(2 * z[1]) * np.exp(-np.abs(x[:, None] - x[None, :]) / math.exp(z[0])) + latent.LGCP_JITTER * np.eye(x.size)
    return float(np.log(np.diag(np.linalg.cholesky(k))).sum())  # f = m + L e


@pytest.mark.parametrize("name", ["eight_schools_centered", "stochastic_volatility", "lgcp"])
def test_the_whitened_form_is_the_same_posterior_mapped(name):
    """log p_whitened(z) = log p_centred(T(z)) + log |det dT/dz| at random points: the two
    normalised densities are one distribution, so draws of one, mapped, are draws of the other."""
    target = wb.posteriors.load(name)
    form = target.reparametrization.build()
    for z in _random_points(form, np.random.default_rng(1)):
        centred = target.reparametrization.to_target(z)
        assert form.logp(z) == pytest.approx(target.logp(centred) + _log_jacobian(name, z), rel=1e-9, abs=1e-8)


def test_the_maps_work_on_stacked_draws():
    rng = np.random.default_rng(2)
    z = rng.standard_normal((3, 5, 10))
    out = noncentered_to_centered(z)
    assert out.shape == z.shape
    np.testing.assert_allclose(out[1, 2], noncentered_to_centered(z[1, 2]))
    sv = wb.posteriors.load("stochastic_volatility").reparametrization
    zs = 0.3 * rng.standard_normal((2, 4, 103))
    np.testing.assert_allclose(sv.to_target(zs)[1, 3], sv.to_target(zs[1, 3]))
