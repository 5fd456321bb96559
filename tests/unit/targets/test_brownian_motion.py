"""workbench/targets/brownian_motion.py: the quadrature's grid error, and the exact truth
against the density and against a long NUTS run (the filter itself: test_kalman.py)."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench.targets import brownian_motion as B


def test_the_density_integrated_over_the_path_is_the_filters_marginal_likelihood():
    """At random log scales, log of the integral over x of exp(logp(u, x)), done by Laplace's
    formula (exact: the density is Gaussian in x), equals log p(y | u) + log p(u) by the filter."""
    t = wb.posteriors.load("brownian_motion")
    y, steps = B.data()
    rng = np.random.default_rng(5)
    for u in rng.uniform([-4.0, -4.0], [1.0, 1.0], size=(6, 2)):
        x = np.concatenate([u, np.zeros(B.STEPS)])
        _, g0 = t.logp_and_grad(x)
        hess = np.empty((B.STEPS, B.STEPS))  # the gradient is linear in the path: differences are exact
        for j in range(B.STEPS):
            xj = x.copy()
            xj[2 + j] += 1.0
            hess[:, j] = t.logp_and_grad(xj)[1][2:] - g0[2:]
        mode = x.copy()
        mode[2:] = np.linalg.solve(-hess, g0[2:])
        integral = t.logp(mode) + 0.5 * B.STEPS * math.log(2 * math.pi) - 0.5 * np.linalg.slogdet(-hess)[1]
        assert integral == pytest.approx(float(B.log_scale_density(y, steps, u[0], u[1])), abs=1e-8)


def test_refining_the_grid_changes_no_moment_by_more_than_1e_4_sd():
    coarse = B.scale_grid()
    fine = B.ScaleGrid(*B.data(), n=2 * B.GRID_POINTS - 1, margin=1.0)  # half the spacing, a wider box
    m, s = coarse.moments()
    m2, s2 = fine.moments()
    assert np.abs((m2 - m) / s).max() < 1e-4
    assert np.abs((s2 - s) / s).max() < 1e-4
    assert fine.log_z == pytest.approx(coarse.log_z, abs=1e-6)


def test_the_exact_sampler_marginals_and_covariance_agree_with_the_moments():
    truth = wb.posteriors.load("brownian_motion").truth
    n = 100_000
    x = truth.sample(n, 7)
    z = (x.mean(axis=0) - truth.mean) / (truth.sd / math.sqrt(n))
    assert np.abs(z).max() < 4.5
    np.testing.assert_allclose(x.std(axis=0), truth.sd, rtol=0.02)
    np.testing.assert_allclose(np.sqrt(np.diag(truth.cov)), truth.sd, rtol=1e-10)
    np.testing.assert_allclose(truth.cov, np.cov(x.T), atol=0.03 * np.outer(truth.sd, truth.sd).max())
    for k in (0, 1, 2, 17):  # the two scales, an observed step, a missing one
        grid = np.linspace(truth.mean[k] - 8 * truth.sd[k], truth.mean[k] + 8 * truth.sd[k], 4001)
        pdf = truth.marginal_pdf(k, grid)
        assert np.trapezoid(pdf, grid) == pytest.approx(1.0, abs=5e-3)  # the log scales' tails are long
        qs = np.quantile(x[:, k], [0.05, 0.5, 0.95])
        np.testing.assert_allclose(truth.marginal_cdf(k, qs), [0.05, 0.5, 0.95], atol=0.005)


def test_the_pymc_twin_carries_the_same_exact_truth():
    pytest.importorskip("pymc")
    numba_form = wb.posteriors.load("brownian_motion")
    pymc_form = wb.posteriors.load("brownian_motion", backend="pymc")
    assert pymc_form.truth is numba_form.truth or np.array_equal(pymc_form.truth.mean, numba_form.truth.mean)
    x = numba_form.initial_point + 0.1
    assert pymc_form.logp(x) == pytest.approx(numba_form.logp(x), rel=1e-9)


@pytest.mark.slow
def test_a_long_nuts_run_agrees_with_the_exact_truth_within_its_monte_carlo_error():
    import arviz as az

    t = wb.posteriors.load("brownian_motion")
    # posteriordb's recipe (Stan's windowed diagonal adaptation) with the remedy it takes here (a funnel
    # in the innovation scale): target_accept 0.99. The truth is checked against the recipe's run, not a
    # default's: four chains' MCSE of log s_o is itself uncertain here (the chains' means differ by ~0.1)
    res = wb.methods.NUTS(chains=4, warmup=3000, draws=5000, target_accept=0.99, metric="diag_stan",
                          progress=False).run(t, seed=11)
    mcse_mean = np.asarray(az.mcse(res.draws, method="mean"))
    mcse_sd = np.asarray(az.mcse(res.draws, method="sd"))
    x = res.flat_draws()
    assert np.max(np.abs(x.mean(axis=0) - t.truth.mean) / mcse_mean) < 4.5
    assert np.max(np.abs(x.std(axis=0) - t.truth.sd) / mcse_sd) < 4.5


def test_the_data_are_inference_gyms_and_a_seed_draws_a_new_walk():
    """The bundled posterior is Inference Gym's (its 20 observations, float32 as it stores them;
    the middle ten steps missing), the MAMS paper's; ``data(seed)`` draws a walk the same way, and
    seed 0's (this library's data set before) is a wider posterior in the observation scale."""
    y, steps = B.data()
    np.testing.assert_array_equal(steps, np.r_[0:10, 20:30])
    assert y.dtype == np.float64 and y.size == 20
    assert y[0] == float(np.float32(0.21592641)) and y[-1] == float(np.float32(-0.6202789))
    t = wb.posteriors.load("brownian_motion")
    np.testing.assert_array_equal(t.data[0], y)
    old_y, old_steps = B.data(0)
    np.testing.assert_array_equal(old_steps, steps)
    assert not np.allclose(old_y, y)
    gym_sd, old_sd = B.exact_truth().sd[1], B.exact_truth(0).sd[1]
    assert gym_sd == pytest.approx(0.4675, abs=1e-3) and old_sd == pytest.approx(0.7568, abs=1e-3)
