"""workbench/targets/banana.py: Haario's twisted Gaussian against its definition (scipy)."""

import numpy as np
import pytest
from scipy import stats

import workbench as wb


@pytest.mark.parametrize("twist", [0.03, 0.1])
def test_the_density_is_a_gaussian_after_untwisting(twist):
    t = wb.targets.banana(3, twist=twist)
    rng = np.random.default_rng(0)
    for y in rng.normal(0, 5, (5, 3)):
        x = y.copy()
        x[1] = y[1] - twist * (y[0] ** 2 - 100.0)  # the inverse map, Jacobian 1
        expected = stats.norm.logpdf(x[0], 0, 10) + stats.norm.logpdf(x[1]) + stats.norm.logpdf(x[2])
        assert t.logp(y) == pytest.approx(expected, rel=1e-12)


def test_the_exact_sampler_gives_the_declared_sds():
    t = wb.targets.banana(2, twist=0.03)
    y = t.truth.sample(200_000, np.random.default_rng(1))
    np.testing.assert_allclose(y.std(0), [10.0, np.sqrt(1 + 2e4 * 0.03 ** 2)], rtol=0.01)
