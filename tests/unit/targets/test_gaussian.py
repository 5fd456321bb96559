"""workbench/targets/gaussian.py: densities and truth against SciPy."""

import numpy as np
import pytest
from scipy import stats

import workbench as wb

T = wb.targets


def test_rotated_gaussian_density_and_truth_agree_with_scipy():
    t = T.rotated_gaussian(12, variances=[100.0, 50.0, 20.0], seed=3)
    cov = t.truth.cov
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(cov))[::-1][:4], [100, 50, 20, 1], rtol=1e-10)
    x = np.random.default_rng(0).standard_normal(12) * 3
    ref = stats.multivariate_normal(np.zeros(12), cov).logpdf(x)
    assert t.logp(x) - t.truth.log_z == pytest.approx(ref, rel=1e-10)
    assert wb.check_gradient(t).max_rel_error < 1e-6
    draws = t.truth.sample(200_000, 1)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.03 * 100)
    with pytest.raises(wb.TargetError, match="variances must be positive"):
        T.rotated_gaussian(5, variances=[1.0, -2.0])
    with pytest.raises(wb.TargetError, match="at most dim=2"):
        T.rotated_gaussian(2, variances=[1.0, 2.0, 3.0])
