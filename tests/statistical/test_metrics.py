"""NUTS and HMC under each metric (``workbench/mcmc/adaptation.py``) against exact answers."""

import warnings

import numpy as np
import pytest

import workbench as wb
from tests.statistical.test_samplers import assert_moments_within_mcse

ROTATED = wb.targets.rotated_gaussian(12, variances=[100.0, 20.0], seed=4)
CORRELATED = wb.targets.gaussian(10, correlation=0.9)
METRICS = ["diag", "diag_stan", "low_rank", "dense", "identity"]


@pytest.mark.parametrize("target", [ROTATED, CORRELATED], ids=["rotated", "equicorrelated"])
@pytest.mark.parametrize("metric", METRICS)
def test_nuts_moments_within_4_mcse_under_every_metric(metric, target):
    res = wb.methods.NUTS(chains=4, warmup=500, draws=1000, metric=metric, progress=False).run(target, seed=21)
    assert res.info["metric"] == metric
    assert_moments_within_mcse(res, target)


@pytest.mark.parametrize("metric", ["low_rank", "dense"])
def test_hmc_moments_within_4_mcse_under_low_rank_and_dense(metric):
    res = wb.methods.HMC(chains=4, warmup=500, draws=1000, metric=metric, progress=False).run(ROTATED, seed=22)
    assert_moments_within_mcse(res, ROTATED)


def test_the_low_rank_metric_learns_the_rotated_directions_and_reports_them():
    res = wb.methods.NUTS(chains=2, warmup=500, draws=200, metric="low_rank", progress=False).run(ROTATED, seed=3)
    cov = ROTATED.truth.cov
    for c in range(2):
        vals = np.sort(res.info["metric_eigenvalues"][c])[::-1]
        assert res.info["metric_rank"][c] == len(vals) >= 2
        # in the diagonal's scaled coordinates the two large directions stand out by far
        assert vals[0] > 10 and vals[1] > 3
        # the metric's diagonal is the posterior's variances
        np.testing.assert_allclose(res.info["inv_mass"][c], np.diag(cov), rtol=0.5)
    assert res.info["metric_sigma"].shape == (2, ROTATED.dim)


def test_low_rank_beats_diag_per_gradient_where_the_posterior_is_rotated():
    """The reason the metric exists, at a margin no seed closes: on the rotated Gaussian the
    diagonal metric needs many times more gradients per effective draw."""
    ess = {}
    for metric in ("diag", "low_rank"):
        res = wb.methods.NUTS(chains=2, warmup=500, draws=500, metric=metric, progress=False).run(ROTATED, seed=5)
        ess[metric] = wb.metrics.evaluate(res, ROTATED)["ess_per_1k_grad"]
    assert ess["low_rank"] > 3 * ess["diag"], ess


def test_dense_metric_info_holds_the_inverse_metric():
    res = wb.methods.NUTS(chains=1, warmup=400, draws=100, metric="dense", progress=False).run(CORRELATED, seed=1)
    m_inv = res.info["inv_mass_dense"][0]
    np.testing.assert_allclose(np.diag(m_inv), res.info["inv_mass"][0], rtol=1e-10)
    # close to the covariance: whitened, its condition number is small (it is 91 unwhitened)
    white = np.linalg.eigvalsh(np.linalg.solve(m_inv, CORRELATED.truth.cov))
    assert white.max() / white.min() < 4


@pytest.mark.parametrize("metric", ["diag", "diag_stan", "low_rank", "dense"])
def test_same_seed_same_draws_under_every_metric(metric):
    method = wb.methods.NUTS(chains=2, warmup=200, draws=100, metric=metric, progress=False)
    a = method.run(ROTATED, seed=9).draws
    b = wb.methods.NUTS(chains=2, warmup=200, draws=100, metric=metric, progress=False, threads=1).run(ROTATED, seed=9).draws
    assert np.array_equal(a, b)


