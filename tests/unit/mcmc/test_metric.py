"""workbench/mcmc/metric.py: the linear map of low-rank and dense metrics."""

import numpy as np
import pytest

from workbench.mcmc.metric import (
    from_position,
    from_transformed_gradient,
    inverse_metric,
    metric_transform,
    sample_momentum,
    to_position,
    to_transformed_gradient,
)


def _map(dim, k, seed):
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.2, 3.0, dim)
    vecs = np.linalg.qr(rng.standard_normal((dim, k)))[0].T
    vals = rng.uniform(0.01, 50.0, k)
    t = metric_transform(dim, k + 2)  # room to spare: only rank[0] rows count
    t.sigma[:] = sigma
    t.vecs[:k] = vecs
    t.vecs[k:] = 99.0  # garbage beyond the rank must be ignored
    t.sqrt_vals[:k] = np.sqrt(vals)
    t.rank[0] = k
    return t, inverse_metric(sigma, vecs, vals)


@pytest.mark.parametrize("dim, k", [(6, 0), (6, 2), (6, 6), (40, 5)])
def test_the_map_is_a_square_root_of_the_inverse_metric(dim, k):
    t, m_inv = _map(dim, k, seed=dim + k)
    a = np.column_stack([_call(to_position, t, e) for e in np.eye(dim)])
    np.testing.assert_allclose(a @ a.T, m_inv, rtol=1e-10, atol=1e-12)
    rng = np.random.default_rng(1)
    v = rng.standard_normal(dim)
    np.testing.assert_allclose(_call(from_position, t, _call(to_position, t, v)), v, atol=1e-10)
    np.testing.assert_allclose(_call(to_transformed_gradient, t, v), a.T @ v, atol=1e-10)
    np.testing.assert_allclose(_call(from_transformed_gradient, t, a.T @ v), v, atol=1e-9)
    assert np.allclose(m_inv, m_inv.T) and np.linalg.eigvalsh(m_inv).min() > 0


def test_momenta_have_the_metric_as_covariance():
    """Diagonal momenta p ~ N(0, diag(sd^2)), with kinetic energy 1/2 p^T M^-1 p."""
    rng = np.random.default_rng(4)
    sd = np.array([0.5, 2.0])
    p = np.empty(2)
    draws = np.empty((40_000, 2))
    for i in range(len(draws)):
        k = sample_momentum(rng, sd, p)
        draws[i] = p
    assert k == pytest.approx(0.5 * np.sum(p**2 / sd**2))
    np.testing.assert_allclose(draws.std(axis=0), sd, rtol=0.02)


def _call(fn, t, v):
    out = np.empty(v.size)
    fn(t, np.ascontiguousarray(v, dtype=float), out)
    return out
