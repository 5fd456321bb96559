"""workbench/vi/natural_gradient.py: one step is the closed-form natural gradient of a Gaussian
target's ELBO, the trust region bounds every step, and the packed parameters survive the kernel."""

from types import SimpleNamespace

import numpy as np
import pytest

import workbench as wb
from workbench.methods import FullRankVI
from workbench.vi import natural_gradient as NG


def _one_step(target, mean, chol, rate, samples, seed=0):
    """The iterate after one natural-gradient step from N(mean, chol chol^T)."""
    start = SimpleNamespace(mean=mean, cov=chol @ chol.T)
    result = FullRankVI(init_from=start, steps=1, samples=samples, learning_rate=rate, lr_final=1.0,
                        converge_tol=0.0, progress=False).run(target, seed=seed)
    return result.approximation.mean, np.linalg.cholesky(result.approximation.cov), result


def test_one_step_is_the_closed_form_natural_gradient_of_a_gaussian_target():
    """For p = N(m, P^-1) the ELBO's natural-gradient step is mu + rho C C^T (-P (mu - m)) and
    C + rho C H(I - C^T P C) (Tan 2021, eq. 7); the kernel's Stein estimate from 40,000 draws
    matches it to its Monte Carlo error (about 1% of the step here)."""
    target = wb.targets.gaussian(dim=3, scales=np.array([0.5, 1.0, 2.0]), correlation=0.5)
    m, precision = target.truth.mean, np.linalg.inv(target.truth.cov)
    mean = m + np.array([1.0, -1.0, 0.5])
    chol = np.array([[0.7, 0.0, 0.0], [0.3, 1.2, 0.0], [-0.2, 0.4, 1.5]])
    rate = 0.05
    new_mean, new_chol, result = _one_step(target, mean, chol, rate, samples=40_000)
    expected_mean = mean + rate * chol @ chol.T @ (-precision @ (mean - m))
    h = np.tril(np.eye(3) - chol.T @ precision @ chol)
    h[np.diag_indices(3)] *= 0.5
    expected_chol = chol + rate * chol @ h
    assert result.stats["learning_rate"][0] == rate  # the trust region did not cut this step
    step_mean, step_chol = expected_mean - mean, expected_chol - chol
    assert np.max(np.abs(new_mean - expected_mean)) < 0.03 * np.max(np.abs(step_mean))
    assert np.max(np.abs(new_chol - expected_chol)) < 0.03 * np.max(np.abs(step_chol))


def test_the_trust_region_bounds_every_step_and_the_fit_still_converges():
    """A rate of 50 would throw Adam's fit to infinity on sds 1e-3 and 1; here every step's
    whitened length (the square root of twice the KL between old and new q) is at most 1, and
    the fit ends at the target (the family's optimum is the target itself)."""
    target = wb.targets.gaussian(dim=2, scales=np.array([1e-3, 1.0]))
    result = FullRankVI(init="point", learning_rate=50.0, steps=2000, progress=False).run(target, seed=0)
    length = np.hypot(result.stats["grad_norm_mu"], np.sqrt(2.0) * result.stats["grad_norm_chol"])
    assert np.all(result.stats["learning_rate"] * length <= NG.MAX_STEP * (1 + 1e-9))
    assert np.any(result.stats["learning_rate"] < 50.0 * 0.5)  # it did cut
    q, sd = result.approximation, target.truth.sd
    assert np.max(np.abs(q.mean - target.truth.mean) / sd) < 0.1
    assert np.max(np.abs(q.sd / sd - 1)) < 0.1


def test_the_parameters_survive_the_kernel():
    """With a vanishing rate the returned Gaussian is the start: the kernel's own packing of
    (mu, C) is ``full_rank.pack``'s layout."""
    target = wb.targets.gaussian(dim=4, correlation=0.3)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4))
    chol = np.linalg.cholesky(a @ a.T + np.eye(4))
    mean = rng.standard_normal(4)
    new_mean, new_chol, _ = _one_step(target, mean, chol, rate=1e-14, samples=2)
    np.testing.assert_allclose(new_mean, mean, atol=1e-10)
    np.testing.assert_allclose(new_chol, chol, atol=1e-10)


def test_at_the_optimum_the_step_is_exactly_zero():
    """At q = p every draw's whitened gradient of log p - log q is 0 (the "sticking the landing"
    estimate), so a step from the target itself moves nothing, whatever the draws and the rate;
    the plain estimate (the score of q left in) would move it by the draws' noise."""
    target = wb.targets.gaussian(dim=3, scales=np.array([0.5, 1.0, 2.0]), correlation=0.5)
    chol = np.linalg.cholesky(target.truth.cov)
    new_mean, new_chol, result = _one_step(target, target.truth.mean, chol, rate=0.5, samples=2)
    np.testing.assert_allclose(new_mean, target.truth.mean, atol=1e-12)
    np.testing.assert_allclose(new_chol, chol, atol=1e-12)
    # the ELBO of those two draws is log Z exactly: log p - log q is constant under q = p
    assert result.stats["elbo"][0] == pytest.approx(target.truth.log_z, abs=1e-9)


def test_window_drift_is_the_largest_move_of_the_window_average_in_qs_sds():
    chol = np.diag([2.0, 0.5])
    window_mu = np.array([10.0, 10.0])  # a window of 10 steps averaging (1, 1)
    last = np.full(2, np.nan)
    assert NG.window_drift(window_mu, last, chol, 10) == np.inf  # the first window
    np.testing.assert_array_equal(last, [1.0, 1.0])
    np.testing.assert_array_equal(window_mu, [0.0, 0.0])
    window_mu[:] = [12.0, 10.5]  # averages (1.2, 1.05): moves of 0.2 / 2 and 0.05 / 0.5
    assert NG.window_drift(window_mu, last, chol, 10) == pytest.approx(0.1)
