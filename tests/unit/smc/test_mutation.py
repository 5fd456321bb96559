"""The SMC moves leave the tempered density invariant: particles drawn from it exactly keep
its moments (they stay independent, so the tolerances are i.i.d. standard errors)."""

import numpy as np
import pytest

import workbench as wb
from workbench.smc import mutation as M
from workbench.smc.reference import diagonal_gaussian

N = 4000


def _move(target, ref, beta, x, kernel, moves=20, step=None, seed=0, dense=False):
    x = np.ascontiguousarray(x)
    grads, lp = np.empty_like(x), np.empty(x.shape[0])
    M.evaluate.for_target(target)(target.kernel_logp_grad, target.kernel_data, x, grads, lp, np.zeros(2, dtype=np.int64))
    lp0 = ref.logpdf(x)
    counts = np.zeros(3, dtype=np.int64)
    inv_mass = x.var(axis=0)
    # dense: the particles' covariance as Cholesky factor; else a (1, 1) stand-in (the diagonal)
    chol = np.linalg.cholesky(np.cov(x.T)) if dense else np.zeros((1, 1))
    step = step if step is not None else (0.6 if kernel == "hmc" else 0.8)
    settings = M.mutation_settings(kind=M.KERNELS[kernel], n_leapfrog=3, mcmc_steps=moves, step=step, jitter=0.3)
    accept = M.mutate.for_target(target)(
        target.kernel_logp_grad, target.kernel_data, x, grads, lp, lp0, np.zeros(x.shape[0]), np.random.default_rng(seed), beta,
        ref.mean, ref.precision, ref.log_norm, inv_mass, chol, settings, np.zeros(2, dtype=np.int64), counts)
    return x, accept / counts[M.C_PROPOSALS], counts, lp, grads


@pytest.mark.parametrize("kernel", ["hmc", "rwm"])
@pytest.mark.parametrize("beta", [0.5, 1.0])
@pytest.mark.parametrize("dense", [False, True], ids=["diagonal", "dense"])
def test_moves_keep_the_tempered_gaussian(kernel, beta, dense):
    target = wb.targets.gaussian(4, mean=[1.0, -2.0, 0.0, 3.0], scales=[0.5, 1.0, 2.0, 0.3])
    ref = diagonal_gaussian(np.zeros(4), 2.0, "test")
    # the tempered density of two Gaussians is Gaussian: precisions and precision-weighted means add
    prec = beta / target.truth.sd**2 + (1 - beta) / 4.0
    mean = beta * target.truth.mean / target.truth.sd**2 / prec
    x0 = mean + np.random.default_rng(1).standard_normal((N, 4)) / np.sqrt(prec)
    x, acceptance, counts, lp, grads = _move(target, ref, beta, x0.copy(), kernel, dense=dense)
    assert 0.2 < acceptance < 1.0
    assert np.mean(np.any(x != x0, axis=1)) > 0.9  # the particles did move
    se_mean = np.sqrt(1 / prec / N)
    assert np.all(np.abs(x.mean(0) - mean) < 4 * se_mean), (x.mean(0) - mean) / se_mean
    se_var = (1 / prec) * np.sqrt(2 / N)
    assert np.all(np.abs(x.var(0) - 1 / prec) < 4 * se_var), (x.var(0) - 1 / prec) / se_var
    # the kept densities and gradients are those of the particles' positions
    assert lp == pytest.approx([target.logp(xi) for xi in x[:20]] + list(lp[20:]))
    assert counts[M.C_GRADS] == N * 20 * (3 if kernel == "hmc" else 1)


def test_a_kernel_that_ignores_the_reference_is_caught():
    """The same check fails when the moves target the wrong density (b = 1 instead of 0.5)."""
    target = wb.targets.gaussian(4, mean=[1.0, -2.0, 0.0, 3.0], scales=[0.5, 1.0, 2.0, 0.3])
    ref = diagonal_gaussian(np.zeros(4), 2.0, "test")
    prec = 0.5 / target.truth.sd**2 + 0.5 / 4.0
    mean = 0.5 * target.truth.mean / target.truth.sd**2 / prec
    x0 = mean + np.random.default_rng(1).standard_normal((N, 4)) / np.sqrt(prec)
    x = _move(target, ref, 1.0, x0.copy(), "hmc")[0]
    assert np.any(np.abs(x.mean(0) - mean) > 4 * np.sqrt(1 / prec / N))


