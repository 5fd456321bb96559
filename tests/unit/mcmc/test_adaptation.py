"""workbench/mcmc/adaptation.py: the warmup schedule and the metric estimators."""

import numpy as np
import pytest

from workbench.mcmc.adaptation import gradient_based_variance, stan_regularised_variance, stan_windows, welford_add


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




# --- the schedule ---------------------------------------------------------------------------

from workbench.mcmc import adaptation as A  # noqa: E402
from workbench.mcmc.metric import inverse_metric  # noqa: E402


def _iterations(flags, flag):
    return np.flatnonzero(flags & flag).tolist()


def test_stan_schedule_updates_at_each_window_end_and_restarts_the_step():
    s = A.warmup_schedule(1000, A.METRIC_DIAG_STAN)
    ends = [100, 150, 250, 450, 950]
    assert _iterations(s.flags, A.UPDATE_METRIC) == [e - 1 for e in ends]
    assert _iterations(s.flags, A.RESTART_STEP) == [e - 1 for e in ends]
    assert _iterations(s.flags, A.RESET_WINDOW) == [e - 1 for e in ends]
    assert _iterations(s.flags, A.COLLECT) == list(range(75, 950))
    assert _iterations(s.flags, A.FINAL_STEP) == [999] and np.all(s.flags & A.ADAPT_STEP)
    assert s.window_capacity == 500


def test_windowed_schedules_switch_early_and_late_and_stop_adapting_the_metric():
    diag = A.warmup_schedule(1000, A.METRIC_DIAG)
    low = A.warmup_schedule(1000, A.METRIC_LOW_RANK)
    for s in (diag, low):
        assert _iterations(s.flags, A.COLLECT) == list(range(850))  # the last 15% adapt the step only
        switches = _iterations(s.flags, A.SWITCH_WINDOW)
        assert switches[:3] == [9, 19, 29] and np.all(np.diff(switches)[-3:] == 80)
        assert _iterations(s.flags, A.FINAL_STEP) == [999]
        assert 849 in _iterations(s.flags, A.UPDATE_METRIC)
        assert s.window_capacity == 160  # a background of 80 on top of a foreground of 80
        # the kernel re-enters the low-rank map's coordinates from the draw and gradient it
        # has just collected: an update must never come without a COLLECT
        assert set(_iterations(s.flags, A.UPDATE_METRIC)) <= set(_iterations(s.flags, A.COLLECT))
    # the diagonal is refreshed after every draw from the third on; the eigen-decomposition
    # every draw of the first window and then once per window
    assert _iterations(diag.flags, A.UPDATE_METRIC) == list(range(2, 850))
    assert _iterations(low.flags, A.UPDATE_METRIC)[:9] == [2, 3, 4, 5, 6, 7, 8, 9, 19]
    assert len(_iterations(low.flags, A.UPDATE_METRIC)) < 50
    # dual averaging runs on through the whole warmup; the low-rank and dense metrics restart it
    # once, at their first estimate, which replaces the identity they start from
    assert not np.any(diag.flags & A.RESTART_STEP)
    for metric in (A.METRIC_LOW_RANK, A.METRIC_DENSE):
        assert _iterations(A.warmup_schedule(1000, metric).flags, A.RESTART_STEP) == [2]
    assert not np.any(A.warmup_schedule(1000, A.METRIC_LOW_RANK, adapt_step=False).flags & A.RESTART_STEP)


def test_no_warmup_and_no_step_adaptation_schedules():
    assert A.warmup_schedule(0, A.METRIC_DIAG).flags.size == 0
    s = A.warmup_schedule(100, A.METRIC_IDENTITY)
    assert np.all(s.flags == A.ADAPT_STEP | (np.arange(100) == 99) * A.FINAL_STEP)
    s = A.warmup_schedule(100, A.METRIC_DIAG, adapt_step=False)
    assert not np.any(s.flags & (A.ADAPT_STEP | A.FINAL_STEP | A.RESTART_STEP))


# --- the estimators, without a chain ----------------------------------------------------------

def test_diag_estimator_windows_forget_the_old_foreground():
    rng = np.random.default_rng(3)
    sd = np.array([0.5, 4.0])
    state = A.diag_init(2)
    for x in rng.standard_normal((30, 2)) * 100:  # a transient far from the posterior
        A.diag_update(state, x, rng.standard_normal(2))
    A.diag_switch(state)
    A.diag_switch(state)  # both windows are now empty of the transient
    x = rng.standard_normal((200, 2)) * sd
    for xi in x:
        A.diag_update(state, xi, -xi / sd**2)
    inv_mass = np.ones(2)
    A.diag_final(state, inv_mass)
    np.testing.assert_allclose(inv_mass, sd**2, rtol=1e-10)  # exact for a Gaussian's draws and gradients
    assert state.counts.tolist() == [200, 200]


def test_stan_estimator_is_the_shrunk_window_variance():
    x = np.random.default_rng(1).standard_normal((50, 3)) * [1.0, 2.0, 3.0]
    state = A.diag_init(3)
    for xi in x:
        A.stan_update(state, xi)
    out = np.empty(3)
    A.stan_final(state, out)
    np.testing.assert_allclose(out, 50 / 55 * x.var(0, ddof=1) + 1e-3 * 5 / 55, rtol=1e-10)
    A.stan_reset(state)
    assert state.counts[0] == 0 and not state.sums[:2].any()


