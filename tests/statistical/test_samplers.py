"""The MCMC samplers against exact answers, with tolerances from ArviZ's Monte Carlo standard errors."""

import os
import signal
import threading

import arviz as az
import matplotlib
import numpy as np
import pytest
from scipy import stats

import workbench as wb
from tests import user_functions as uf

matplotlib.use("Agg")

DIAGONAL = wb.targets.gaussian(10, scales="logspace")
CORRELATED = wb.targets.gaussian(10, correlation=0.5)


def _t_proposal(target, widen=1.5, df=5):
    return stats.multivariate_t(target.truth.mean, widen * target.truth.cov, df=df)


SAMPLERS = {
    "NUTS": lambda t: wb.methods.NUTS(chains=4, warmup=500, draws=1000),
    "HMC": lambda t: wb.methods.HMC(chains=4, warmup=500, draws=1000),
    "MAMS": lambda t: wb.methods.MAMS(chains=4, draws=2000),  # its default warmup
    "NUTS (walnuts)": lambda t: wb.methods.NUTS(walnuts=True, chains=4, warmup=500, draws=1000),
    "RandomWalkMH": lambda t: wb.methods.RandomWalkMH(chains=4, warmup=2000, draws=10_000),
    "IndependenceMH": lambda t: wb.methods.IndependenceMH(proposal=_t_proposal(t), chains=4, draws=3000),
}


def assert_moments_within_mcse(result, target, k=4.0):
    draws = result.draws
    mean_err = np.abs(draws.mean((0, 1)) - target.truth.mean)
    sd_err = np.abs(draws.std((0, 1)) - target.truth.sd)
    mcse_mean = np.asarray(az.mcse(draws))
    mcse_sd = np.asarray(az.mcse(draws, method="sd"))
    assert np.all(mean_err < k * mcse_mean), (mean_err / mcse_mean).round(2)
    assert np.all(sd_err < k * mcse_sd), (sd_err / mcse_sd).round(2)


@pytest.mark.parametrize("target", [DIAGONAL, CORRELATED], ids=["diagonal", "correlated"])
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sampler_moments_within_4_mcse(sampler, target):
    res = SAMPLERS[sampler](target).run(target, seed=11)
    assert res.draws.shape[:2] == (4, res.settings["draws"])
    assert_moments_within_mcse(res, target)


@pytest.mark.parametrize("target", [DIAGONAL, CORRELATED], ids=["diagonal", "correlated"])
def test_mclmc_is_biased_by_its_energy_error_and_reports_it(target):
    """MCLMC has no accept/reject: its draws are off by an amount that grows with the energy
    error per dimension, which its tuning holds near 5e-4 and ``info`` reports. At that level
    the moments are within a few hundredths of an sd (MCHMC paper, Fig. 3)."""
    res = wb.methods.MCLMC(chains=4, draws=4000).run(target, seed=2)
    ev = np.array(res.info["energy_var_per_dim"])
    assert np.all((ev > 5e-5) & (ev < 5e-3)), ev
    mean_err = np.abs(res.draws.mean((0, 1)) - target.truth.mean) / target.truth.sd
    sd_err = np.abs(res.draws.std((0, 1)) / target.truth.sd - 1)
    assert mean_err.max() < 0.1 and sd_err.max() < 0.1, (mean_err.max(), sd_err.max())


def test_the_moment_check_can_fail():
    """A sampler that is 10% too narrow is caught by the same check."""
    res = wb.methods.NUTS(chains=4, warmup=500, draws=1000).run(DIAGONAL, seed=11)
    res.draws = res.draws * 0.9
    with pytest.raises(AssertionError):
        assert_moments_within_mcse(res, DIAGONAL)


