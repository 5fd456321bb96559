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




def test_vi_quality_scores_every_vi_method_not_only_mixtures():
    """Full-rank VI has no mixture weights to trace: its quality is scored all the same, and
    its importance estimate of log Z is close on a Gaussian it fits exactly."""
    from workbench.metrics.vi import vi_quality

    t = wb.targets.gaussian(3, mean=[1.0, -1.0, 0.5], scales=[0.5, 1.0, 2.0])
    res = wb.methods.FullRankVI(progress=False).run(t, seed=0)
    out = vi_quality(res, t)
    assert "trace_min_c" not in out["_arrays"] and "trace_neg_elbo" in out["_arrays"]
    assert abs(out["log_z_is"] - t.truth.log_z) < 0.05 and 0 <= out["kl"] < 0.05