def test_dead_particles_stay_and_nan_proposals_are_rejected_and_counted():
    from tests import user_functions as uf

    target = wb.Target.from_numba(uf.nan_beyond_one_and_half, dim=2, validate=False)
    ref = diagonal_gaussian(np.zeros(2), 1.0, "test")
    x = np.ascontiguousarray(np.random.default_rng(0).uniform(-1, 1, (200, 2)))
    grads, lp = np.empty_like(x), np.empty(200)
    M.evaluate.for_target(target)(target.kernel_logp_grad, target.kernel_data, x, grads, lp, np.zeros(2, dtype=np.int64))
    log_w = np.zeros(200)
    log_w[:10] = -np.inf
    before = x.copy()
    counts = np.zeros(3, dtype=np.int64)
    M.mutate.for_target(target)(target.kernel_logp_grad, target.kernel_data, x, grads, lp, ref.logpdf(x), log_w,
                                np.random.default_rng(1), 1.0, ref.mean, ref.precision, ref.log_norm, np.ones(2),
                                np.zeros((1, 1)),
                                M.mutation_settings(kind=M.KERNEL_RWM, n_leapfrog=1, mcmc_steps=5, step=3.0, jitter=0.0),
                                np.zeros(2, dtype=np.int64), counts)
    assert np.array_equal(x[:10], before[:10])
    assert counts[M.C_PROPOSALS] == 190 * 5 and counts[M.C_NAN] > 0
    assert np.all(x[:, 0] <= 1.5)  # no particle moved where the density is NaN


@pytest.mark.parametrize("kernel", ["hmc", "rwm"])
def test_dense_moves_keep_a_correlated_gaussian_and_its_correlations(kernel):
    """With the particles' covariance as the metric the moves still leave the target invariant
    (a transposed L would not: the check below fails for L v in place of L^T g)."""
    target = wb.targets.gaussian(4, correlation=0.8, scales=[0.5, 1.0, 2.0, 0.3])
    ref = diagonal_gaussian(np.zeros(4), 2.0, "test")
    x0 = target.truth.sample(N, np.random.default_rng(2))
    x, acceptance, counts, lp, grads = _move(target, ref, 1.0, x0.copy(), kernel, dense=True)
    assert 0.2 < acceptance <= 1.0 and np.mean(np.any(x != x0, axis=1)) > 0.9
    cov = target.truth.cov
    se_mean = np.sqrt(np.diag(cov) / N)
    assert np.all(np.abs(x.mean(0) - target.truth.mean) < 4 * se_mean)
    # each covariance entry within 4 of its standard errors, sqrt((S_ij^2 + S_ii S_jj) / N)
    se_cov = np.sqrt((cov ** 2 + np.outer(np.diag(cov), np.diag(cov))) / N)
    assert np.all(np.abs(np.cov(x.T) - cov) < 4 * se_cov), (np.cov(x.T) - cov) / se_cov


def test_the_particles_moments_and_cholesky_factor_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 4)) @ np.array([[2.0, 0, 0, 0], [0.5, 1, 0, 0], [0, 0.3, 0.5, 0], [0, 0, 0.1, 3]])
    w = rng.random(300)
    w /= w.sum()
    mean = M.weighted_mean(x, w)
    np.testing.assert_allclose(mean, np.average(x, axis=0, weights=w), rtol=1e-12)
    cov = M.weighted_covariance(np.ascontiguousarray(x - mean), w)
    np.testing.assert_allclose(cov, np.cov(x.T, aweights=w, bias=True), rtol=1e-12)
    chol, ok = M.lower_cholesky(cov)
    assert ok
    np.testing.assert_allclose(chol, np.linalg.cholesky(cov), rtol=1e-12)
    _, ok = M.lower_cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))  # eigenvalues 3 and -1
    assert not ok


def test_a_covariance_that_is_not_positive_definite_leaves_the_diagonal_metric():
    x = np.repeat(np.array([[1.0, 2.0], [3.0, 6.0]]), 50, axis=0)  # the second coordinate twice the first
    inv_mass, chol = M.particle_metric(x, np.zeros(100), np.ones(2), dense=True)
    np.testing.assert_allclose(inv_mass, [1.0, 4.0])
    assert chol.shape == (1, 1)
