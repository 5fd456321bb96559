"""DADVI (Giordano, Ingram and Broderick 2024): the fixed-draw objective, its optimum, the
linear-response covariance and the Monte Carlo standard errors, against exact Gaussians."""

import numpy as np
import pytest

import workbench as wb


def test_on_a_gaussian_the_linear_response_covariance_is_the_posterior_covariance():
    """Mean-field VI halves the variances of a Gaussian with correlation 0.9; the linear
    response correction (the objective's Hessian, the paper's sec. 3.2) recovers them, and the
    means lie within 4 of their reported Monte Carlo standard errors of the truth."""
    t = wb.targets.gaussian(10, correlation=0.9)
    res = wb.methods.DADVI().run(t, seed=0)
    assert res.info["converged"] and res.info["linear_response"]
    sd = np.sqrt(np.diag(res.approximation.cov))
    np.testing.assert_allclose(sd, t.truth.sd, rtol=0.02)
    cov = t.truth.cov_fn()
    np.testing.assert_allclose(res.approximation.cov, cov, atol=0.03)
    mcse = res.stats["mean_mcse"]
    assert np.all(mcse > 0) and np.all(np.abs(res.approximation.mean - t.truth.mean) < 4 * mcse)
    assert res.cost.grad_evals < 20_000


def test_full_rank_needs_more_draws_than_dimensions():
    t = wb.targets.gaussian(5)
    with pytest.raises(ValueError, match=r"n_draws > d = 5"):
        wb.methods.DADVI(full_rank=True, n_draws=5).run(t, seed=0)
    res = wb.methods.DADVI(full_rank=True).run(t, seed=0)  # 10 d draws by default
    assert res.info["n_draws"] == 50 and res.info["converged"]
    # the closed form on N(0, I): with C = R R^T the draws' sample covariance (R its Cholesky
    # factor), the objective (1/2) tr(L C L^T) - log det L is least at L = R^-1, so q's covariance
    # is L L^T = (R^T R)^-1, and mu = -L mean(eta); its trace averages that of C^-1,
    # N / (N - d - 1) d: what makes full rank need many draws
    from workbench.methods.base import chain_rngs

    eta = chain_rngs(0, 1)[0].standard_normal((50, 5))
    centred = eta - eta.mean(axis=0)
    r = np.linalg.cholesky(centred.T @ centred / 50)
    expected = np.linalg.inv(r.T @ r)
    np.testing.assert_allclose(res.approximation.cov, expected, atol=1e-4)
    np.testing.assert_allclose(res.approximation.mean, -res.approximation.chol @ eta.mean(axis=0), atol=1e-5)


def test_a_budget_ends_the_optimisation_and_says_so():
    t = wb.targets.gaussian(20, correlation=0.9)
    res = wb.methods.DADVI().run(t, seed=0, grad_budget=300)
    assert res.info["converged"] is False and res.cost.grad_evals <= 300
    assert any(m.startswith("not converged: the gradient budget (300)") for m in res.messages)


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="n_draws must be an integer >= 2"):
        wb.methods.DADVI(n_draws=1)
    with pytest.raises(ValueError, match="gtol must be a finite number > 0"):
        wb.methods.DADVI(gtol=0.0)
