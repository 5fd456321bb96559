"""workbench/mcmc/integrators.py: the leapfrog step and whole trajectories."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc.integrators import leapfrog, leapfrog_dense
from workbench.mcmc.metric import kinetic_energy


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


def test_integrate_equals_repeated_leapfrog_steps():
    from workbench.mcmc.integrators import integrate

    t = wb.targets.banana(4)
    rng = np.random.default_rng(5)
    q0, p0 = t.truth.sample(1, 2)[0], rng.standard_normal(4)
    inv_mass = np.array([2.0, 1.0, 0.5, 3.0])
    q1, p1, lp1 = _trajectory(t, q0, p0, 0.03, 25, inv_mass)
    q2, p2, g2 = q0.copy(), p0.copy(), np.empty(4)
    t.logp_grad(q2, g2, t.data)
    lp2, n = integrate(t.logp_grad, t.data, q2, p2, g2, 0.03, inv_mass, 25)
    assert n == 25
    np.testing.assert_allclose(q2, q1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p2, p1, rtol=0, atol=1e-12)
    assert lp2 == pytest.approx(lp1, abs=1e-12)


def test_integrate_stops_at_a_non_finite_density():
    from tests.user_functions import nan_beyond_one_and_half
    from workbench.mcmc.integrators import integrate

    t = wb.Target.from_numba(nan_beyond_one_and_half, 2)
    q, p, g = np.zeros(2), np.array([5.0, 0.0]), np.zeros(2)
    lp, n = integrate(t.logp_grad, t.data, q, p, g, 0.1, np.ones(2), 100)
    assert np.isnan(lp) and n < 10 and q[0] > 1.5


# --- the no-U-turn checks, against the recursive definition computed by brute force ---