# Draws of the diagonal schemes, pinned (the same Numba arithmetic on this machine type): the
# sum of each chain's draws, 2 chains x 200 draws after 300 warmup iterations on
# gaussian(5, scales="logspace", correlation=0.5), seed 11. Re-pinned when NUTS's adaptation
# was measured against nutpie's (one uninterrupted dual averaging, the symmetric acceptance
# statistic, the jittered step, the gradient start: mcmc/adaptation.py); NUTS with Stan's
# windows again when a warmup divergence came to raise the target by quarters, restart dual
# averaging, and count only 50 iterations or more after a restart (mcmc/chains.py; one chain
# of this run still raises it, to 0.95, its early windows' metric being poor); HMC with Stan's
# windows is unchanged since the metrics became a setting.
BEFORE = {
    ("NUTS", "diag"): [-169.70585555, 16.40741329],
    ("HMC", "diag"): [-1.66773153, 0.20075703],
    ("NUTS", "diag_stan"): [-59.41525468, -173.19590641],
    ("HMC", "diag_stan"): [-91.37401542, 3.68476936],
}


@pytest.mark.parametrize("sampler, metric", list(BEFORE))
def test_the_diagonal_schemes_give_the_same_draws_as_before(sampler, metric):
    t = wb.targets.gaussian(5, scales="logspace", correlation=0.5)
    res = getattr(wb.methods, sampler)(chains=2, warmup=300, draws=200, metric=metric, progress=False).run(t, seed=11)
    np.testing.assert_allclose(res.draws.sum(axis=(1, 2)), BEFORE[sampler, metric], rtol=1e-7)


def test_adapt_mass_still_works_with_a_deprecation_warning():
    t = wb.targets.gaussian(5, scales="logspace", correlation=0.5)
    with pytest.warns(DeprecationWarning, match="metric='diag_stan'"):
        method = wb.methods.NUTS(chains=2, warmup=300, draws=200, adapt_mass="stan", progress=False)
    assert method.metric == "diag_stan"
    np.testing.assert_allclose(method.run(t, seed=11).draws.sum(axis=(1, 2)), BEFORE["NUTS", "diag_stan"], rtol=1e-7)
    with pytest.raises(ValueError, match="disagree"):
        wb.methods.NUTS(adapt_mass="stan", metric="low_rank")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: wb.methods.NUTS(metric="full"),
         r"metric must be one of \['auto', 'dense', 'diag', 'diag_stan', 'flow', 'identity', 'low_rank'\]"),
        (lambda: wb.methods.HMC(metric=None), "metric must be one of"),
        (lambda: wb.methods.NUTS(metric="low_rank", metric_rank=0), "metric_rank must be an integer >= 1"),
        (lambda: wb.methods.NUTS(metric="low_rank", metric_rank=2.5), "metric_rank must be an integer"),
        (lambda: wb.methods.NUTS(metric="low_rank", metric_cutoff=1.0), "metric_cutoff must be a finite number > 1"),
        (lambda: wb.methods.NUTS(metric="low_rank", metric_cutoff=float("nan")), "metric_cutoff must be"),
        (lambda: wb.methods.NUTS(metric="low_rank", metric_gamma=0.0), "metric_gamma must be a finite number > 0"),
    ],
)
def test_bad_metric_settings_name_the_setting(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_rank_above_the_dimension_is_refused_at_run_time():
    with pytest.raises(ValueError, match="metric_rank=11 exceeds the target's dimension 10"):
        wb.methods.NUTS(metric="low_rank", metric_rank=11, progress=False).run(CORRELATED, seed=0)


def test_a_dense_metric_that_would_not_fit_in_memory_is_refused():
    t = wb.targets.gaussian(200_000)
    with pytest.raises(ValueError, match="metric='dense' at d=200000 needs about .* GiB"):
        wb.methods.NUTS(metric="dense", chains=1, warmup=10, draws=10, progress=False).run(t, seed=0)


def test_a_failed_metric_estimate_mid_warmup_is_reported_without_a_warning():
    """Draws of scale 1e170 overflow the estimator's covariances while the diagonal is still
    far off: those estimates are unusable. The chain goes on with the diagonal alone until the
    next window's estimate, does not crash, and says so in the result; the last estimates are
    usable (a 4-d Gaussian's metric keeps all 4 directions), so the draws use the metric asked
    for and nothing is worth a warning."""
    t = wb.targets.gaussian(4, scales=1e170)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = wb.methods.NUTS(chains=2, warmup=300, draws=100, metric="low_rank", progress=False).run(t, seed=2)
    assert res.info["metric_fallbacks"] > 0 and res.draws.shape == (2, 100, 4)
    assert res.info["metric_rank"] == [4, 4]
    assert any("not finite or not positive definite" in m for m in res.messages)
    assert not any("diagonal alone" in str(w.message) for w in caught)


def test_a_failed_last_metric_estimate_warns_that_the_chain_sampled_on_the_diagonal():
    """With 4 warmup iterations a chain makes one or two estimates, all while its draws are of
    scale 1e170; where its last one fails (its rank is 0: a usable estimate keeps all 4
    directions) the run warns, naming how many chains sampled on the diagonal alone."""
    t = wb.targets.gaussian(4, scales=1e170)
    warned_runs = 0
    for seed in range(4):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = wb.methods.NUTS(chains=2, warmup=4, draws=20, metric="low_rank", progress=False).run(t, seed=seed)
        on_diagonal = sum(rank == 0 for rank in res.info["metric_rank"])
        warned = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)
                  and "sampled on the diagonal alone" in str(w.message)]
        assert len(warned) == (1 if on_diagonal else 0), (seed, res.info["metric_rank"], warned)
        if on_diagonal:
            assert f"in {on_diagonal} of 2 chains the last one did" in warned[0]
            warned_runs += 1
    assert warned_runs >= 2


