"""workbench/methods/batch_and_match.py: the closed-form update against the derivation, and the
fit of a 100-d correlated Gaussian within 2,000 gradients."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench.methods.batch_and_match import bam_update


def _gaussian_batch(d, b, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((d, d))
    s = a @ a.T / d + np.eye(d)
    m = rng.standard_normal(d)
    z = rng.standard_normal((b, d)) * 3.0 + 1.0  # any draws: the scores carry the target
    g = -np.linalg.solve(s, (z - m).T).T
    return z, g, m, s


def test_one_score_matching_step_from_d_plus_1_draws_is_exact_on_a_gaussian():
    """lambda -> infinity (Gaussian score matching): Sigma' Gamma Sigma' = C with the scores'
    covariance Gamma = S^-1 C S^-1 gives Sigma' = S, and mu' = S g_bar + z_bar = m."""
    d = 6
    z, g, m, s = _gaussian_batch(d, d + 1)
    mu, cov = bam_update(z, g, np.zeros(d), np.eye(d), math.inf)
    np.testing.assert_allclose(cov, s, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(mu, m, rtol=1e-8, atol=1e-8)


def test_a_finite_learning_rate_moves_part_way_and_stays_a_covariance():
    d = 6
    z, g, m, s = _gaussian_batch(d, 20)
    mu0, cov0 = np.zeros(d), np.eye(d)
    mu, cov = bam_update(z, g, mu0, cov0, 1.0)
    assert np.all(np.linalg.eigvalsh(cov) > 0) and np.allclose(cov, cov.T)
    # mu' = mu/2 + (Sigma' g_bar + z_bar)/2 at lambda = 1 (eq. 12)
    np.testing.assert_allclose(mu, 0.5 * mu0 + 0.5 * (cov @ g.mean(0) + z.mean(0)), rtol=1e-10)
    big_mu, big_cov = bam_update(z, g, mu0, cov0, 1e12)
    np.testing.assert_allclose(big_cov, s, rtol=1e-5)


@pytest.mark.parametrize("lam", [0.3, 40.0])
@pytest.mark.parametrize("d, batch", [(7, 12), (30, 8)])
def test_the_low_rank_form_is_eq_12_with_a_general_matrix_square_root(lam, d, batch):
    """Sigma' = 2 V (I + (I + 4 U V)^(1/2))^-1 as the paper writes it (scipy's sqrtm), against
    the update's form through U's factor, V - P diag(k / (2 + k)) P^T: with more draws than
    dimensions, and with fewer (U of rank B + 1 < d, the case the factor form is for)."""
    from scipy.linalg import sqrtm

    z, g, _, _ = _gaussian_batch(d, batch, seed=3)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((d, d))
    mu, cov = rng.standard_normal(d), a @ a.T / d + 0.5 * np.eye(d)
    z_bar, g_bar = z.mean(0), g.mean(0)
    c, gamma = np.cov(z.T, bias=True), np.cov(g.T, bias=True)
    u = lam * gamma + lam / (1 + lam) * np.outer(g_bar, g_bar)
    v = cov + lam * c + lam / (1 + lam) * np.outer(mu - z_bar, mu - z_bar)
    expected = 2 * v @ np.linalg.inv(np.eye(d) + np.real(sqrtm(np.eye(d) + 4 * u @ v)))
    _, new_cov = bam_update(z, g, mu, cov, lam)
    # sqrtm of the non-symmetric I + 4 U V is the less accurate side: at d = 30, B = 8,
    # lambda = 40 its condition number is 7e6, and the two agree to 6e-11 of the largest entry
    np.testing.assert_allclose(new_cov, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_fits_a_100d_correlated_gaussian_within_2000_gradients():
    t = wb.targets.gaussian(100, correlation=0.5, scales="logspace")
    res = wb.methods.BatchAndMatch().run(t, seed=0, grad_budget=2000)
    q = res.approximation
    assert res.cost.grad_evals <= 2000
    assert np.max(np.abs(q.mean - t.truth.mean) / t.truth.sd) <= 0.02
    assert np.max(np.abs(np.sqrt(np.diag(q.cov)) / t.truth.sd - 1.0)) <= 0.02


def test_gaussian_score_matching_is_the_one_draw_limit():
    """batch_size=1, learning_rate=inf: GSM-VI (Modi et al. 2023), which on a Gaussian target
    converges to it from one draw a step."""
    t = wb.targets.gaussian(5, correlation=0.5, scales="logspace")
    q = wb.methods.BatchAndMatch(batch_size=1, learning_rate=math.inf, steps=200).run(t, seed=1).approximation
    np.testing.assert_allclose(q.mean, t.truth.mean, atol=1e-6 * t.truth.sd.max())
    np.testing.assert_allclose(q.cov, t.truth.cov, rtol=1e-5, atol=1e-8)


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="batch_size must be"):
        wb.methods.BatchAndMatch(batch_size=0)
    with pytest.raises(ValueError, match="learning_rate must be a number > 0"):
        wb.methods.BatchAndMatch(learning_rate=-1.0)


def test_a_budget_that_pays_for_fewer_steps_than_asked_says_not_converged():
    from workbench.diagnostics import health_flags

    t = wb.targets.gaussian(dim=3)
    cut = wb.methods.BatchAndMatch(progress=False).run(t, seed=0, grad_budget=1000)
    assert "not converged" in health_flags(cut.messages) and "of the 200 steps" in cut.messages[0]
    full = wb.methods.BatchAndMatch(progress=False).run(t, seed=0, grad_budget=20_000)
    assert "not converged" not in health_flags(full.messages)
