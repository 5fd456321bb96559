"""workbench/mcmc/timing.py: the time of one gradient, for the overhead ratios."""

import math

import workbench as wb
from workbench.mcmc.timing import seconds_per_gradient


def test_seconds_per_gradient_is_a_positive_time():
    t = wb.targets.gaussian(50)
    s = seconds_per_gradient(t, min_seconds=0.01)
    assert 0 < s < 1e-3 and math.isfinite(s)


