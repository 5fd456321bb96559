"""The studies' computations: log-log slopes and the paper's R_1(N_d) (sec. 7.1.1)."""

import math

import numpy as np
import pytest

from workbench.study.analysis import loglog_slope, r1_exact, r1_monte_carlo, r1_normal


@pytest.mark.parametrize("slope", [-0.5, -0.25, 1.0, 2.0])
def test_loglog_slope_recovers_known_slopes_under_noise(slope):
    rng = np.random.default_rng(0)
    x = np.logspace(0, 4, 12)
    y = 3.0 * x**slope * np.exp(0.05 * rng.standard_normal(x.size))
    fit = loglog_slope(x, y)
    assert abs(fit.slope - slope) < 4 * fit.stderr + 1e-12 and fit.stderr < 0.02
    assert math.exp(fit.intercept) == pytest.approx(3.0, rel=0.1)


def test_loglog_slope_drops_bad_pairs_and_needs_two():
    fit = loglog_slope([1, 10, 100, -1, np.nan], [1, 100, 10_000, 5, 5])
    assert fit.slope == pytest.approx(2.0) and fit.n == 3
    with pytest.raises(ValueError, match="at least 2"):
        loglog_slope([1, -1], [1, 1])


def test_r1_exact_small_cases_by_hand():
    # N_d = 1: x < 1 in (-r, r): (1 + r) / (2 r)
    assert r1_exact(1, 10) == pytest.approx(11 / 20)
    assert r1_exact(1, 0.5) == 1.0  # the whole box is left of 1
    # N_d = 2, r = 1: the square (-1, 1)^2 below the line x + y = 2 is all of it
    assert r1_exact(2, 1.0) == 1.0
    # N_d = 2, r = 2: area of {x + y < 2} in (-2, 2)^2 = 16 - (2 x 2 / 2) = 14 of 16
    assert r1_exact(2, 2.0) == pytest.approx(14 / 16)


@pytest.mark.parametrize("n_d, r", [(1, 10.0), (3, 10.0), (10, 10.0), (30, 10.0), (10, 3.0)])
def test_r1_exact_matches_monte_carlo_with_direct_distances(n_d, r):
    estimate, se = r1_monte_carlo(n_d, r, n=40_000, seed=n_d)
    assert abs(estimate - r1_exact(n_d, r)) < 4 * se


def test_r1_grows_to_one_with_a_fixed_box_and_stays_put_when_r_grows_as_sqrt_nd():
    fixed = [r1_exact(n, 10.0) for n in (1, 10, 50)]
    assert fixed[0] < fixed[1] < fixed[2] and r1_normal(1000, 10.0) > 0.999
    scaled = [r1_normal(n, 2 * math.sqrt(n)) for n in (10, 100, 10_000)]
    assert max(scaled) - min(scaled) < 1e-12  # Phi(sqrt(3) / 2) at every N_d
    assert r1_exact(50, 2 * math.sqrt(50)) == pytest.approx(scaled[0], abs=0.01)  # the CLT is close by N_d = 50


def test_optimal_acceptance_finds_0_234_on_the_diffusion_limit_curve():
    # Roberts, Gelman and Gilks (1997): with proposal sd l / sqrt(d), acceptance a(l) =
    # 2 Phi(-l / 2) and efficiency l^2 a(l), which peaks at l = 2.38, a = 0.234
    from scipy import stats

    from workbench.study.analysis import optimal_acceptance

    ell = np.geomspace(0.7, 6.0, 15)
    acc = 2 * stats.norm.cdf(-ell / 2)
    opt = optimal_acceptance(ell, acc, ell**2 * acc)
    assert opt.acceptance == pytest.approx(0.234, abs=0.005)
    assert opt.scale == pytest.approx(2.38, rel=0.01)
    noisy = ell**2 * acc * np.exp(0.02 * np.random.default_rng(1).standard_normal(ell.size))  # 2% noise
    assert optimal_acceptance(ell, acc, noisy).acceptance == pytest.approx(0.234, abs=0.02)
    with pytest.raises(ValueError, match="edge"):
        optimal_acceptance(ell[:3], acc[:3], noisy[:3])  # still rising: no peak inside
