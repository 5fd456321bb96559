"""workbench/vi/gmm_updates.py: Stein's estimates, the trust-region steps, against closed forms."""

import math

import numpy as np
import pytest
from scipy import stats

from workbench.vi import gmm_updates as G


def gaussian_kl(m1, s1, m0, s0):
    """KL(N(m1, s1) || N(m0, s0)) in closed form."""
    p0 = np.linalg.inv(s0)
    d = m1.size
    return 0.5 * (np.trace(p0 @ s1) - d + (m1 - m0) @ p0 @ (m1 - m0)
                  + np.linalg.slogdet(s0)[1] - np.linalg.slogdet(s1)[1])


def random_cov(rng, d):
    a = rng.standard_normal((d, d))
    return a @ a.T / d + 0.5 * np.eye(d)


def test_component_terms_are_scipys_densities_and_precision_times_difference():
    rng = np.random.default_rng(0)
    means = rng.standard_normal((3, 4))
    covs = np.stack([random_cov(rng, 4) for _ in range(3)])
    x = rng.standard_normal((7, 4))
    log_dens, prec_diff = G.component_terms(x, means, np.linalg.cholesky(covs))
    for k in range(3):
        np.testing.assert_allclose(log_dens[:, k], stats.multivariate_normal.logpdf(x, means[k], covs[k]), rtol=1e-10)
        np.testing.assert_allclose(prec_diff[k], (x - means[k]) @ np.linalg.inv(covs[k]), rtol=1e-9, atol=1e-12)


def test_the_mixture_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    means, covs = rng.standard_normal((2, 3)), np.stack([random_cov(rng, 3) for _ in range(2)])
    log_w = np.log([0.3, 0.7])
    chols = np.linalg.cholesky(covs)
    x = rng.standard_normal((4, 3))
    _, grad, _, _ = G.mixture_log_density(x, log_w, means, chols)
    h = 1e-6
    for j, e in enumerate(np.eye(3)):
        fd = (G.mixture_log_density(x + h * e, log_w, means, chols)[0]
              - G.mixture_log_density(x - h * e, log_w, means, chols)[0]) / (2 * h)
        np.testing.assert_allclose(grad[:, j], fd, rtol=1e-6, atol=1e-8)


def test_stein_estimates_converge_to_the_exact_expected_gradient_and_hessian():
    """For q = N(m, S) and a Gaussian p = N(mu, P^-1), r = log p - log q has E_q[grad r] = -P (m - mu)
    and E_q[hess r] = S^-1 - P exactly; Stein's estimate from n draws of q has error O(1/sqrt(n))."""
    rng = np.random.default_rng(2)
    d, n = 3, 200_000
    m, s = rng.standard_normal(d), random_cov(rng, d)
    mu, p = rng.standard_normal(d), np.linalg.inv(random_cov(rng, d))
    x = rng.multivariate_normal(m, s, size=n)
    log_q = stats.multivariate_normal.logpdf(x, m, s)
    prec_diff = (x - m) @ np.linalg.inv(s)
    grad_ratio = -(x - mu) @ p + prec_diff  # grad log p - grad log q
    grad, hess = G.stein_estimates(log_q, log_q, prec_diff, grad_ratio)
    # tolerance: 5 Monte Carlo standard errors of the plain averages
    np.testing.assert_array_less(np.abs(grad + p @ (m - mu)), 5 * grad_ratio.std(0) / math.sqrt(n))
    terms = prec_diff[:, :, None] * grad_ratio[:, None, :]
    se = terms.std(0) / math.sqrt(n)
    np.testing.assert_array_less(np.abs(hess - (np.linalg.inv(s) - p)), 5 * (se + se.T) / 2 + 1e-12)


def test_the_step_is_the_natural_gradient_step_with_its_eta_and_its_kl_the_gaussian_kl():
    rng = np.random.default_rng(3)
    d = 4
    m, s = rng.standard_normal(d), random_cov(rng, d)
    chol = np.linalg.cholesky(s)
    grad, hess = rng.standard_normal(d), -random_cov(rng, d)
    for eps in (0.05, 0.5, 1e9):
        step = G.trust_region_update(m, chol, grad, hess, eps=eps, last_eta=5.0)
        assert step.success and step.eta >= 1.0
        eta, prec = step.eta, np.linalg.inv(s)
        new_cov = step.chol @ step.chol.T
        np.testing.assert_allclose(np.linalg.inv(new_cov), prec - hess / eta, rtol=1e-8)
        expected_mean = np.linalg.solve(prec - hess / eta, prec @ m + (grad - hess @ m) / eta)
        np.testing.assert_allclose(step.mean, expected_mean, rtol=1e-8, atol=1e-10)
        assert step.kl == pytest.approx(gaussian_kl(step.mean, new_cov, m, s), rel=1e-8)


