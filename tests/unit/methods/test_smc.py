"""SMC as a method: its ladder, its budget, its seeds and threads, and its errors."""

import math

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench.methods.smc import SMCError

SMALL = dict(particles=200, runs=2, progress=False)
GAUSS = wb.targets.gaussian(3, mean=[1.0, -1.0, 0.5], scales=[0.5, 1.0, 2.0])


def test_the_ladder_rises_to_one_and_the_stats_describe_every_stage():
    res = wb.methods.SMC(**SMALL).run(GAUSS, seed=0)
    for r in range(2):
        beta = res.stats["beta"][res.stats["run"] == r]
        assert beta[-1] == 1.0 and np.all(np.diff(beta) > 0) and beta[0] > 0
    assert set(res.stats) >= {"beta", "ess", "resampled", "acceptance", "step_size", "log_z_increment", "run"}
    assert np.all((res.stats["ess"] > 0) & (res.stats["ess"] <= 1))
    assert np.nanmin(res.stats["acceptance"]) > 0.3
    # resampled exactly when the ESS fell below the threshold, and not at every stage
    resampled = res.stats["resampled"] == 1.0
    assert np.array_equal(resampled, res.stats["ess"] < 0.5) and 0 < resampled.mean() < 1
    # each run's log Z is the sum of its increments
    for r in range(2):
        inc = res.stats["log_z_increment"][res.stats["run"] == r]
        assert res.info["log_z_runs"][r] == pytest.approx(inc.sum())
    assert res.draws.shape == (1, 400, 3) and res.log_z_se > 0
    assert res.info["reference"].startswith("N(initial point, 10^2 I)")
    ladder = res.to_arviz()["optimization"]
    assert np.array_equal(np.asarray(ladder["beta"]).ravel(), res.stats["beta"])


def test_same_seed_same_result_whatever_the_thread_count(monkeypatch):
    a = wb.methods.SMC(**SMALL).run(GAUSS, seed=3)
    import workbench.running.threads as base

    monkeypatch.setattr(base.os, "cpu_count", lambda: 1)
    b = wb.methods.SMC(**SMALL).run(GAUSS, seed=3)
    assert np.array_equal(a.draws, b.draws) and a.log_z == b.log_z
    c = wb.methods.SMC(**SMALL).run(GAUSS, seed=4)
    assert not np.array_equal(a.draws, c.draws)


def test_a_budget_too_small_for_the_particles_cuts_them_and_the_ladder_finishes():
    """A third of what the runs cost unbudgeted: a pilot run prices a particle's ladder, the runs
    are cut to fit, and every run reaches b = 1 within the budget, the pilot's gradients counted."""
    from workbench.diagnostics import health_flags

    full = wb.methods.SMC(**SMALL).run(GAUSS, seed=0)
    budget = full.cost.grad_evals // 3
    res = wb.methods.SMC(**SMALL).run(GAUSS, seed=0, grad_budget=budget)
    assert res.cost.grad_evals <= budget
    assert 8 <= res.info["particles"] < 200 and res.draws.shape == (1, 2 * res.info["particles"], 3)
    assert not any(r["jumped_to_end"] for r in res.info["runs"])
    assert res.messages[0].startswith(f"budget: {res.info['particles']} particles per run, not 200")
    assert res.cost.grad_evals == res.info["pilot_grad_evals"] + sum(r["grad_evals"] for r in res.info["runs"])
    # the cut runs have fewer particles than a 3-d run is trusted with (smc/health.py), and say so
    assert health_flags(full.messages) == "ok"
    assert ("few particles" in health_flags(res.messages)) == (res.info["particles"] < 100)
    # no budget, no pilot
    assert full.info["pilot_grad_evals"] == 0 and full.info["particles"] == 200


