"""MCMC building blocks: leapfrog, dual averaging, mass-adaptation estimators, window schedule."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc.integrators import leapfrog, leapfrog_dense
from workbench.mcmc.mass_adaptation import (
    gradient_based_variance,
    stan_regularised_variance,
    stan_windows,
    welford_add,
)
from workbench.mcmc.metric import kinetic_energy, kinetic_energy_dense, sample_momentum_dense
from workbench.mcmc.step_size import dual_averaging_start, dual_averaging_update


def _trajectory(target, q0, p0, step, n, inv_mass, dense=False):
    q, p = q0.copy(), p0.copy()
    g = np.empty_like(q)
    lp = target.logp_grad(q, g, target.data)
    step_fn = leapfrog_dense if dense else leapfrog
    for _ in range(n):
        lp = step_fn(target.logp_grad, target.data, q, p, g, step, inv_mass)
    return q, p, lp


@pytest.mark.parametrize("dense", [False, True])
def test_leapfrog_is_time_reversible(dense):
    t = wb.targets.banana(4)  # non-Gaussian: reversibility is not a linear accident
    rng = np.random.default_rng(0)
    q0, p0 = t.truth.sample(1, 1)[0], rng.standard_normal(4)
    inv_mass = np.array([20.0, 1.0, 0.5, 2.0])
    if dense:
        a = rng.standard_normal((4, 4))
        inv_mass = a @ a.T / 4 + np.eye(4)
    q1, p1, _ = _trajectory(t, q0, p0, 0.05, 50, inv_mass, dense)
    q2, p2, _ = _trajectory(t, q1, -p1, 0.05, 50, inv_mass, dense)
    np.testing.assert_allclose(q2, q0, atol=1e-11, rtol=0)
    np.testing.assert_allclose(-p2, p0, atol=1e-11, rtol=0)
    assert np.max(np.abs(q1 - q0)) > 0.1  # it did move


def test_leapfrog_energy_error_shrinks_as_step_squared():
    t = wb.targets.gaussian(5, scales=[0.5, 1.0, 1.5, 2.0, 3.0])
    rng = np.random.default_rng(2)
    q0, p0 = t.truth.sample(1, 3)[0], rng.standard_normal(5)
    inv_mass = np.ones(5)
    h0 = -t.logp(q0) + kinetic_energy(p0, inv_mass)
    steps = np.array([0.2, 0.1, 0.05, 0.025])
    errors = []
    for eps in steps:  # fixed integration time 2.0
        q, p, lp = _trajectory(t, q0, p0, eps, int(round(2.0 / eps)), inv_mass)
        errors.append(abs(-lp + kinetic_energy(p, inv_mass) - h0))
    slope = np.polyfit(np.log(steps), np.log(errors), 1)[0]
    assert slope == pytest.approx(2.0, abs=0.15)


def test_dense_metric_momenta_and_kinetic_energy():
    rng = np.random.default_rng(4)
    mass = np.array([[2.0, 0.6], [0.6, 1.0]])
    chol = np.linalg.cholesky(mass)
    p = np.empty(2)
    draws = np.empty((40_000, 2))
    for i in range(len(draws)):
        sample_momentum_dense(rng, chol, p)
        draws[i] = p
    np.testing.assert_allclose(np.cov(draws.T), mass, atol=0.04)
    inv = np.linalg.inv(mass)
    assert kinetic_energy_dense(draws[0], inv) == pytest.approx(0.5 * draws[0] @ inv @ draws[0])


def test_dual_averaging_finds_the_step_that_gives_the_target_acceptance():
    """On a known acceptance curve a(eps) = exp(-eps^2), it settles where a = target."""
    rng = np.random.default_rng(0)
    state = dual_averaging_start(1.0)
    for _ in range(2000):
        eps = np.exp(state.log_step)
        accept = float(np.exp(-(eps**2)) + 0.05 * rng.standard_normal())
        state = dual_averaging_update(state, accept, 0.8)
    assert np.exp(state.log_step_avg) == pytest.approx(np.sqrt(-np.log(0.8)), rel=0.05)


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
