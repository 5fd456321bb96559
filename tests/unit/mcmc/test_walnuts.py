"""workbench/mcmc/walnuts.py: a WALNUTS leaf against plain leapfrog steps, its tolerance and
its reversibility (NUTS(walnuts=True) runs are tested in tests/unit/methods/test_hmc.py)."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc.integrators import leapfrog
from workbench.mcmc.metric import kinetic_energy
from workbench.mcmc.walnuts import LEAF_DIVERGED, LEAF_OK, max_leaf_gradients, micro_steps, walnuts_leaf

# a 2-d Gaussian with sds 1 and 0.05: a step of 0.5 is stable along the first axis only
T = wb.targets.gaussian(2, scales=[1.0, 0.05])
ONES = np.ones(2)


def _state(p=(0.7, -0.4), q=(0.3, 0.02)):
    q, p, g = np.array(q, dtype=float), np.array(p, dtype=float), np.empty(2)
    lp = T.kernel_logp_grad(q, g, T.kernel_data)
    return q, p, g, -lp + kinetic_energy(p, ONES)


def _leaf(q, p, g, h, step, max_error=0.5, halvings=5):
    scratch = [np.empty(2) for _ in range(6)]
    return walnuts_leaf(T.kernel_logp_grad, T.kernel_data, q, p, g, h, step, ONES, None, max_error, halvings, *scratch)


def _leapfrogs(q, p, g, step, n):
    for _ in range(n):
        lp = leapfrog(T.kernel_logp_grad, T.kernel_data, q, p, g, step / n, ONES, None)
    return lp


def test_a_step_within_tolerance_is_one_leapfrog_step():
    q, p, g, h = _state()
    status, lp, h_new, h_first, grads = _leaf(q, p, g, h, 0.01)
    q2, p2, g2, _ = _state()
    _leapfrogs(q2, p2, g2, 0.01, 1)
    assert status == LEAF_OK and grads == 1 and h_first == h_new
    np.testing.assert_array_equal(q, q2)
    np.testing.assert_array_equal(p, p2)


def test_a_step_too_long_for_the_curvature_is_halved_until_the_energy_holds():
    """Step 0.5 on the axis of sd 0.05 (a leapfrog is stable below 0.1): the coarse attempt's
    energy error is large, and the leaf is 2^k micro steps, k the first count whose energy
    stays within 0.5 -- the same state as 2^k plain leapfrog steps of 0.5 / 2^k."""
    q, p, g, h = _state()
    status, lp, h_new, h_first, grads = _leaf(q, p, g, h, 0.5)
    assert status == LEAF_OK and abs(h_first - h) > 0.5 and abs(h_new - h) <= 0.5
    for k in range(6):  # find the k the leaf should have chosen, by brute force
        q2, p2, g2, _ = _state()
        _, h_k, within, finite, _ = micro_steps(T.kernel_logp_grad, T.kernel_data, q2, p2, g2, h, 0.5, 1 << k,
                                                ONES, None, 0.5, False)
        if within:
            break
    assert k > 0
    np.testing.assert_allclose(q, q2, rtol=0, atol=1e-14)
    assert h_new == pytest.approx(h_k) and grads <= max_leaf_gradients(5)


def test_an_accepted_leaf_run_backwards_returns_to_its_start():
    """The leaf is reversible: from its end with the momentum flipped, a WALNUTS leaf chooses the
    same micro steps and lands on the start (the orbit-selection rule's point)."""
    halved = 0
    for p0 in [(0.7, -0.4), (1.5, 2.0), (-0.3, 4.0), (2.0, -6.0)]:
        q, p, g, h = _state(p0)
        status, _, h_end, _, grads = _leaf(q, p, g, h, 0.5)
        if status != LEAF_OK:
            continue
        halved += grads > 1
        flipped = -p
        status_back, _, h_back, _, _ = _leaf(q, flipped, g, h_end, 0.5)
        q0, pstart, _, _ = _state(p0)
        assert status_back == LEAF_OK
        np.testing.assert_allclose(q, q0, atol=1e-10)
        np.testing.assert_allclose(-flipped, pstart, atol=1e-10)
        assert h_back == pytest.approx(h, abs=1e-10)
    assert halved >= 2  # leaves of several micro steps among them


def test_no_count_within_the_halvings_is_a_divergence():
    q, p, g, h = _state((0.0, 50.0))
    status, lp, h_new, _, grads = _leaf(q, p, g, h, 5.0, max_error=1e-6, halvings=2)
    assert status == LEAF_DIVERGED and math.isinf(h_new) and grads <= max_leaf_gradients(2)


def test_max_leaf_gradients_counts_every_attempt_and_every_check():
    assert max_leaf_gradients(0) == 1
    assert max_leaf_gradients(5) == (1 + 2 + 4 + 8 + 16 + 32) + (1 + 2 + 4 + 8 + 16)
