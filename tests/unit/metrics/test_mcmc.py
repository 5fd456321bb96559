"""workbench/metrics/mcmc.py: ESS and R-hat of a result, and the scaling study's per-run numbers."""

import math

import workbench as wb
from workbench.metrics.mcmc import chain_scaling, ess_and_rhat


def test_weighted_draws_report_kish_ess_and_no_r_hat():
    t = wb.targets.gaussian(2)
    res = wb.methods.ImportanceSampling(n=2000).run(t, seed=0)
    ess, tail, rhat = ess_and_rhat(res)
    assert 0 < ess <= 2000 and math.isnan(tail) and math.isnan(rhat)
    assert chain_scaling(res, t)["ess_frac"] == res.info["ess_fraction"]


def test_chain_scaling_of_a_random_walk_reports_its_acceptance_and_jump_distance():
    t = wb.targets.gaussian(5)
    res = wb.methods.RandomWalkMH(chains=2, warmup=1000, draws=2000, progress=False).run(t, seed=0)
    out = chain_scaling(res, t)
    assert 0.1 < out["acceptance"] < 0.5 and out["esjd"] > 0 and out["step_size"] > 0