@pytest.mark.parametrize(
    "method, target_accept",
    [
        (wb.methods.NUTS(chains=2, warmup=1000, draws=1000), 0.8),
        (wb.methods.HMC(chains=2, warmup=1000, draws=1000), 0.65),
        (wb.methods.NUTS(chains=2, warmup=1000, draws=1000, target_accept=0.95, metric="diag_stan"), 0.95),
    ],
    ids=["nuts", "hmc", "nuts_stan_0.95"],
)
def test_dual_averaging_reaches_the_requested_acceptance(method, target_accept):
    t = wb.targets.gaussian(50, scales="logspace")
    res = method.run(t, seed=3)
    assert res.stats["accept_prob"].mean() == pytest.approx(target_accept, abs=0.05)


@pytest.mark.parametrize("target_accept", [0.8, 0.9])
@pytest.mark.parametrize("target", [wb.targets.gaussian(100, scales="logspace"),
                                    wb.targets.gaussian(10, correlation=0.9)], ids=["gauss100", "corr10"])
def test_default_nuts_realises_its_target_acceptance_within_002(target, target_accept):
    """The averaged step of dual averaging lands where the draws accept at the target: the
    symmetric statistic and one uninterrupted averaging (mcmc/adaptation.py). Over 3 runs of 4
    chains: each chain's final step varies (its acceptance by about +-0.03), the mean over 12
    chains by about 0.01; before, the realised value was 0.82-0.86 for a target of 0.8."""
    realised = [wb.methods.NUTS(target_accept=target_accept).run(target, seed=s).stats["accept_prob"].mean()
                for s in range(3)]
    assert abs(np.mean(realised) - target_accept) <= 0.02


def test_random_walk_gets_mode_weights_of_a_bimodal_target():
    t = wb.targets.gaussian_mixture(1, weights=[0.3, 0.7], means=[-4.0, 4.0], scales=1.0)
    res = wb.methods.RandomWalkMH(chains=4, warmup=500, draws=20_000, scale=8.0, adapt=False).run(t, seed=2)
    upper = (res.draws[..., 0] > 0).astype(float)
    share = upper.mean()
    mcse = upper.std() / np.sqrt(float(az.ess(upper[..., None])[0]))
    assert abs(share - 0.7) < 4 * mcse and mcse < 0.02


def test_nuts_reports_divergences_on_the_centred_funnel():
    # the diagonal metric: the default's flow takes WALNUTS's halved steps in the neck and may meet none
    res = wb.methods.NUTS(chains=4, warmup=500, draws=1000, metric="diag").run(wb.targets.funnel(10), seed=1)
    n_div = int(res.stats["diverging"].sum())
    assert n_div > 0 and any("divergent" in m for m in res.messages)
    assert res.to_arviz().sample_stats["diverging"].sum() == n_div


def test_nuts_converges_on_a_100d_gaussian():
    # 1,000 draws per chain: with 500, the largest of 100 split R-hats scatters around 1.01
    # over seeds (1.007-1.017 measured) even when the chains are fine
    t = wb.targets.gaussian(100, scales="logspace")
    res = wb.methods.NUTS(chains=4, warmup=500, draws=1000).run(t, seed=2)
    row = wb.metrics.evaluate(res, t)
    assert row["r_hat_max"] < 1.01
    assert row["mean_err_max"] < 0.2 and row["sd_err_max"] < 0.15


@pytest.mark.parametrize(
    "method",
    [wb.methods.NUTS(chains=4, warmup=100, draws=100), wb.methods.RandomWalkMH(chains=4, warmup=100, draws=300)],
    ids=["nuts", "rwm"],
)
def test_same_seed_identical_draws_whatever_the_thread_count(method):
    import dataclasses

    one = dataclasses.replace(method, threads=1).run(DIAGONAL, seed=9)
    four = dataclasses.replace(method, threads=4).run(DIAGONAL, seed=9)
    np.testing.assert_array_equal(one.draws, four.draws)
    for name in one.stats:
        np.testing.assert_array_equal(one.stats[name], four.stats[name])
    assert one.cost.grad_evals == four.cost.grad_evals


