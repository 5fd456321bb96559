"""workbench/mcmc/metric.py: momenta and kinetic energy under a dense metric."""

import numpy as np
import pytest

from workbench.mcmc.metric import kinetic_energy_dense, sample_momentum_dense


def test_dense_metric_momenta_and_kinetic_energy():
    rng = np.random.default_rng(4)
    mass = np.array([[2.0, 0.6], [0.6, 1.0]])
    chol = np.linalg.cholesky(mass)
    p = np.empty(2)
    draws = np.empty((40_000, 2))
    for i in range(len(draws)):
        sample_momentum_dense(rng, chol, p)
        draws[i] = p
    np.testing.assert_allclose(np.cov(draws.T), mass, atol=0.04)
    inv = np.linalg.inv(mass)
    assert kinetic_energy_dense(draws[0], inv) == pytest.approx(0.5 * draws[0] @ inv @ draws[0])