def test_window_ring_buffer_returns_the_foreground_in_order():
    state = A.window_init(1, 6)
    for i in range(4):
        A.window_update(state, np.array([float(i)]), np.array([-float(i)]))
    A.window_switch(state)  # foreground: 0..3 (everything), background from 4
    for i in range(4, 7):
        A.window_update(state, np.array([float(i)]), np.array([-float(i)]))
    A.window_switch(state)  # foreground: 4..6
    for i in range(7, 9):
        A.window_update(state, np.array([float(i)]), np.array([-float(i)]))
    x, g = A.window_foreground(state)
    assert x.ravel().tolist() == [4, 5, 6, 7, 8] and np.all(g == -x)


def _fisher(draws, grads, cutoff=2.0, max_rank=None, gamma=1e-5, sigma=None):
    n, d = draws.shape
    k_max = d if max_rank is None else max_rank
    sigma = np.ones(d) if sigma is None else sigma
    vecs, sqrt_vals = np.zeros((k_max, d)), np.ones(k_max)
    k = A.fisher_metric(np.ascontiguousarray(draws), np.ascontiguousarray(grads), gamma, cutoff, k_max,
                        sigma, vecs, sqrt_vals)
    return k, sigma, vecs[:max(k, 0)], sqrt_vals[:max(k, 0)] ** 2


def _gaussian_draws(cov, n, seed):
    draws = np.random.default_rng(seed).multivariate_normal(np.zeros(len(cov)), cov, size=n)
    return draws, -draws @ np.linalg.inv(cov)  # the exact gradients of log N(0, cov)


def test_low_rank_estimator_recovers_the_top_eigen_directions():
    d = 30
    rng = np.random.default_rng(5)
    q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    eig = np.ones(d)
    eig[:3] = [100.0, 50.0, 20.0]
    cov = (q * eig) @ q.T
    draws, grads = _gaussian_draws(cov, 200, seed=6)
    k, sigma, vecs, vals = _fisher(draws, grads)
    m_inv = inverse_metric(sigma, vecs, vals)
    # the metric's top three eigen-directions are the covariance's, with their variances
    m_vals, m_vecs = np.linalg.eigh(m_inv)
    np.testing.assert_allclose(m_vals[::-1][:3], [100, 50, 20], rtol=0.1)
    for j in range(3):
        assert abs(m_vecs[:, -1 - j] @ q[:, j]) > 0.99
    # and the whole matrix is close: preconditioned, the covariance is nearly isotropic
    white = np.linalg.eigvalsh(np.linalg.solve(np.linalg.cholesky(m_inv), np.linalg.solve(np.linalg.cholesky(m_inv), cov).T))
    assert white.max() / white.min() < 3.0
    # a diagonal-only estimate is far from it: the test can fail
    diag_white = np.linalg.eigvalsh(cov / np.sqrt(np.outer(sigma**2, sigma**2)))
    assert diag_white.max() / diag_white.min() > 50


def test_dense_estimator_keeps_every_direction_and_rank_limit_holds():
    cov = np.array([[4.0, 1.9, 0.0], [1.9, 1.0, 0.0], [0.0, 0.0, 0.25]])
    draws, grads = _gaussian_draws(cov, 400, seed=1)
    k, sigma, vecs, vals = _fisher(draws, grads, cutoff=0.0)
    assert k == 3
    # exact for a Gaussian's draws and gradients, up to the regularisation gamma = 1e-5
    np.testing.assert_allclose(inverse_metric(sigma, vecs, vals), cov, rtol=1e-3, atol=1e-5)
    k, *_ = _fisher(draws, grads, cutoff=0.0, max_rank=1)
    assert k == 1


@pytest.mark.parametrize("case", ["fewer_draws_than_dims", "duplicated_draws", "constant_coordinate", "not_gaussian"])
def test_metric_is_symmetric_positive_definite_whatever_the_draws(case):
    rng = np.random.default_rng(8)
    d = 40
    if case == "fewer_draws_than_dims":
        draws = rng.standard_normal((5, d))
        grads = rng.standard_normal((5, d))
    elif case == "duplicated_draws":
        draws = np.tile(rng.standard_normal(d), (20, 1))
        grads = np.tile(rng.standard_normal(d), (20, 1))
    elif case == "constant_coordinate":
        draws = rng.standard_normal((30, d))
        draws[:, 3] = 1.0
        grads = -draws
    else:
        draws = rng.standard_cauchy((50, d)) * 1e3
        grads = rng.standard_normal((50, d)) ** 3 * 1e-3
    for cutoff in (2.0, 0.0):
        k, sigma, vecs, vals = _fisher(draws, grads, cutoff=cutoff)
        assert k >= 0 and np.all(np.isfinite(sigma)) and np.all(sigma > 0)
        m_inv = inverse_metric(sigma, vecs, vals)
        assert np.all(np.isfinite(m_inv)) and np.allclose(m_inv, m_inv.T)
        assert np.linalg.eigvalsh(m_inv).min() > 0


def test_non_finite_draws_give_no_estimate():
    draws = np.random.default_rng(0).standard_normal((10, 4))
    draws[3, 2] = np.nan
    k, sigma, *_ = _fisher(draws, -draws, sigma=np.full(4, 2.0))
    assert k == -1 and np.all(sigma == 2.0)  # the caller keeps its metric


def test_spd_geometric_mean_solves_sigma_b_sigma_equals_a():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 5))
    a = a @ a.T + np.eye(5)
    b = rng.standard_normal((5, 5))
    b = b @ b.T + np.eye(5)
    s = A.spd_geometric_mean(a, b)
    np.testing.assert_allclose(s @ b @ s, a, rtol=1e-9, atol=1e-9)
    assert np.linalg.eigvalsh(s).min() > 0