@pytest.mark.parametrize(
    "method, budget",
    [(wb.methods.NUTS(chains=2), 8_000), (wb.methods.RandomWalkMH(chains=2), 3_000)],
    ids=["nuts", "rwm"],
)
def test_grad_budget_stops_sampling_and_says_how_many_draws(method, budget):
    res = method.run(DIAGONAL, seed=3, grad_budget=budget)
    # NUTS never passes its budget (a tree's depth is what the rest can pay for); RWM stops at
    # the first transition after it
    assert budget - (2 * 1024 if method.name == "NUTS" else 0) <= res.cost.grad_evals <= budget + 2
    assert 0 < res.draws.shape[1] < 1000
    assert any(f"{res.draws.shape[1]} draws per chain" in m for m in res.messages)


@pytest.mark.parametrize("metric", ["diag", "low_rank"])
@pytest.mark.parametrize("target", [wb.targets.bnn(), wb.targets.funnel(10)], ids=["bnn", "funnel10"])
def test_every_budget_buys_draws_and_none_is_overspent(target, metric):
    """Warmup spends at most its share of a budget and trees are as deep as the budget allows
    (hmc.budget_limits): 20 draws per chain at 10^4 gradients, where 4 chains used to end
    with none on these targets."""
    res = wb.methods.NUTS(metric=metric).run(target, seed=0, grad_budget=10_000)
    assert res.draws.shape[1] >= 20
    assert res.cost.grad_evals <= 10_000
    assert res.cost.warmup_grad_evals <= 0.4 * 10_000 + 4 * 1024


@pytest.mark.slow
@pytest.mark.parametrize("target", [wb.targets.bnn(), wb.targets.funnel(10)], ids=["bnn", "funnel10"])
def test_a_budget_of_10_5_buys_200_draws_per_chain(target):
    """200 draws a chain at 25,000 gradients a chain (hmc.budget_limits), of what the search for
    peaks before the chains start (at most 5% of the budget: methods/peaks.py) leaves: 190."""
    res = wb.methods.NUTS().run(target, seed=0, grad_budget=100_000)
    assert res.draws.shape[1] >= 190 and res.cost.grad_evals <= 100_000


@pytest.mark.slow
def test_warmup_divergences_raise_the_target_and_the_banana_comes_out_healthier():
    """NUTS with the diagonal metric on Haario's banana: divergences after the metric settles raise the step
    size's target acceptance to 0.95 and restart dual averaging, so the draws use the step a
    fixed target_accept=0.95 would give. Without the raise (adapt_target=False) the same seeds
    give dozens of divergences each; with it, a handful in all. (R-hat <= 1.01 with bulk ESS
    >= 400 is not asked of 4 x 1,000 draws: with the adapted diagonal metric NUTS's ESS per
    draw here is 0.08-0.1, so 4,000 draws sit at the edge of 400; docs/benchmarks/banana_nuts.csv.)"""
    t = wb.targets.banana()
    raised = [wb.methods.NUTS(metric="diag").run(t, seed=s) for s in range(4)]
    plain = [wb.methods.NUTS(metric="diag", adapt_target=False).run(t, seed=s) for s in range(4)]
    for res in raised:
        assert min(res.info["target_accept_raised_to"]) >= 0.95
        assert any("raised the target acceptance" in m for m in res.messages)
        assert res.info["diagnostics"]["r_hat_max"] <= 1.02
    divergences = [int(r.stats["diverging"].sum()) for r in raised]
    plain_divergences = [int(r.stats["diverging"].sum()) for r in plain]
    assert sum(divergences) <= 10 and min(plain_divergences) >= 10, (divergences, plain_divergences)
    # the restart: the final steps are a fixed 0.95's, not held near 0.8's by the old averages
    fixed = wb.methods.NUTS(metric="diag", target_accept=0.95, adapt_target=False).run(t, seed=0)
    steps = np.array([r.info["step_size"] for r in raised])
    assert np.median(steps) <= 1.15 * np.median(fixed.info["step_size"]) < np.median(plain[0].info["step_size"])


