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


@pytest.mark.parametrize("mean_steps", [0.5, 1.0, 1.1, 1.5, 2.0, 2.7, 5.0, 10.3, 47.9])
def test_steps_scale_makes_the_mean_number_of_steps_l_over_eps(mean_steps):
    # n = 1 + floor(U s): each of 0..K-1 (K = floor(s)) has probability 1 / s, K the rest
    s = K.steps_scale(mean_steps)
    k = int(np.floor(s))
    expected = 1.0 + (k * (k - 1) / 2 + k * (s - k)) / s if s > 0 else 1.0
    assert expected == pytest.approx(max(mean_steps, 1.0), rel=1e-12)


def test_a_mams_transition_integrates_l_over_eps_steps_on_average():
    # eps = 0.3, L = 2: 6.67 steps a transition on average (uniform on 1..2 L / eps would give 7.17)
    _, _, _, stats, _, _ = _call(1, n=4000, eps=0.3, big_l=2.0)
    steps = stats[:, K.S_N_STEPS] / I.GRADS_PER_STEP[I.MINIMAL_NORM]
    assert abs(steps.mean() - 2.0 / 0.3) < 4 * steps.std() / np.sqrt(len(steps))
