"""workbench/vi/full_rank.py: the packed parameters of the full-rank fit."""

import numpy as np

from workbench.vi import full_rank as FR


def test_pack_and_unpack_are_inverse():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    chol = np.linalg.cholesky(a @ a.T + np.eye(4))
    mean, back = FR.unpack(FR.pack(np.arange(4.0), chol))
    np.testing.assert_allclose(back, chol, atol=1e-12)
    np.testing.assert_array_equal(mean, np.arange(4.0))
