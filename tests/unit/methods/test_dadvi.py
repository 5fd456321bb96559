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
    assert res.cost.grad_evals < 20_000
    # the antithetic pairs cancel the draws' mean: on a Gaussian the optimum's means are exact,
    # and the pairs' mean gradients do not vary, so their standard errors are nil too
    np.testing.assert_allclose(res.approximation.mean, t.truth.mean, atol=1e-7)
    assert np.all(res.stats["mean_mcse"] < 1e-6)


def test_without_antithetic_pairs_the_means_are_off_by_their_standard_errors():
    t = wb.targets.gaussian(10, correlation=0.9)
    res = wb.methods.DADVI(antithetic=False).run(t, seed=0)
    mcse = res.stats["mean_mcse"]
    error = np.abs(res.approximation.mean - t.truth.mean)
    assert np.all(mcse > 0.01) and np.all(error < 4 * mcse) and error.max() > 0.03


def test_antithetic_draws_come_in_pairs_and_full_rank_fits_draw_them_independently():
    t = wb.targets.gaussian(3)
    with pytest.raises(ValueError, match=r"n_draws must be even; got 31"):
        wb.methods.DADVI(n_draws=31).run(t, seed=0)
    assert wb.methods.DADVI(n_draws=31, antithetic=False).run(t, seed=0).info["converged"]
    assert not wb.methods.DADVI(full_rank=True)._antithetic() and wb.methods.DADVI()._antithetic()


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
    from workbench.rng import chain_rngs

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


def test_a_fit_that_misses_mass_on_a_posterior_with_no_mode_names_the_funnel():
    """Centred eight schools: log p grows without bound as tau goes to 0, so an L-BFGS ascent
    finds no mode; when k-hat says the fit is not good, the messages name the funnel and the
    ascent's gradients are in the cost. A good fit pays for no ascent."""
    res = wb.methods.DADVI().run(wb.targets.eight_schools(centered=True), seed=1)
    assert res.info["pareto_k"] > 0.5 and res.info["funnel_check_grad_evals"] > 0
    assert any(m.startswith("funnel: no mode was found") for m in res.messages), res.messages
    good = wb.methods.DADVI().run(wb.targets.gaussian(4, correlation=0.5), seed=1)
    assert good.info["pareto_k"] < 0.5 and good.info["funnel_check_grad_evals"] == 0
    assert not any(m.startswith("funnel") for m in good.messages)
