"""workbench/vi/stopping.py: the rule for steps that meet NaN or -inf, and the learning rate."""

import numpy as np
import pytest

from workbench.vi import stopping as S


def test_a_rejected_step_halves_the_rate_and_accepted_ones_bring_it_back_over_ten():
    r = S.new_rejections()
    assert not S.reject_step(r) and r[S.R_PENALTY] == 0.5 and r[S.R_REJECTED] == 1
    for _ in range(10):
        S.accept_step(r)
    assert r[S.R_CONSECUTIVE] == 0 and np.isclose(r[S.R_PENALTY], 1.0)
    S.accept_step(r)
    assert r[S.R_PENALTY] == 1.0  # never above the schedule's rate


def test_twenty_rejections_in_a_row_end_the_fit():
    r = S.new_rejections()
    ended = [S.reject_step(r) for _ in range(S.MAX_CONSECUTIVE_REJECTIONS + 1)]
    assert ended == [False] * S.MAX_CONSECUTIVE_REJECTIONS + [True]
    assert r[S.R_REJECTED] == S.MAX_CONSECUTIVE_REJECTIONS + 1


def _plateau_after(elbos, moving, window=1, patience=2, lr=0.1, lr_end=0.001):
    """The rule's state after one ELBO per window, each window marked moving or not; and
    whether it said stop."""
    plateau = S.new_plateau()
    stopped = False
    for done, (elbo, moved) in enumerate(zip(elbos, moving), start=1):
        S.record_drift(moved, plateau)
        stopped = S.record_elbo(elbo, done * window, window, patience, 1e-4, lr, lr_end, plateau) or stopped
    return plateau, stopped


def test_a_flat_elbo_is_a_plateau_only_once_the_parameters_stop_moving():
    flat = [1.0] * 6
    plateau, _ = _plateau_after(flat, [False] * 6)
    assert plateau[S.P_T_ANNEAL] == 3  # two stale windows after the first: the anneal starts
    plateau, _ = _plateau_after(flat, [True] * 6)
    assert plateau[S.P_T_ANNEAL] == -1 and plateau[S.P_STALE] == 0
    # at the final rate a plateau stops the fit, but not while the parameters move
    assert _plateau_after(flat, [False] * 6, lr=0.001)[1]
    assert not _plateau_after(flat, [True] * 6, lr=0.001)[1]


def test_the_anneal_ends_only_when_the_parameters_have_stopped_moving_and_the_rate_stays_final():
    plateau = S.new_plateau()
    plateau[S.P_T_ANNEAL], plateau[S.P_LR_ANNEAL] = 100.0, 0.05
    assert S.annealed_out(150, 50, plateau)
    S.record_drift(True, plateau)
    assert not S.annealed_out(150, 50, plateau) and not S.annealed_out(10_000, 50, plateau)
    # past the anneal's length the rate stays at its final value, lr x lr_final
    assert S.learning_rate(150, 1000, 0.1, 0.01, 50, plateau) == pytest.approx(0.001)
    assert S.learning_rate(10_000, 1000, 0.1, 0.01, 50, plateau) == pytest.approx(0.001)
    S.record_drift(False, plateau)
    assert S.annealed_out(10_000, 50, plateau)
