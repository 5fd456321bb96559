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


def test_mams_accepts_near_its_target_and_mclmc_reports_its_energy_error():
    """Dual averaging aims MAMS at 0.9; its averaged step accepts a little more (0.94-0.97 here)."""
    mams = wb.methods.MAMS(chains=2, progress=False).run(T, seed=1)
    assert 0.85 < mams.stats["accept_prob"].mean() < 0.99
    mclmc = wb.methods.MCLMC(chains=2, progress=False).run(T, seed=1)
    assert all(math.isfinite(v) for v in mclmc.info["energy_var_per_dim"])


def test_mams_step_is_not_capped_at_the_trajectory_length():
    """A step past L is a transition of one step (n = 1 + floor(U s), s = 0 when L / eps <= 1),
    still exact; the acceptance alone bounds the step. With L fixed short the step the target
    asks for is several times L (BlackJAX caps it at L / 1.1)."""
    res = wb.methods.MAMS(chains=2, L=0.5, progress=False).run(T, seed=0)
    assert all(s > 2 * ell for s, ell in zip(res.info["step_size"], res.info["L"]))
    assert 0.85 < res.stats["accept_prob"].mean() < 0.99
    assert (res.stats["n_steps"] == 2).all()  # one minimal-norm step: two gradients


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


def test_mams_flow_samples_the_banana_on_a_learned_transform():
    """MAMS(metric="flow") runs NUTS's flow phases (sampling/flow_metric.py) with MAMS as the
    sampler: on the banana, whose arms no diagonal preconditioner follows, its means and sds
    agree with the exact ones within 4 Monte Carlo standard errors (each coordinate's bulk ESS;
    for the sd, the ESS of the squared deviation)."""
    from workbench.convergence import ess

    t = wb.targets.banana()
    res = wb.methods.MAMS(metric="flow", progress=False).run(t, seed=0)
    assert res.settings["warmup"] == 1000 and res.info["metric_chosen"] == "flow"
    assert res.messages[0].startswith("flow: ") and "layer(s)" in res.messages[0]
    d = res.info["diagnostics"]
    assert d["r_hat_max"] < 1.01 and d["ess_bulk_min"] > 400
    flat = res.draws.reshape(-1, 2)
    se_mean = t.truth.sd / np.sqrt(ess(res.draws))
    np.testing.assert_array_less(np.abs(flat.mean(0) - t.truth.mean), 4 * se_mean)
    dev2 = (res.draws - t.truth.mean) ** 2
    se_var = dev2.reshape(-1, 2).std(0) / np.sqrt(ess(dev2))
    np.testing.assert_array_less(np.abs(flat.var(0) - t.truth.sd ** 2), 4 * se_var)


def test_mams_flow_counts_every_gradient_and_keeps_the_default_warmups(counted):
    target, counter = counted
    counter[0] = 0
    res = wb.methods.MAMS(metric="flow", warmup=200, draws=200, progress=False).run(target, seed=1)
    assert res.cost.grad_evals == counter[0] > 0
    assert wb.methods.MAMS(metric="diag").warmup == 400 and wb.methods.MAMS(metric="dense").warmup == 400
    assert wb.methods.MAMS().warmup == wb.methods.MAMS(metric="auto").warmup == 1000
    with pytest.raises(ValueError, match=r"metric must be one of \['diag', 'dense', 'flow', 'auto'\]"):
        wb.methods.MAMS(metric="low_rank")


def test_mams_auto_whitens_a_correlated_gaussian_and_keeps_the_diagonal_on_an_uncorrelated_one():
    """MAMS(metric="auto") ranks the preconditioners by the held-out Fisher divergence of its first
    draws, as NUTS's does; where the low-rank metric wins, MAMS (diagonal only) samples the
    posterior whitened by those draws' covariance. On an equicorrelated Gaussian (rho 0.9) its
    draws have the exact means and sds within 4 Monte Carlo standard errors."""
    from workbench.convergence import ess

    corr = wb.targets.gaussian(dim=10, correlation=0.9)
    res = wb.methods.MAMS(metric="auto", progress=False).run(corr, seed=0)
    assert res.info["metric_chosen"] == "dense" and res.messages[0].startswith("metric='auto': the dense metric")
    flat = res.draws.reshape(-1, 10)
    np.testing.assert_array_less(np.abs(flat.mean(0) - corr.truth.mean), 4 * corr.truth.sd / np.sqrt(ess(res.draws)))
    dev2 = (res.draws - corr.truth.mean) ** 2
    np.testing.assert_array_less(np.abs(flat.var(0) - corr.truth.sd ** 2),
                                 4 * dev2.reshape(-1, 10).std(0) / np.sqrt(ess(dev2)))
    easy = wb.methods.MAMS(metric="auto", progress=False).run(T, seed=0)
    assert easy.info["metric_chosen"] == "diag" and easy.info["metric"] == "auto"


def test_mams_keeps_a_given_diagonal_preconditioner_and_refuses_a_bad_one():
    """``inv_metric``: the chains start on it and the tuning keeps it (skipping the stage that
    learns one), as the flow phases use it where the diagonal metric fits."""
    res = wb.methods.MAMS(chains=2, metric="diag", inv_metric=T.truth.sd ** 2, progress=False).run(T, seed=0)
    np.testing.assert_allclose(res.info["sigma"], np.broadcast_to(T.truth.sd, (2, 10)))
    np.testing.assert_array_less(np.abs(res.draws.reshape(-1, 10).mean(0)), 0.5 * T.truth.sd)
    with pytest.raises(ValueError, match="inv_metric must be the diagonal of the inverse metric, positive"):
        wb.methods.MAMS(inv_metric=np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"inv_metric has shape \(3,\)"):
        wb.methods.MAMS(inv_metric=np.ones(3), progress=False).run(T, seed=0)


@pytest.mark.parametrize(("metric", "posterior"), [("auto", "correlated"), ("dense", "correlated"), ("flow", "banana")])
def test_a_given_preconditioner_stays_on_the_posterior_and_not_on_its_transform(monkeypatch, metric, posterior):
    """``inv_metric`` is the posterior's own scales: the phases on the posterior whitened by its
    first draws (where "auto" ranks the low-rank metric first, and "dense") or on a learned flow
    learn their own."""
    from workbench.running.phases import Phases

    given, original = [], Phases.run

    def run(self, target, seed, grad_evals, **settings):
        given.append((target.name, settings.get("inv_metric", self.method.inv_metric)))
        return original(self, target, seed, grad_evals, **settings)

    monkeypatch.setattr(Phases, "run", run)
    target = wb.targets.gaussian(dim=10, correlation=0.9) if posterior == "correlated" else wb.targets.banana()
    scales = np.full(target.dim, 4.0)
    # two seeds: where a first fit finds the banana's diagonal enough, no phase runs on the flow
    for seed in (0, 1):
        wb.methods.MAMS(metric=metric, inv_metric=scales, progress=False).run(target, seed=seed)
    on_posterior = [inv for name, inv in given if name == target.name]
    transformed = [inv for name, inv in given if name != target.name]
    assert on_posterior and transformed
    assert all(inv is None for inv in transformed)
    np.testing.assert_array_equal(on_posterior[0], scales)