def test_a_run_that_still_runs_out_ends_with_an_importance_step(monkeypatch):
    """Sized with no margin at all (here: a third of the pilot's price), the runs run out: each
    jumps to b = 1 by reweighting and the health column says so."""
    from workbench.diagnostics import health_flags
    from workbench.smc import budget as B

    monkeypatch.setattr(B, "MARGIN", 1 / 3)
    monkeypatch.setattr(B, "SMALL_RUN_MARGIN", 1 / 3)
    budget = wb.methods.SMC(**SMALL).run(GAUSS, seed=0).cost.grad_evals // 3
    res = wb.methods.SMC(**SMALL).run(GAUSS, seed=0, grad_budget=budget)
    assert res.cost.grad_evals <= budget
    assert all(r["jumped_to_end"] for r in res.info["runs"])
    assert "ladder incomplete" in health_flags(res.messages).split(", ")  # a study's health column says so


def test_a_budget_the_ladder_cannot_fit_is_refused_at_the_start_with_what_it_needs():
    with pytest.raises(ValueError, match="the pilot run that sizes the runs to the budget needs at least 128"):
        wb.methods.SMC(**SMALL).run(GAUSS, seed=0, grad_budget=100)
    with pytest.raises(ValueError, match="did not finish its tempering ladder within 25% of it"):
        wb.methods.SMC(**SMALL).run(GAUSS, seed=0, grad_budget=1000)


def test_the_prior_is_the_default_reference_and_laplace_is_counted():
    t = wb.targets.linear_regression(dataset="diabetes")
    res = wb.methods.SMC(**SMALL).run(t, seed=0)
    assert res.info["reference"] == f"the prior of {t.name}" and res.info["reference_grad_evals"] == 0
    lap = wb.methods.SMC(reference="laplace", **SMALL).run(t, seed=0)
    assert lap.info["reference_grad_evals"] > 0
    assert lap.cost.grad_evals == lap.info["reference_grad_evals"] + sum(r["grad_evals"] for r in lap.info["runs"])
    # starting at the posterior's own Gaussian, the ladder is one short step
    assert max(lap.info["stages"]) < min(res.info["stages"])


def test_rwm_moves_work_too():
    res = wb.methods.SMC(kernel="rwm", mcmc_steps=10, **SMALL).run(GAUSS, seed=0)
    assert abs(res.log_z - GAUSS.truth.log_z) < 4 * res.log_z_se + 0.05
    assert 0.1 < np.nanmean(res.stats["acceptance"]) < 0.5


def test_nan_at_some_particles_gives_them_weight_zero_and_is_reported():
    t = wb.Target.from_numba(uf.nan_beyond_one_and_half, dim=2, validate=False)
    res = wb.methods.SMC(reference=wb.approximations.Gaussian(np.zeros(2), np.eye(2)), **SMALL).run(t, seed=0)
    assert any("NaN" in m for m in res.messages)
    assert np.all(res.draws[0, :, 0] <= 1.5)
    assert sum(r["nan_evals"] for r in res.info["runs"]) > 0


def test_a_density_nan_everywhere_or_zero_everywhere_is_a_clear_error():
    t = wb.Target.from_numba(uf.nan_everywhere, dim=2, validate=False)
    with pytest.raises(SMCError, match="NaN at all 200 particles"):
        wb.methods.SMC(**SMALL).run(t, seed=0)
    t = wb.Target.from_numba(uf.nowhere_finite, dim=2, validate=False)
    with pytest.raises(SMCError, match="every particle's weight is zero"):
        wb.methods.SMC(**SMALL).run(t, seed=0)