def test_repeated_steps_with_exact_estimates_converge_to_a_gaussian_target():
    """With an unbounded trust region each step is, once the bracket around the last eta has come
    down to 1 (e^5, then e^2, then 1: the authors' search), the full natural-gradient step within
    the bisection's tolerance on eta, which on a Gaussian target moves most of the way to it."""
    rng = np.random.default_rng(4)
    d = 3
    m, s = rng.standard_normal(d), random_cov(rng, d)
    mu, cov_p = rng.standard_normal(d), random_cov(rng, d)
    p = np.linalg.inv(cov_p)
    chol, eta = np.linalg.cholesky(s), -1.0
    for t in range(60):
        s = chol @ chol.T
        step = G.trust_region_update(m, chol, -p @ (m - mu), np.linalg.inv(s) - p, eps=1e9, last_eta=eta)
        assert step.success and (t < 3 or step.eta < 1.2)
        m, chol, eta = step.mean, step.chol, step.eta
    np.testing.assert_allclose(m, mu, atol=1e-8)
    np.testing.assert_allclose(chol @ chol.T, cov_p, atol=1e-8)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5])
def test_the_trust_region_holds_the_step_to_its_kl(eps):
    rng = np.random.default_rng(5)
    d = 5
    m, s = rng.standard_normal(d), random_cov(rng, d)
    mu, p = 10 + rng.standard_normal(d), np.linalg.inv(random_cov(rng, d))
    # from the bracket around a last eta (the first bracket, exp(-20)..exp(80), ends early at small
    # eta by the authors' tolerance of 0.1 in eta, and so takes a smaller step than eps on a first update)
    step = G.trust_region_update(m, np.linalg.cholesky(s), -p @ (m - mu), np.linalg.inv(s) - p, eps, 50.0)
    assert step.success
    kl = gaussian_kl(step.mean, step.chol @ step.chol.T, m, s)
    assert kl == pytest.approx(step.kl, rel=1e-8)
    assert 0.9 * eps <= kl <= 1.1 * eps  # the bisection's 10 % tolerance


def test_a_step_no_eta_can_make_positive_definite_fails_and_keeps_the_component():
    m, chol = np.zeros(2), np.eye(2)
    step = G.trust_region_update(m, chol, np.zeros(2), np.full((2, 2), np.nan), 0.1, -1.0)
    assert not step.success and step.eta == -1.0
    np.testing.assert_array_equal(step.chol, chol)


def test_the_weight_update_meets_its_kl_and_moves_towards_the_better_component():
    log_w = np.log([0.5, 0.3, 0.2])
    rewards = np.array([0.0, 2.0, -1.0])
    for eps in (0.01, 0.05):
        new = G.weight_update(log_w, rewards, eps)
        kl = float(np.sum(np.exp(new) * (new - log_w)))
        assert 0.9 * eps <= kl <= 1.1 * eps
        assert np.exp(new[1]) > 0.3 and np.exp(new[2]) < 0.2
    # a large trust region gives (nearly) the unconstrained optimum w_k exp(reward_k)
    best = log_w + rewards
    best = np.exp(best - np.logaddexp.reduce(best))
    np.testing.assert_allclose(np.exp(G.weight_update(log_w, rewards, 50.0)), best, atol=0.02)
    np.testing.assert_array_equal(G.weight_update(np.zeros(1), np.ones(1), 0.1), np.zeros(1))


def test_diagonal_components_give_the_full_forms_with_diagonal_factors():
    """Sds (K, d) in place of Cholesky factors: the densities, Stein's estimate (its diagonal) and
    the trust-region step are the full-covariance ones for L = diag(sd)."""
    rng = np.random.default_rng(3)
    means, sds = rng.standard_normal((2, 4)), rng.uniform(0.5, 2.0, (2, 4))
    chols = np.stack([np.diag(s) for s in sds])
    x = rng.standard_normal((9, 4))
    for a, b in zip(G.component_terms(x, means, sds), G.component_terms(x, means, chols)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    log_dens, prec_diff = G.component_terms(x, means, sds)
    grad_ratio, background = rng.standard_normal((9, 4)), log_dens[:, 1] + 0.3
    g_diag, h_diag = G.stein_estimates(log_dens[:, 0], background, prec_diff[0], grad_ratio, diagonal=True)
    g_full, h_full = G.stein_estimates(log_dens[:, 0], background, prec_diff[0], grad_ratio)
    np.testing.assert_allclose(g_diag, g_full, rtol=1e-12)
    np.testing.assert_allclose(h_diag, np.diag(h_full), rtol=1e-12)
    hess = -np.diag(rng.uniform(0.2, 3.0, 4))
    grad = rng.standard_normal(4)
    step_diag = G.trust_region_update(means[0], sds[0], grad, np.diag(hess), 0.05, -1.0)
    step_full = G.trust_region_update(means[0], chols[0], grad, hess, 0.05, -1.0)
    assert step_diag.success and step_full.success
    assert step_diag.eta == pytest.approx(step_full.eta, rel=1e-12)
    np.testing.assert_allclose(step_diag.mean, step_full.mean, rtol=1e-10)
    np.testing.assert_allclose(np.diag(step_diag.chol) @ np.diag(step_diag.chol), step_full.chol @ step_full.chol.T,
                               rtol=1e-10)


def test_component_log_densities_in_blocks_are_the_terms_densities(monkeypatch):
    rng = np.random.default_rng(4)
    means, chols = rng.standard_normal((3, 4)), np.linalg.cholesky(np.stack([random_cov(rng, 4) for _ in range(3)]))
    x = rng.standard_normal((50, 4))
    monkeypatch.setattr(G, "BLOCK_FLOATS", 3 * 4 * 7)  # blocks of 7 draws
    np.testing.assert_allclose(G.component_log_densities(x, means, chols), G.component_terms(x, means, chols)[0],
                               rtol=1e-13)
