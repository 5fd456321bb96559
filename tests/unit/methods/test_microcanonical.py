"""workbench/methods/microcanonical.py: MAMS's and MCLMC's tuning, budgets and settings."""

import math

import numpy as np
import pytest

import workbench as wb

T = wb.targets.gaussian(10, scales="logspace")


@pytest.mark.parametrize("cls", [wb.methods.MAMS, wb.methods.MCLMC])
def test_tuning_finds_a_preconditioner_near_the_posterior_scales(cls):
    res = cls(chains=2, progress=False).run(T, seed=0)
    sigma = res.info["sigma"]  # the Fisher diagonal: exact for a Gaussian from a few draws
    np.testing.assert_allclose(sigma / T.truth.sd, 1.0, rtol=0.25)
    assert all(s > 0 for s in res.info["step_size"]) and all(ell > 0 for ell in res.info["L"])


@pytest.mark.parametrize("cls", [wb.methods.MAMS, wb.methods.MCLMC])
def test_a_budget_is_never_overspent_and_still_buys_draws(cls):
    res = cls(chains=2, progress=False, draws=10_000).run(T, seed=0, grad_budget=20_000)
    assert res.cost.grad_evals <= 20_000 and res.draws.shape[1] >= 100
    assert res.cost.warmup_grad_evals <= 0.4 * 20_000 + 2 * 100


def test_fixed_step_and_l_skip_the_tuning():
    res = wb.methods.MCLMC(chains=1, step_size=0.5, L=3.0, warmup=0, draws=500, progress=False).run(T, seed=0)
    # no tuning stage ran: the warmup cost is the starting point's one check
    assert res.info["step_size"] == [0.5] and res.info["L"] == [3.0] and res.cost.warmup_grad_evals <= 1


def test_mams_accepts_at_least_at_its_target_and_mclmc_reports_its_energy_error():
    """Dual averaging aims MAMS at 0.9; where the step reaches its cap L / 1.1 (a preconditioned
    Gaussian: one step spans the posterior) it accepts more (0.98 here)."""
    mams = wb.methods.MAMS(chains=2, progress=False).run(T, seed=1)
    assert mams.stats["accept_prob"].mean() > 0.85
    assert all(s <= ell / 1.1 + 1e-9 for s, ell in zip(mams.info["step_size"], mams.info["L"]))
    mclmc = wb.methods.MCLMC(chains=2, progress=False).run(T, seed=1)
    assert all(math.isfinite(v) for v in mclmc.info["energy_var_per_dim"])


def test_one_dimension_and_bad_settings_are_refused():
    with pytest.raises(ValueError, match="dimension >= 2"):
        wb.methods.MAMS(progress=False).run(wb.targets.gaussian(1), seed=0)
    with pytest.raises(ValueError, match="integrator must be one of"):
        wb.methods.MCLMC(integrator="euler")
    with pytest.raises(ValueError, match="target_accept must lie in"):
        wb.methods.MAMS(target_accept=1.0)


def test_mams_dense_whitens_a_strongly_correlated_posterior():
    """On an equicorrelated Gaussian (rho 0.95: the correlation matrix's condition number 191,
    which no diagonal undoes) the dense metric's draws have the exact means and sds to their
    Monte Carlo error, every gradient of both phases is counted, and a budget is kept."""
    t = wb.targets.gaussian(10, correlation=0.95)
    res = wb.methods.MAMS(metric="dense", progress=False).run(t, seed=0)
    first = res.info["dense"]["first_grad_evals"]
    assert 0 < first < res.cost.grad_evals and res.cost.warmup_grad_evals > first
    assert res.messages[0].startswith("metric='dense': whitened by the covariance of")
    x = res.draws.reshape(-1, 10)
    ess = min(res.info["diagnostics"]["ess_bulk_min"], x.shape[0])
    assert ess > 400
    mcse = 1.0 / math.sqrt(ess)  # of a mean, in posterior sds
    assert np.max(np.abs(x.mean(0) - t.truth.mean) / t.truth.sd) < 5 * mcse
    assert np.max(np.abs(x.std(0) / t.truth.sd - 1)) < 5 * mcse
    budgeted = wb.methods.MAMS(metric="dense", progress=False).run(t, seed=0, grad_budget=20_000)
    assert budgeted.cost.grad_evals <= 20_000
    with pytest.raises(ValueError, match="metric must be one of"):
        wb.methods.MAMS(metric="low_rank")
    with pytest.raises(ValueError, match="made no draws to whiten by"):
        wb.methods.MAMS(metric="dense", progress=False).run(t, seed=0, grad_budget=100)