@pytest.mark.parametrize("settings, match", [
    ({"particles": 1}, "particles must be an integer >= 2"),
    ({"ess_fraction": 1.0}, r"ess_fraction must lie in \(0, 1\)"),
    ({"ess_fraction": 0.0}, r"ess_fraction must lie in \(0, 1\)"),
    ({"resample_threshold": 1.5}, "resample_threshold"),
    ({"kernel": "mala"}, "kernel must be one of"),
    ({"reference": "flat"}, "reference must be None"),
    ({"reference": wb.approximations.StudentT(np.zeros(2), np.eye(2))}, "reference must be None"),
    ({"runs": 0}, "runs must be an integer >= 1"),
    ({"metric": "full"}, "metric must be one of"),
    ({"mcmc_steps": 5, "max_mcmc_steps": 2}, r"max_mcmc_steps \(2\) must be at least mcmc_steps \(5\)"),
    ({"decorrelation": 1.5}, r"decorrelation must lie in \[0, 1\]"),
])
def test_bad_settings_are_refused_by_name(settings, match):
    with pytest.raises(ValueError, match=match):
        wb.methods.SMC(**settings)


def test_a_reference_of_the_wrong_dimension_is_refused():
    ref = wb.approximations.Gaussian(np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="dimension 2 but the target has dimension 3"):
        wb.methods.SMC(reference=ref, **SMALL).run(GAUSS, seed=0)
    with pytest.raises(ValueError, match="has no prior"):
        wb.methods.SMC(reference="prior", **SMALL).run(GAUSS, seed=0)


def test_one_run_has_no_standard_error_and_says_so():
    res = wb.methods.SMC(particles=200, runs=1, progress=False).run(GAUSS, seed=0)
    # one run: its genealogy's standard error (there is no spread of runs)
    assert math.isfinite(res.log_z) and res.log_z_se > 0 and math.isnan(res.info["log_z_se_parts"]["runs_spread"])
    assert res.log_z_se == res.info["log_z_se_parts"]["genealogy"]
    assert any("no standard error" in m for m in res.messages)


def _tempered_gaussian_particles(beta, n=2000, d=50, seed=0):
    """Exact draws of p0^(1-b) p^b for p the 0.8-correlated Gaussian and p0 = N(0, 10^2 I)."""
    target = wb.targets.gaussian(d, correlation=0.8)
    precision = beta * np.linalg.inv(target.truth.cov) + (1 - beta) * np.eye(d) / 100
    cov = np.linalg.inv(precision)
    x = np.random.default_rng(seed).multivariate_normal(np.zeros(d), cov, size=n)
    return target, precision, np.ascontiguousarray(x)


@pytest.mark.parametrize("split", [True, False], ids=["other_half", "own_particles"])
def test_each_half_moved_with_the_other_halfs_metric_keeps_the_tempered_density(split):
    """A metric re-estimated from the very particles it moves stretches each particle's moves along
    where it already is, and the population settles too wide (E[x' P x] = d + about d^2 / n);
    with each half moved by the other half's covariance, the kernel is fixed for the particles
    it moves and the exact draws stay exact."""
    from workbench.smc import mutation as M
    from workbench.smc.mutation import particle_metric as _particle_metric
    from workbench.smc.mutation import split_halves
    from workbench.smc.reference import diagonal_gaussian

    beta, n, d = 0.05, 2000, 50
    target, precision, x = _tempered_gaussian_particles(beta, n, d)
    ref = diagonal_gaussian(np.zeros(d), 10.0, "wide")
    grads, lp = np.empty_like(x), np.empty(n)
    stop = np.zeros(2, dtype=np.int64)
    M.evaluate.for_target(target)(target.kernel_logp_grad, target.kernel_data, x, grads, lp, stop)
    lp0 = ref.logpdf(x)
    log_w = np.zeros(n)
    settings = M.mutation_settings(kind=M.KERNEL_HMC, n_leapfrog=3, mcmc_steps=1, step=0.9, jitter=0.3)
    mutate, rng, counts = M.mutate.for_target(target), np.random.default_rng(1), np.zeros(3, dtype=np.int64)
    halves = split_halves(n) if split else [(slice(0, n), slice(0, n))]
    for _ in range(40):
        for moving, other in halves:
            inv_mass, chol = _particle_metric(x[other], log_w[other], np.ones(d), dense=True)
            mutate(target.kernel_logp_grad, target.kernel_data, x[moving], grads[moving], lp[moving], lp0[moving],
                   log_w[moving], rng, beta, ref.mean, ref.precision, ref.log_norm, inv_mass, chol, settings, stop, counts)
    quadratic = np.einsum("ni,ij,nj->n", x, precision, x)  # chi^2_d for exact draws
    z = (quadratic.mean() - d) / math.sqrt(2 * d / n)
    if split:
        assert abs(z) < 4, z
    else:
        assert z > 4, z  # the control: the check sees the bias it guards against


