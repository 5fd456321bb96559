"""workbench/metrics/predictive.py: Theorem 1's quantities against the conjugate posterior by hand."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.approximations import GaussianMixture


def test_theorem1_quantities_against_the_conjugate_posterior_by_hand():
    from workbench.metrics.predictive import theorem1_quantities

    t = wb.targets.linear_regression("synthetic", n_data=200, dim=3, noise_sd=1.0, prior_sd=10.0, seed=0)
    X, y = t.data[0], t.data[1]
    precision = X.T @ X + np.eye(3) / 100.0  # the conjugate posterior, directly
    cov = np.linalg.inv(precision)
    mean = cov @ X.T @ y
    m_q = mean + np.array([0.02, -0.01, 0.03])  # an imperfect mean-field q
    s_q = 1.2 / np.sqrt(np.diag(precision))
    fake = wb.Result(method="fake", target=t.name, draws=np.zeros((1, 1, 3)), cost=wb.Cost(0, 0, 0.0),
                     param_names=t.param_names, approximation=GaussianMixture([1.0], m_q[None], s_q[None]))
    out = theorem1_quantities(fake, t)
    # Theorem 1's left side: ||X (m - m_q)|| / ||X m||, with f(x; theta) = x . theta
    assert out["rel_error"] == pytest.approx(np.linalg.norm(X @ (mean - m_q)) / np.linalg.norm(X @ mean), rel=1e-10)
    # the loss: KL(q||p) between two Gaussians in closed form
    kl = 0.5 * (np.trace(precision @ np.diag(s_q**2)) + (m_q - mean) @ precision @ (m_q - mean) - 3
                + np.linalg.slogdet(cov)[1] - np.sum(np.log(s_q**2)))
    assert abs(out["kl"] - kl) < 4 * out["neg_elbo_se"] + 1e-3
    assert abs(out["log_z_is"] - t.truth.log_z) < 0.05  # q is close: importance sampling recovers the evidence


