"""The kernels' normal draws are NumPy's own, value for value."""

import numpy as np
import pytest
from numba import njit

from workbench.rng import fill_standard_normal, standard_normal


@njit
def _one_at_a_time(rng, out):
    for i in range(out.size):
        out[i] = standard_normal(rng)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_normals_equal_numpys_draws_and_leave_the_generator_in_the_same_state(seed):
    n = 1_000_000  # enough for the rare paths: ~1% wedges, ~0.03% tail beyond r = 3.654
    ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
    x = np.empty(n)
    fill_standard_normal(ours, x)
    np.testing.assert_array_equal(x, numpys.standard_normal(n))
    assert ours.bit_generator.state == numpys.bit_generator.state
    assert np.sum(np.abs(x) > 3.654) > 100  # the tail path was taken, and agreed
    y = np.empty(1000)
    _one_at_a_time(ours, y)
    np.testing.assert_array_equal(y, numpys.standard_normal(1000))
