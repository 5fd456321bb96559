"""workbench/metrics/vi.py: sd ratios against the conjugate posterior by hand."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.approximations import GaussianMixture
from workbench.metrics.vi import mean_field_sd, posterior_sd_ratios


def test_posterior_sd_ratios_against_the_conjugate_posterior_by_hand():
    t = wb.targets.linear_regression("synthetic", n_data=200, dim=3, noise_sd=1.0, prior_sd=10.0, seed=0)
    X = t.data[0]
    precision = X.T @ X / 1.0**2 + np.eye(3) / 10.0**2  # the conjugate posterior, directly
    exact_sd = np.sqrt(np.diag(np.linalg.inv(precision)))
    mf_sd = 1 / np.sqrt(np.diag(precision))
    np.testing.assert_allclose(mean_field_sd(t.truth.cov), mf_sd, rtol=1e-10)
    scales = np.array([[1.0, 2.0, 3.0]]) * mf_sd
    fake = wb.Result(method="fake", target=t.name, draws=np.zeros((1, 1, 3)), cost=wb.Cost(0, 0, 0.0),
                     param_names=t.param_names, approximation=GaussianMixture([1.0], t.truth.mean[None], scales))
    ratios = posterior_sd_ratios(fake, t)
    assert ratios["sd_ratio_mean_field"] == pytest.approx(2.0)
    assert ratios["sd_ratio_exact"] == pytest.approx(np.median(scales[0] / exact_sd))


