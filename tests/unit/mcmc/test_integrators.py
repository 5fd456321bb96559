"""workbench/mcmc/integrators.py: the leapfrog step and whole trajectories, under every metric."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc.integrators import leapfrog
from workbench.mcmc.metric import (
    from_position,
    inverse_metric,
    kinetic_energy,
    metric_transform,
    potential,
    to_position,
    to_transformed_gradient,
)


def make_metric(kind, dim, seed=0):
    """(inv_mass, transform, dense M^-1) of a diagonal (transform None), low-rank (k = 2) or dense metric."""
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.5, 2.0, dim)
    if kind == "diag":
        return sigma**2, None, np.diag(sigma**2)
    k = 2 if kind == "low_rank" else dim
    vecs = np.linalg.qr(rng.standard_normal((dim, k)))[0].T  # orthonormal rows
    vals = rng.uniform(0.1, 20.0, k)
    t = metric_transform(dim, k)
    t.sigma[:] = sigma
    t.vecs[:k] = vecs
    t.sqrt_vals[:k] = np.sqrt(vals)
    t.rank[0] = k
    return np.ones(dim), t, inverse_metric(sigma, vecs, vals)


def _trajectory(target, q0, p0, step, n, inv_mass, transform=None):
    """n leapfrog steps from (q0, p0) in the trajectory's coordinates (y = A^-1 x under a map)."""
    q, p = q0.copy(), p0.copy()
    g = np.empty_like(q)
    lp = potential(target.logp_grad, target.data, q, g, transform)
    for _ in range(n):
        lp = leapfrog(target.logp_grad, target.data, q, p, g, step, inv_mass, transform)
    return q, p, lp


METRIC_KINDS = ["diag", "low_rank", "dense"]


@pytest.mark.parametrize("kind", METRIC_KINDS)
def test_leapfrog_is_time_reversible(kind):
    t = wb.targets.banana(4)  # non-Gaussian: reversibility is not a linear accident
    rng = np.random.default_rng(0)
    inv_mass, transform, _ = make_metric(kind, 4)
    y0, p0 = t.truth.sample(1, 1)[0], rng.standard_normal(4)
    if kind != "diag":
        from_position(transform, t.truth.sample(1, 1)[0], y0)
    y1, p1, _ = _trajectory(t, y0, p0, 0.05, 50, inv_mass, transform)
    y2, p2, _ = _trajectory(t, y1, -p1, 0.05, 50, inv_mass, transform)
    np.testing.assert_allclose(y2, y0, atol=1e-10, rtol=0)
    np.testing.assert_allclose(-p2, p0, atol=1e-10, rtol=0)
    assert np.max(np.abs(y1 - y0)) > 0.1  # it did move


@pytest.mark.parametrize("kind", METRIC_KINDS)
def test_leapfrog_energy_error_shrinks_as_step_squared(kind):
    t = wb.targets.gaussian(5, scales=[0.5, 1.0, 1.5, 2.0, 3.0])
    rng = np.random.default_rng(2)
    inv_mass, transform, _ = make_metric(kind, 5, seed=1)
    y0, p0 = t.truth.sample(1, 3)[0], rng.standard_normal(5)
    if kind != "diag":
        from_position(transform, t.truth.sample(1, 3)[0], y0)
    x0 = _apply(transform, y0) if kind != "diag" else y0
    h0 = -t.logp(x0) + kinetic_energy(p0, inv_mass)
    steps = np.array([0.1, 0.05, 0.025, 0.0125])
    errors = []
    for eps in steps:  # fixed integration time 1.0
        q, p, lp = _trajectory(t, y0, p0, eps, int(round(1.0 / eps)), inv_mass, transform)
        errors.append(abs(-lp + kinetic_energy(p, inv_mass) - h0))
    slope = np.polyfit(np.log(steps), np.log(errors), 1)[0]
    assert slope == pytest.approx(2.0, abs=0.15)


@pytest.mark.parametrize("kind", ["low_rank", "dense"])
def test_transformed_leapfrog_is_the_dense_metric_leapfrog(kind):
    """Leapfrog on y = A^-1 x with the identity metric is, mapped back (x = A y, p_x = A^-T p_y),
    the leapfrog on x with M^-1 = A A^T, step for step; and 1/2 |p_y|^2 = 1/2 p_x^T M^-1 p_x."""
    t = wb.targets.banana(4)
    rng = np.random.default_rng(7)
    inv_mass, transform, m_inv = make_metric(kind, 4, seed=3)
    x = t.truth.sample(1, 5)[0]
    p_x = rng.standard_normal(4)
    # the reference: leapfrog on x with the dense inverse metric
    xr, pr = x.copy(), p_x.copy()
    gr = np.empty(4)
    t.logp_grad(xr, gr, t.data)
    for _ in range(30):
        pr += 0.5 * 0.04 * gr
        xr += 0.04 * m_inv @ pr
        t.logp_grad(xr, gr, t.data)
        pr += 0.5 * 0.04 * gr
    # the transformed trajectory: y = A^-1 x, p_y = A^T p_x with this map's A
    y = np.empty(4)
    from_position(transform, x, y)
    a_map = np.column_stack([_apply(transform, e) for e in np.eye(4)])  # A as a matrix
    p_y = a_map.T @ p_x
    y1, p1, _ = _trajectory(t, y, p_y, 0.04, 30, inv_mass, transform)
    x1 = np.empty(4)
    to_position(transform, y1, x1)
    np.testing.assert_allclose(x1, xr, atol=1e-10)
    np.testing.assert_allclose(np.linalg.solve(a_map.T, p1), pr, atol=1e-10)
    assert kinetic_energy(p1, inv_mass) == pytest.approx(0.5 * pr @ m_inv @ pr, rel=1e-10)
    grad_y = np.empty(4)
    to_transformed_gradient(transform, gr, grad_y)
    np.testing.assert_allclose(grad_y, a_map.T @ gr, atol=1e-12)


def _apply(transform, y):
    x = np.empty(y.size)
    to_position(transform, np.ascontiguousarray(y), x)
    return x


def test_integrate_equals_repeated_leapfrog_steps():
    from workbench.mcmc.integrators import integrate

    t = wb.targets.banana(4)
    rng = np.random.default_rng(5)
    q0, p0 = t.truth.sample(1, 2)[0], rng.standard_normal(4)
    inv_mass = np.array([2.0, 1.0, 0.5, 3.0])
    q1, p1, lp1 = _trajectory(t, q0, p0, 0.03, 25, inv_mass)
    q2, p2, g2 = q0.copy(), p0.copy(), np.empty(4)
    t.logp_grad(q2, g2, t.data)
    lp2, n = integrate(t.logp_grad, t.data, q2, p2, g2, 0.03, inv_mass, None, 25)
    assert n == 25
    np.testing.assert_allclose(q2, q1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p2, p1, rtol=0, atol=1e-12)
    assert lp2 == pytest.approx(lp1, abs=1e-12)


def test_integrate_stops_at_a_non_finite_density():
    from tests.user_functions import nan_beyond_one_and_half
    from workbench.mcmc.integrators import integrate

    t = wb.Target.from_numba(nan_beyond_one_and_half, 2)
    q, p, g = np.zeros(2), np.array([5.0, 0.0]), np.zeros(2)
    lp, n = integrate(t.logp_grad, t.data, q, p, g, 0.1, np.ones(2), None, 100)
    assert np.isnan(lp) and n < 10 and q[0] > 1.5


# --- the no-U-turn checks, against the recursive definition computed by brute force ---


