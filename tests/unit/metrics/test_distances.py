"""workbench/metrics/distances.py: the distances against SciPy."""

import numpy as np
import pytest
from scipy import stats

from workbench import metrics


def test_vectorised_marginal_wasserstein_equals_scipy():
    rng = np.random.default_rng(0)
    x, y, w = rng.normal(size=(300, 4)), rng.standard_t(3, size=(450, 4)), rng.random(300)
    ours = metrics.wasserstein_per_marginal(x, y, w)
    ref = [stats.wasserstein_distance(x[:, k], y[:, k], w) for k in range(4)]
    np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_total_variation_of_two_normals_matches_the_closed_form_and_caps_at_one():
    from scipy import stats

    from workbench.metrics.distances import total_variation

    grid = np.linspace(-12, 12, 20001)
    p, q = stats.norm.pdf(grid, 0, 1), stats.norm.pdf(grid, 1, 1)
    exact = 2 * stats.norm.cdf(0.5) - 1  # TV of N(0,1) and N(1,1): 2 Phi(delta / 2) - 1
    assert abs(total_variation(grid, p, q) - exact) < 1e-6  # the trapezoid rule across the kink at x = 0.5
    far = np.linspace(-12, 40, 20001)  # disjoint peaks: TV 1, never above
    assert total_variation(far, stats.norm.pdf(far, 0, 1), stats.norm.pdf(far, 30, 1)) == pytest.approx(1.0, abs=1e-9)
    spike = np.where(np.abs(grid) < 1e-3, 1e4, 0.0)  # narrower than the grid: the rule would overshoot
    assert total_variation(grid, spike, np.zeros_like(grid)) <= 1.0
