"""workbench/modes.py: the mode search, its weights and its cost."""

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench import modes as M
from workbench.errors import NonFiniteDensityError


def test_mode_search_weights_are_the_peaks_masses_and_its_cost_is_counted():
    t = wb.targets.gaussian_mixture(3, weights=[0.2, 0.8], means=[-4.0, 4.0], scales=[1.0, 0.5])
    search = M.find_modes(t, np.random.default_rng(0), starts=50)
    assert len(search.modes) == 2 and search.grad_evals > 0
    np.testing.assert_allclose(search.weights, [0.8, 0.2], atol=1e-6)  # Laplace is exact per peak
    np.testing.assert_allclose(search.modes[0].sd, 0.5, rtol=1e-4)
    limited = M.find_modes(t, np.random.default_rng(0), starts=50, max_grad_evals=200)
    assert limited.grad_evals <= 200 and limited.starts < 50


def test_mode_search_skips_failed_starts_and_refuses_a_density_finite_nowhere():
    # log p = -inf beyond radius 6: starts there are counted and skipped, the mode is found
    t = wb.Target.from_numba(uf.gaussian_in_a_disc, dim=2, name="disc")
    search = M.find_modes(t, np.random.default_rng(0), starts=40)
    assert search.failed > 0 and len(search.modes) == 1
    np.testing.assert_allclose(search.modes[0].x, [-1.0, 0.0], atol=1e-5)
    res = wb.methods.MeanFieldVI(progress=False).run(t, seed=0, grad_budget=20_000)
    assert res.info["mode_search"]["failed_starts"] > 0
    nowhere = wb.Target.from_numba(uf.nowhere_finite, dim=2, name="nowhere", validate=False)
    with pytest.raises(NonFiniteDensityError, match="found no point with a finite density"):
        wb.methods.MeanFieldVI(progress=False).run(nowhere, seed=0)
