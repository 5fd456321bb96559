"""workbench/methods/exact.py: reproducible, independent exact draws and clear refusals."""


import numpy as np
import pytest

import workbench as wb
from workbench.result import Budget


def test_exact_is_reproducible_and_independent_across_chains():
    t = wb.targets.gaussian(3)
    a = wb.methods.Exact(chains=3, draws=50).run(t, seed=7)
    b = wb.methods.Exact(chains=3, draws=50).run(t, seed=7)
    c = wb.methods.Exact(chains=3, draws=50).run(t, seed=8)
    np.testing.assert_array_equal(a.draws, b.draws)
    assert not np.array_equal(a.draws, c.draws)
    assert not np.array_equal(a.draws[0], a.draws[1])
    assert a.cost.grad_evals == 0 and a.seed == 7 and a.draws.shape == (3, 50, 3)
    assert wb.methods.Exact().run(t, budget=Budget(draws=20)).draws.shape == (4, 20, 3)
    assert wb.methods.Exact().run(t).seed is not None  # a fresh seed is recorded


def test_exact_bad_settings_and_targets():
    with pytest.raises(ValueError, match="chains must be an integer >= 1"):
        wb.methods.Exact(chains=0)
    with pytest.raises(ValueError, match="draws must be an integer >= 1"):
        wb.methods.Exact(draws=-5)
    with pytest.raises(wb.TargetError, match="needs an exact sampler"):
        wb.methods.Exact().run(wb.targets.logistic_regression(n_data=20, dim=2))
    with pytest.raises(wb.TargetError, match="needs a workbench Target"):
        wb.methods.Exact().run("gaussian")
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        wb.methods.Exact().run(wb.targets.gaussian(2), seed=-1)
