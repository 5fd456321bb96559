"""workbench/vi/stopping.py: the rule for steps that meet NaN or -inf, and the learning rate."""

import numpy as np

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
