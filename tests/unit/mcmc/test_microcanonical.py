"""workbench/mcmc/microcanonical.py: one kernel call, its settings, its counts."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc import isokinetic as I
from workbench.mcmc import microcanonical as K

T = wb.targets.gaussian(5)


def _call(adjusted, n=200, eps=0.3, big_l=2.0, budget=-1, seed=0):
    kernel = K.microcanonical_chain.for_target(T)
    rng = np.random.default_rng(seed)
    x, u, sigma = np.zeros(5), np.empty(5), np.ones(5)
    I.random_unit_vector(rng, u)
    tune = np.array([0.0, 0.0, np.inf, 0.0, 0.0])
    welford = np.zeros((5, 5))
    draws, stats = np.zeros((n, 5)), np.zeros((n, len(K.STAT_NAMES)))
    control = np.zeros(4, dtype=np.int64)
    settings = K.microcanonical_settings(n_steps=n, adjusted=adjusted, integrator=I.MINIMAL_NORM, tune=K.TUNE_NONE,
                                         collect=1, thin=1, grad_budget=budget, progress_offset=0, grads_offset=0,
                                         warmup=0, step_size=eps, big_l=big_l, l_over_eps=0.0, target_accept=0.9,
                                         desired_energy_var=5e-4)
    done, grads, step = kernel(T.kernel_logp_grad, T.kernel_data, x, u, sigma, rng, settings, tune, welford, draws,
                               stats, control)
    return done, grads, draws, stats, welford, control


@pytest.mark.parametrize("adjusted", [0, 1], ids=["MCLMC", "MAMS"])
def test_a_call_counts_its_gradients_and_collects_its_draws(adjusted):
    done, grads, draws, stats, welford, control = _call(adjusted)
    assert done == 200 and control[1] == 200
    # one gradient at the start, then two per minimal-norm step
    assert grads == 1 + stats[:, K.S_N_STEPS].sum() and control[2] == grads
    assert welford[4, 0] == 200 and np.allclose(welford[0], draws.mean(0))
    assert abs(np.linalg.norm(draws[-1])) > 0  # it moved


def test_small_steps_are_accepted_and_a_budget_stops_the_call():
    _, _, _, stats, _, _ = _call(1, eps=0.01, big_l=0.1)
    assert stats[:, K.S_ACCEPT].mean() > 0.99
    done, grads, _, _, _, _ = _call(1, n=10_000, budget=501)
    assert grads <= 501 and done < 10_000