def test_nuts_on_a_flow_samples_neals_funnel_without_a_divergence():
    """Neal's funnel (d = 30, v ~ N(0, 3^2)): the phases on the flow diverge in its neck, so the draws
    halve their step there (WALNUTS) and meet posteriordb's standard; v's mean and sd are within 4
    MCSE of the exact ones and its mass in the neck (v < -6) within 4 of its binomial standard error.
    (The x's variances are no test: their fourth moments, 3 E e^{2v} = 3 e^18, make an MCSE of the sd
    meaningless.)"""
    import arviz as az
    from scipy.stats import norm

    target = wb.targets.funnel(dim=30)
    res = wb.methods.NUTS(metric="flow", progress=False).run(target, seed=2)
    d = res.info["diagnostics"]
    assert res.info["flow"]["used"] and res.info["flow"]["walnuts"]
    assert d["divergences"] == 0 and d["r_hat_max"] < 1.01 and min(d["ess_bulk_min"], d["ess_tail_min"]) >= 400
    v = res.draws[..., 0]
    assert abs(v.mean()) < 4 * float(az.mcse(v))
    assert abs(v.std() - 3.0) < 4 * float(az.mcse(v, method="sd"))
    neck, p = (v < -6.0).astype(float), norm.cdf(-2.0)
    ess = float(az.ess(neck))
    assert abs(neck.mean() - p) < 4 * np.sqrt(p * (1 - p) / ess)


def test_the_low_rank_metric_restarts_the_step_search_at_its_first_estimate(monkeypatch):
    """Its first estimate, from three draws, replaces the identity: the step dual averaging had
    reached under the identity is far too short for it, and without a new search the chains
    crawl through the first window on trees of up to 1,023 steps (mcmc/adaptation.py)."""
    from workbench.mcmc import adaptation as A

    target = wb.posteriors.load("diabetes_linear")
    method = wb.methods.NUTS(chains=4, warmup=400, draws=50, metric="low_rank", progress=False)
    restarted = method.run(target, seed=0)
    schedule = A.warmup_schedule

    def without_restart(n_warmup, metric, adapt_step=True):
        s = schedule(n_warmup, metric, adapt_step)
        return s._replace(flags=s.flags & ~A.RESTART_STEP)

    monkeypatch.setattr(A, "warmup_schedule", without_restart)
    crawled = method.run(target, seed=0)
    # 0.34-0.56 of it over seeds 0-9
    assert restarted.cost.warmup_grad_evals < 0.7 * crawled.cost.warmup_grad_evals, (
        restarted.cost.warmup_grad_evals, crawled.cost.warmup_grad_evals)
