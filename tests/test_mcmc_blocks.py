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


def _persists(inv_mass, p_a, p_b, rho):
    return (inv_mass * p_a) @ rho > 0 and (inv_mass * p_b) @ rho > 0


def _block_ok(ps, inv_mass, start, size):
    """A block's own criterion and, for size >= 4, the two merge checks of its halves (Stan)."""
    end, half = start + size - 1, size // 2
    ok = _persists(inv_mass, ps[start], ps[end], ps[start : end + 1].sum(0))
    if size >= 4:
        mid = start + half
        ok = ok and _persists(inv_mass, ps[start], ps[mid], ps[start:mid].sum(0) + ps[mid])
        ok = ok and _persists(inv_mass, ps[mid - 1], ps[end], ps[mid - 1] + ps[mid : end + 1].sum(0))
    return ok


def _first_turn_by_recursion(ps, inv_mass):
    """The leaf at which a recursive builder (post-order over the blocks) first sees a U-turn,
    and whether only a merge check caught it there.

    Post-order visits blocks by increasing end leaf, so that is the smallest end leaf of any
    block that turns; None if none does."""
    n = len(ps)
    failing = [(start + size - 1, start, size) for size in (2**k for k in range(1, n.bit_length()))
               for start in range(0, n, size) if not _block_ok(ps, inv_mass, start, size)]
    if not failing:
        return None, False
    end, start, size = min(failing)
    own = _persists(inv_mass, ps[start], ps[end], ps[start : end + 1].sum(0))
    return end, own


def _momenta(rng, n, d):
    """Momenta that rotate (so some blocks turn back), plus noise."""
    omega = rng.uniform(0.05, 1.5)
    t = np.arange(n)
    ps = np.zeros((n, d))
    ps[:, 0] = np.cos(omega * t)
    ps[:, 1] = np.sin(omega * t)
    return ps + 0.3 * rng.standard_normal((n, d)) + rng.uniform(-0.5, 0.5, d)


def test_leaf_by_leaf_checks_equal_the_recursive_no_u_turn_checks():
    from workbench.mcmc.termination import add_leaf, checkpoints

    rng = np.random.default_rng(0)
    blocks, merge_only = set(), 0
    for case in range(400):
        depth, d = int(rng.integers(1, 7)), int(rng.integers(2, 5))
        ps = _momenta(rng, 2**depth, d)
        inv_mass = rng.uniform(0.5, 2.0, d)
        expected, own_criterion_held = _first_turn_by_recursion(ps, inv_mass)
        ckpt, psum, got = checkpoints(depth, d), np.zeros(d), None
        for n, p in enumerate(ps):
            psum += p
            if not add_leaf(n, p, psum, inv_mass, ckpt):
                got = n
                break
        assert got == expected, (case, depth, got, expected)
        # the size of the block that turned: 2^(trailing one bits of its last leaf)
        blocks.add(None if expected is None else len(bin(expected + 1)) - len(bin(expected + 1).rstrip("0")))
        merge_only += expected is not None and own_criterion_held
    assert {None, 1, 2, 3} <= blocks  # no turn, and turns in blocks of 2, 4 and 8 leaves
    assert merge_only > 5  # turns that only the checks across merged halves catch


def test_merge_checks_of_a_new_subtree_with_the_trajectory():
    from workbench.mcmc.termination import merged_trajectory_persists

    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(300):
        d, size = 3, 2 ** int(rng.integers(0, 5))
        ps = _momenta(rng, 2 * size, d)  # time order: old trajectory, then the new subtree
        inv_mass = rng.uniform(0.5, 2.0, d)
        old, new = ps[:size], ps[size:]
        expected = _block_ok(ps, inv_mass, 0, 2 * size) if size >= 2 else _persists(
            inv_mass, ps[0], ps[1], ps.sum(0))
        rho = old.sum(0)
        got = merged_trajectory_persists(old[0], old[-1], rho, new[0], new[-1], new.sum(0), inv_mass)
        assert got == expected
        np.testing.assert_allclose(rho, ps.sum(0))  # the trajectory's new momentum sum
        seen.add(got)
    assert seen == {True, False}
