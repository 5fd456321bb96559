"""workbench/mcmc/trajectory.py: one NUTS or static-HMC transition, in isolation."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc.termination import N_CHECKPOINT_ROWS
from workbench.mcmc.trajectory import N_VECS, nuts_transition, static_transition

T = wb.targets.gaussian(4)


def _state(seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(4)
    g = np.empty(4)
    lp = T.kernel_logp_grad(q, g, T.kernel_data)
    return q, g, lp, rng


def test_a_tiny_step_is_always_accepted_and_the_kept_density_is_the_new_points():
    q, g, lp, rng = _state()
    ones = np.ones(4)
    new_lp, accept, n, diverging, energy, error = static_transition(
        T.kernel_logp_grad, T.kernel_data, q, g, lp, 1e-4, 10, ones, ones, None, 1000.0, rng,
        np.zeros((N_VECS, 4)), np.zeros((N_CHECKPOINT_ROWS, 1, 4)))
    assert accept > 0.999 and n == 10 and not diverging and abs(error) < 1e-6
    assert new_lp == pytest.approx(T.logp(q)) and np.allclose(g, T.logp_and_grad(q)[1])


@pytest.mark.parametrize("max_depth", [1, 3, 10])
def test_a_nuts_tree_never_outgrows_its_depth(max_depth):
    q, g, lp, rng = _state(1)
    ones = np.ones(4)
    out = nuts_transition(T.kernel_logp_grad, T.kernel_data, q, g, lp, 0.05, ones, ones, None, max_depth, 1000.0,
                          rng, np.zeros((N_VECS, 4)), np.zeros((N_CHECKPOINT_ROWS, max_depth, 4)))
    new_lp, accept, accept_sym, n, depth, diverging, energy, error = out
    assert depth <= max_depth and n <= 2 ** max_depth - 1 and 0 <= accept <= 1 and 0 <= accept_sym <= 1
    assert new_lp == pytest.approx(T.logp(q))
