"""workbench/mcmc/step_size.py: dual averaging reaches the target acceptance."""

import numpy as np
import pytest

from workbench.mcmc.step_size import dual_averaging_start, dual_averaging_update


def test_dual_averaging_finds_the_step_that_gives_the_target_acceptance():
    """On a known acceptance curve a(eps) = exp(-eps^2), it settles where a = target."""
    rng = np.random.default_rng(0)
    state = dual_averaging_start(1.0)
    for _ in range(2000):
        eps = np.exp(state.log_step)
        accept = float(np.exp(-(eps**2)) + 0.05 * rng.standard_normal())
        state = dual_averaging_update(state, accept, 0.8)
    assert np.exp(state.log_step_avg) == pytest.approx(np.sqrt(-np.log(0.8)), rel=0.05)


