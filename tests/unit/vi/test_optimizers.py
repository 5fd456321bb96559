"""workbench/vi/optimizers.py against the textbook updates (Kingma and Ba 2015, Algorithm 1)."""

import math

import numpy as np

from workbench.vi.optimizers import adam_step, all_finite, gradient_descent_step


def test_adam_matches_the_textbook_update_with_bias_correction():
    rng = np.random.default_rng(0)
    params, grads = rng.standard_normal(5), rng.standard_normal(5)
    m1, m2, prev, scale = np.zeros(5), np.zeros(5), np.empty(5), np.full(5, 2.0)
    expected = params.copy()
    b1, b2, lr, eps = 0.9, 0.999, 0.01, 1e-8
    m, v = (1 - b1) * grads, (1 - b2) * grads ** 2
    expected -= lr * scale * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)
    before = params.copy()
    adam_step(params, prev, grads, m1, m2, scale, 0, 5, 0, lr, b1, b2, eps, 1.0)
    np.testing.assert_allclose(params, expected, rtol=1e-12)
    np.testing.assert_array_equal(prev, before)


def test_gradient_descent_and_the_finite_check():
    params, prev = np.ones(3), np.empty(3)
    gradient_descent_step(params, prev, np.array([1.0, -2.0, 0.0]), np.ones(3), 0, 3, 0.5)
    np.testing.assert_allclose(params, [0.5, 2.0, 1.0])
    assert all_finite(params) and not all_finite(np.array([1.0, math.nan])) and not all_finite(np.array([math.inf]))