def test_extra_moves_run_until_the_particles_forget_their_start_and_stop_at_the_most():
    gauss = wb.methods.SMC(runs=1, particles=500, progress=False).run(wb.targets.gaussian(10), seed=0)
    assert np.all(gauss.stats["moves"] >= 5) and np.all(gauss.stats["correlation"] < 0.1)
    # on separated peaks the particles keep their peak: every late stage makes the most moves
    mixture = wb.targets.gaussian_mixture(dim=10, n_components=3, seed=0)
    res = wb.methods.SMC(runs=1, particles=500, max_mcmc_steps=12, progress=False).run(mixture, seed=0)
    assert res.stats["moves"].max() == 12 and res.stats["moves"][-1] == 12
    assert np.all((res.stats["moves"] == 12) | (res.stats["correlation"] < 0.1))


def test_the_genealogy_variance_is_importance_samplings_without_resampling_and_one_when_degenerate():
    """Lee and Whiteley's estimator: with no resampling and weights W, (N sum W^2 - 1) / (N - 1),
    the unbiased relative variance of importance sampling's Z-hat; equal weights, 0; every
    particle descended from one start particle, 1 (no information left)."""
    from workbench.methods.smc import eve_relative_variance

    rng = np.random.default_rng(0)
    log_w = rng.normal(size=500)
    w = np.exp(log_w) / np.exp(log_w).sum()
    n = w.size
    assert eve_relative_variance(np.arange(n), log_w, 0) == pytest.approx((n * (w @ w) - 1) / (n - 1))
    assert eve_relative_variance(np.arange(n), np.zeros(n), 0) == pytest.approx(0.0, abs=1e-12)
    assert eve_relative_variance(np.zeros(n, dtype=int), np.zeros(n), 7) == pytest.approx(1.0)


def test_the_standard_error_of_log_z_is_the_larger_of_the_runs_spread_and_their_genealogy():
    from workbench.fitting.importance_weights import log_evidence
    from workbench.methods.smc import _evidence_and_error

    agree = np.array([-3.0, -3.001, -2.999, -3.0])  # four runs that happen to agree
    log_z, se, parts = _evidence_and_error(agree, np.full(4, 0.01))
    assert log_z == pytest.approx(log_evidence(agree)[0])
    assert se == parts["genealogy"] == pytest.approx(0.1 / 2, rel=1e-3)  # sqrt(0.01 / 4): the floor
    spread = np.array([-3.0, -2.5, -3.4, -2.8])
    assert _evidence_and_error(spread, np.full(4, 0.01))[1] == pytest.approx(log_evidence(spread)[1])


def test_a_run_with_too_few_particles_for_its_dimension_says_so():
    """Under a budget that pays for a few dozen particles a run, on the 11-d diabetes regression
    SMC was 0.56 posterior sds off with its health "ok": its runs now say they are too few."""
    from workbench.diagnostics import health_flags
    from workbench.smc.health import particles_needed

    t = wb.targets.linear_regression("diabetes")
    res = wb.methods.SMC(runs=4, particles=50, progress=False).run(t, seed=0, grad_budget=100_000)
    assert res.info["particles"] < particles_needed(t.dim) == 220
    assert "few particles" in health_flags(res.messages).split(", ")
    err = np.abs(res.flat_draws().mean(axis=0) - t.truth.mean) / t.truth.sd
    assert err.max() > 0.3  # the runs are far off, as the flag says
