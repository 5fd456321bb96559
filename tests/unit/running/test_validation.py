"""workbench/running/validation.py: a bad setting or seed is a ValueError that names it and
says what it must be."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench.running.validation import check_positive, check_positive_int, resolve_seed


def test_positive_numbers_and_integers():
    for bad in (0, -1.0, math.nan, math.inf, "1", True):
        with pytest.raises(ValueError, match="^step must be a finite number > 0"):
            check_positive("step", bad)
    check_positive("step", None, allow_none=True)
    check_positive("step", np.float32(0.5))
    for bad in (0, 1.0, True, "2"):
        with pytest.raises(ValueError, match="^chains must be an integer >= 1"):
            check_positive_int("chains", bad)
    check_positive_int("warmup", 0, minimum=0)


def test_a_seed_is_kept_or_drawn_and_a_bad_one_named():
    assert resolve_seed(7) == 7 and resolve_seed(np.int64(7)) == 7
    assert resolve_seed(None) != resolve_seed(None) and resolve_seed(None) >= 0
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ValueError, match="^seed must be a non-negative integer or None"):
            resolve_seed(bad)


def test_a_setting_of_the_wrong_type_is_named_with_its_type():
    with pytest.raises(ValueError, match=r"NUTS: chains must be an integer, got '4' \(str\)"):
        wb.methods.NUTS(chains="4")
    with pytest.raises(ValueError, match=r"NUTS: target_accept must be a number, got None"):
        wb.methods.NUTS(target_accept=None)