def test_nan_density_mid_trajectory_is_a_rejected_divergence():
    t = wb.Target.from_numba(uf.nan_beyond_one_and_half, dim=2, name="nan-region")
    res = wb.methods.NUTS(chains=2, warmup=300, draws=500).run(t, seed=0)
    assert res.stats["diverging"].sum() > 0
    assert np.all(res.draws[..., 0] <= 1.5) and np.all(np.isfinite(res.draws))
    hmc = wb.methods.HMC(chains=2, warmup=300, draws=500).run(t, seed=0)
    assert np.all(hmc.draws[..., 0] <= 1.5) and hmc.stats["diverging"].sum() > 0


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: wb.methods.NUTS(step_size=0.0), "step_size must be > 0"),
        (lambda: wb.methods.HMC(step_size=-1.0), "step_size must be > 0"),
        (lambda: wb.methods.NUTS(target_accept=1.0), r"target_accept must lie in \(0, 1\)"),
        (lambda: wb.methods.HMC(target_accept=0.0), r"target_accept must lie in \(0, 1\)"),
        (lambda: wb.methods.RandomWalkMH(target_accept=1.5), r"target_accept must lie in \(0, 1\)"),
        (lambda: wb.methods.NUTS(chains=0), "chains must be an integer >= 1"),
        (lambda: wb.methods.RandomWalkMH(chains=0), "chains must be an integer >= 1"),
        (lambda: wb.methods.NUTS(max_depth=0), "max_depth must be an integer >= 1"),
        (lambda: wb.methods.HMC(n_leapfrog=0), "n_leapfrog must be an integer >= 1"),
        (lambda: wb.methods.NUTS(adapt_mass="full"), "adapt_mass must be one of"),
        (lambda: wb.methods.NUTS(warmup=-1), "warmup must be an integer >= 0"),
        (lambda: wb.methods.IndependenceMH(proposal=object()), "lacks logpdf and sample"),
        (lambda: wb.methods.RandomWalkMH(scale=0.0), "scale must be > 0"),
    ],
)
def test_settings_out_of_range_name_the_setting(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_arviz_energy_and_rank_plots_work_on_sampler_output(tmp_path):
    import arviz_plots as azp
    import matplotlib.pyplot as plt

    res = wb.methods.NUTS(chains=2, warmup=200, draws=200).run(wb.targets.gaussian(3), seed=0)
    tree = res.to_arviz()
    assert {"acceptance_rate", "diverging", "energy", "step_size", "tree_depth", "n_steps", "lp"} <= set(
        tree.sample_stats.data_vars
    )
    for plot, name in [(azp.plot_energy, "energy"), (azp.plot_rank, "rank")]:
        pc = plot(tree)
        pc.savefig(tmp_path / f"{name}.png")
        plt.close("all")
        assert (tmp_path / f"{name}.png").stat().st_size > 5_000
    assert np.all(az.bfmi(tree)["energy"].values > 0.3)


def test_ctrl_c_keeps_the_draws_made_so_far(ctrl_c_raises):
    # a small target and an early interrupt: the diagnostics of what is kept take time in
    # proportion to draws x d (at d = 200, 3 s of draws took 72 s to check)
    t = wb.targets.gaussian(20, scales="logspace")
    # compile (or load) the kernel first: the interrupt must land in sampling, not in compiling
    wb.methods.NUTS(chains=1, warmup=5, draws=5, progress=False).run(t, seed=0)
    method = wb.methods.NUTS(chains=2, warmup=200, draws=1_000_000, progress=False)
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        res = method.run(t, seed=0)
    finally:
        timer.cancel()
    assert 0 < res.draws.shape[1] < 1_000_000
    assert any("interrupted" in m for m in res.messages)
    assert np.all(np.isfinite(res.draws))


def test_progress_bar_can_be_shown_and_turned_off(capsys):
    wb.methods.NUTS(chains=2, warmup=50, draws=50, progress=True).run(wb.targets.gaussian(2), seed=0)
    assert "NUTS on gaussian_isotropic" in capsys.readouterr().err
    wb.methods.NUTS(chains=2, warmup=50, draws=50, progress=False).run(wb.targets.gaussian(2), seed=0)
    assert capsys.readouterr().err == ""
