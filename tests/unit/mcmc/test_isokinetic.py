"""workbench/mcmc/isokinetic.py against the dynamics' derivation: the velocity stays on the unit
sphere, the energy (-log p plus the accumulated kinetic change) is conserved to second order in
the step for both integrators, and the minimal-norm scheme's constant is smaller."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc import isokinetic as I

TARGET = wb.targets.gaussian(50, scales="logspace")


def _max_energy_error(integrator, eps, time=5.0):
    t = TARGET
    x = t.truth.sample(1, np.random.default_rng(1))[0].copy()
    u = np.empty(t.dim)
    I.random_unit_vector(np.random.default_rng(3), u)
    sigma = np.asarray(t.truth.sd, dtype=float).copy()  # preconditioned: a unit-scale Gaussian in y
    g, gy, work = np.empty(t.dim), np.empty(t.dim), np.empty((I.N_WORK, t.dim))
    lp0 = t.kernel_logp_grad(x, g, t.kernel_data)
    gy[:] = sigma * g
    kinetic, worst = 0.0, 0.0
    for _ in range(int(round(time / eps))):
        lp, dk, _ = I.isokinetic_step(t.kernel_logp_grad, t.kernel_data, integrator, x, u, gy, sigma, eps, work)
        kinetic += dk
        worst = max(worst, abs(kinetic - (lp - lp0)))
        assert abs(np.linalg.norm(u) - 1.0) < 1e-12
    return worst


@pytest.mark.parametrize("integrator", [I.LEAPFROG, I.MINIMAL_NORM], ids=["leapfrog", "minimal_norm"])
def test_energy_error_falls_as_the_step_squared(integrator):
    errors = [_max_energy_error(integrator, eps) for eps in (0.2, 0.1, 0.05)]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    np.testing.assert_allclose(ratios, 4.0, rtol=0.1)  # second order: halving the step quarters the error


def test_the_minimal_norm_integrator_has_the_smaller_error_per_gradient():
    # at equal gradients (two per minimal-norm step), the minimal-norm error is still smaller
    assert _max_energy_error(I.MINIMAL_NORM, 0.2) < _max_energy_error(I.LEAPFROG, 0.1)


def test_velocity_update_with_no_gradient_leaves_the_velocity_and_the_energy():
    u = np.array([0.6, 0.8])
    assert I.velocity_update(u, np.zeros(2), 1.0) == 0.0 and np.allclose(u, [0.6, 0.8])


def test_partial_refresh_keeps_the_sphere_and_decoheres_over_l():
    rng = np.random.default_rng(0)
    u = np.zeros(100)
    u[0] = 1.0
    I.partial_refresh(rng, u, 1e-6, 1.0)  # eps << L: nearly unchanged
    assert u[0] > 0.99 and abs(np.linalg.norm(u) - 1.0) < 1e-12
    I.partial_refresh(rng, u, 50.0, 1.0)  # eps >> L: a fresh direction
    assert abs(u[0]) < 0.5
