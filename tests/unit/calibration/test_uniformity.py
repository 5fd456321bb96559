"""workbench/calibration/uniformity.py: ArviZ's test per method and quantity, Holm's family-wise
flags, VSBC, the shape of a departure in words, and the power by simulation."""

import math

import numpy as np
import pandas as pd

from workbench.calibration import uniformity as U


def test_holm_rejects_step_down():
    p = pd.Series({"a": 0.001, "b": 0.004, "c": 0.03, "d": np.nan})
    # m = 3 tests: 0.001 <= 0.01/3; 0.004 <= 0.01/2; 0.03 > 0.01
    assert U.holm(p, 0.01) == ["a", "b"]
    assert U.holm(pd.Series({"a": 0.004, "b": 0.001}), 0.01 / 3) == ["b"]
    assert U.holm(pd.Series({"a": 0.5}), 0.01) == []


def test_p_values_flag_a_narrow_fit_and_pass_a_calibrated_one():
    rng = np.random.default_rng(0)
    calibrated = rng.random((200, 3))
    from scipy.special import ndtr

    narrow = ndtr(rng.standard_normal((200, 3)) / 0.7)  # a fitted sd 30% too small
    narrow[:10, 2] = np.nan  # failed fits are left out
    p = U.p_values({"good": calibrated, "narrow": narrow}, ["a", "b", "c"])
    assert list(p.index) == ["good", "narrow"] and p.loc["good"].min() > 0.01
    assert p.loc["narrow"].max() < 1e-3
    assert U.shape(narrow[:, 0]).startswith("under-dispersed")
    assert U.shape(ndtr(rng.standard_normal(300) / 1.5)).startswith("over-dispersed")
    assert U.shape(ndtr(rng.standard_normal(300) + 0.5)).startswith("biased low")


def test_vsbc_sees_a_biased_point_estimate_not_a_narrow_one():
    from scipy.special import ndtr

    rng = np.random.default_rng(1)
    biased = ndtr(rng.standard_normal((200, 1)) + 0.4)
    narrow = ndtr(rng.standard_normal((200, 1)) / 0.5)  # symmetric: its point estimate is fine
    v = U.vsbc({"biased": biased, "narrow": narrow}, ["x"])
    assert v.loc["biased", "x"] < 0.01 and v.loc["narrow", "x"] > 0.05


def test_power_grows_with_the_shortfall_and_names_the_smallest_at_90_percent():
    out = U.power(200, 10, 0.01, replicates=200)
    powers = [out["power"][s] for s in U.POWER_SHRINKS]
    assert powers[0] < 0.2 and powers[-1] == 1.0
    assert math.isfinite(out["smallest_90"]) and out["power"][out["smallest_90"]] >= 0.9
    assert 0.05 <= out["smallest_90"] <= 0.3
    fewer = U.power(50, 10, 0.01, replicates=200)
    assert fewer["smallest_90"] > out["smallest_90"]
