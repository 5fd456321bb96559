"""workbench/mcmc/metropolis.py: the random-walk chain's settings and its adaptation."""

import numpy as np

import workbench as wb
from workbench.mcmc import metropolis as K


def test_settings_cast_to_one_type():
    s = K.random_walk_settings(n_warmup=1, n_draws=2, grad_budget=-1, window_start=0, adapt=True, scale=1,
                               target_accept=0.234)
    assert type(s.adapt) is int and type(s.scale) is float


def test_the_random_walk_adapts_its_scale_toward_its_target_acceptance():
    res = wb.methods.RandomWalkMH(chains=2, warmup=3000, draws=3000, progress=False).run(wb.targets.gaussian(10), seed=0)
    assert abs(np.mean(res.stats["accept_prob"]) - 0.234) < 0.05
