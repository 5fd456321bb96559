"""The VI methods from their defaults: the mode search finds every peak, components adapt, and
the fits converge on real (raw-scale, hierarchical) posteriors. Fixed seeds throughout."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench import modes as M


def _per_peak(q, truth):
    """q's weight on each true peak (components assigned to the nearest peak in sd units)."""
    mu, s = truth.extras["component_means"], truth.extras["component_scales"]
    nearest = np.argmin((((q.means[:, None, :] - mu[None]) / s[None]) ** 2).sum(-1), axis=1)
    return np.bincount(nearest, weights=q.weights, minlength=len(mu))


def _check_mixture(dim, n_components, seed, budget):
    t = wb.targets.gaussian_mixture(dim=dim, n_components=n_components, seed=seed)
    res = wb.methods.NN4Post(progress=False).run(t, seed=0, grad_budget=budget)
    assert res.cost.grad_evals <= budget
    true_w = t.truth.extras["component_weights"]
    assert np.all(_per_peak(res.approximation, t.truth) > 0.5 * true_w)  # every peak has a component
    row = wb.metrics.evaluate(res, t)
    assert row["mode_weight_err_max"] <= 0.02
    # Exact's W1 with as many draws is the Monte Carlo floor; one run of it is itself noisy
    # (0.010 to 0.014 over seeds on one target), so its mean over five seeds is the comparator.
    # NN4Post's own W1 varies from run to run by more: on mixture seed 1, fits of 90,000, 95,000
    # and 100,000 gradients scored 0.013, 0.019 and 0.041 (0.8x-2.4x the floor)
    exact = np.mean([wb.metrics.evaluate(wb.methods.Exact(chains=4, draws=1000).run(t, seed=s), t)["w1_mean"]
                     for s in range(5)])
    assert row["w1_mean"] <= 3.0 * exact


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nn4post_defaults_find_every_peak_of_the_accuracy_studys_2d_mixture(seed):
    _check_mixture(2, 3, seed, 100_000)


@pytest.mark.slow
@pytest.mark.parametrize("n_components", [3, 5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nn4post_defaults_find_every_peak_in_ten_dimensions(seed, n_components):
    _check_mixture(10, n_components, seed, 300_000)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nn4post_defaults_find_every_peak_in_a_hundred_dimensions(seed):
    _check_mixture(100, 3, seed, 1_000_000)


@pytest.mark.slow
@pytest.mark.parametrize("n_d", [100, 1000])
def test_the_papers_benchmark_from_the_default_start(n_d):
    """Weights 0.05/0.25/0.70 at -3, 0, +3 times ones, sds ln 2, N_c = 5 (nn4post sec. 7.1.1):
    the mode search's ladder of radii reaches the outer peaks' cells that a box start misses."""
    t = wb.targets.gaussian_mixture(n_d, weights=[0.05, 0.25, 0.70], means=[-3.0, 0.0, 3.0], scales=math.log(2))
    res = wb.methods.NN4Post(progress=False).run(t, seed=0)
    per_peak = _per_peak(res.approximation, t.truth)
    assert np.all(per_peak > 0.02)
    assert abs(per_peak[2] - 0.70) <= 0.02


def _raw_scale_regression():
    """Predictors on their raw scales (sds 1, 30, 1000, means far from 0): posterior sds that
    differ by a factor of about 2,600, the intercept correlated with every slope."""
    rng = np.random.default_rng(0)
    n = 200
    x1, x2, x3 = rng.normal(0, 1, n), rng.normal(50, 30, n), rng.normal(2000, 1000, n)
    X = np.column_stack([np.ones(n), x1, x2, x3])
    y = 50 + 2 * x1 + 0.3 * x2 + 0.01 * x3 + rng.normal(0, 5, n)
    return wb.targets.linear_regression("custom", X=X, y=y, noise_sd=5.0, prior_sd=100.0)


def _earnings_regression():
    """log earnings ~ height + male + height x male, height in inches (Gelman and Hill's example,
    simulated): the interaction and the raw height make the coefficients strongly correlated."""
    rng = np.random.default_rng(1)
    n = 1000
    male = (rng.random(n) < 0.4).astype(float)
    height = 64 + 5 * male + rng.normal(0, 3, n)
    X = np.column_stack([np.ones(n), height, male, height * male])
    y = 8.0 + 0.02 * height - 0.9 * male + 0.017 * height * male + rng.normal(0, 0.9, n)
    return wb.targets.linear_regression("custom", X=X, y=y, noise_sd=0.9, prior_sd=10.0)


@pytest.mark.parametrize("make", [_raw_scale_regression, _earnings_regression], ids=["raw_scales", "interaction"])
@pytest.mark.parametrize("method", [wb.methods.MeanFieldVI, wb.methods.NN4Post])
def test_vi_defaults_reach_the_posterior_mean_on_raw_scale_regressions(make, method):
    t = make()
    assert t.truth.sd.max() / t.truth.sd.min() > 100
    res = method(progress=False).run(t, seed=0, grad_budget=100_000)
    # against the exact conjugate posterior; the draws' own Monte Carlo error is < 0.03 sd
    assert wb.metrics.evaluate(res, t)["mean_err_max"] <= 0.2
    assert res.cost.grad_evals <= 100_000


@pytest.fixture(scope="module")
def eight_schools_reference():
    t = wb.targets.eight_schools()
    ref = wb.methods.NUTS(chains=4, warmup=1000, draws=5000, target_accept=0.95, progress=False).run(t, seed=11)
    row = wb.metrics.evaluate(ref, t, reference=ref.flat_draws())
    assert row["r_hat_max"] < 1.01 and row["ess_bulk_min"] > 2000
    return t, ref.flat_draws()


@pytest.mark.slow
@pytest.mark.parametrize("method", [wb.methods.MeanFieldVI, wb.methods.NN4Post])
def test_vi_defaults_reach_the_posterior_mean_on_a_hierarchical_model(method, eight_schools_reference):
    t, ref = eight_schools_reference
    res = method(progress=False).run(t, seed=0, grad_budget=100_000)
    err = np.abs(res.flat_draws().mean(0) - ref.mean(0)) / ref.std(0)
    assert err.max() <= 0.2


@pytest.fixture(scope="module")
def unimodal_targets():
    """gaussian(dim=100) with its exact moments; the logistic regression with a long NUTS run."""
    g = wb.targets.gaussian(100)
    logistic = wb.targets.logistic_regression()
    ref = wb.methods.NUTS(chains=4, warmup=1000, draws=5000, progress=False).run(logistic, seed=11).flat_draws()
    return {"gaussian100": (g, g.truth.mean, g.truth.sd), "logistic": (logistic, ref.mean(0), ref.std(0))}


# The defaults before the mode search: the paper's box start, a fixed Adam rate of 0.05, absolute
# steps, no decay and no component adaptation.
PREVIOUS_DEFAULTS = dict(init="box", learning_rate=0.05, lr_final=1.0, adapt_components=False, scale_steps=False)


@pytest.mark.parametrize("name", ["gaussian100", "logistic"])
@pytest.mark.parametrize("method", [wb.methods.MeanFieldVI, wb.methods.NN4Post])
def test_new_defaults_are_no_less_accurate_on_unimodal_targets(name, method, unimodal_targets):
    t, mean, sd = unimodal_targets[name]

    def errors(q):  # q's exact moments, so no Monte Carlo error of draws enters the comparison
        return (np.abs(q.mean - mean) / sd).max(), np.abs(q.sd / sd - 1).max()

    for budget in (20_000, 100_000):
        new = errors(method(progress=False).run(t, seed=0, grad_budget=budget).approximation)
        old = errors(method(progress=False, **PREVIOUS_DEFAULTS).run(t, seed=0, grad_budget=budget).approximation)
        # the reference's own error (logistic: about 0.01 sd) is the tolerance
        assert new[0] <= old[0] + 0.01 and new[1] <= old[1] + 0.01, (budget, new, old)


def test_a_fit_cut_short_says_it_has_not_converged_and_reports_k_hat():
    t = wb.targets.gaussian(10, scales="logspace")
    res = wb.methods.MeanFieldVI(init="box", steps=100, converge_tol=0, progress=False).run(t, seed=0)
    assert any(m.startswith("not converged: the ELBO was still rising") for m in res.messages)
    assert res.info["elbo_slope_t"] > 3
    assert math.isfinite(res.info["pareto_k"]) and any("Pareto k-hat" in m for m in res.messages)
    done = wb.methods.MeanFieldVI(progress=False).run(wb.targets.gaussian(3), seed=0)
    assert not any("not converged" in m for m in done.messages) and done.info["pareto_k"] < 0.7


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: wb.methods.NN4Post(init="random"), "init must be one of"),
        (lambda: wb.methods.NN4Post(init_range=3.0), "pass init='box' with it"),
        (lambda: wb.methods.NN4Post(epsilon=0.0), "epsilon must be > 0"),
        (lambda: wb.methods.NN4Post(search_budget=1.5), "search_budget is a fraction"),
        (lambda: wb.methods.NN4Post(c_accuracy=0.0), "c_accuracy must lie in"),
        (lambda: wb.methods.NN4Post(adapt_draws=0), "adapt_draws must be an integer >= 1"),
        (lambda: wb.methods.MeanFieldVI().run(wb.targets.gaussian(50), seed=0, grad_budget=200),
         r"grad_budget=200 is too small for init='modes'.*needs at least 300"),
    ],
)
def test_bad_settings_name_the_setting(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_hierarchical_posterior_without_a_mode_starts_vi_at_the_initial_point():
    """On the Brownian motion with unknown scales log p grows without bound as the innovation
    scale goes to 0: no ascent converges, and the fit starts from the initial point (the best
    point an ascent reached lies deep in that neck: FullRankVI from there ended 21.7 reference
    sds off, on the data set this library used before Inference Gym's), and then lands near
    the exact posterior: at the family's optimum, whose worst mean is 0.22 sd off (measured
    0.216-0.223 over seeds 1-3; on the old data 0.41-0.43), above the ELBO of Pathfinder's
    Gaussian, so it is not run again from there."""
    t = wb.posteriors.load("brownian_motion")
    search = M.find_modes(t, np.random.default_rng(0), starts=0, max_grad_evals=M.min_grad_evals(t.dim))
    assert search.fallback
    np.testing.assert_array_equal(search.modes[0].x, t.initial_point)
    fit = wb.methods.FullRankVI(progress=False).run(t, seed=1)
    assert any("started from the initial point" in m for m in fit.messages) and not fit.info["restarted"]
    err = np.abs(fit.approximation.mean - t.truth.mean) / t.truth.sd  # the exact posterior (Kalman, quadrature)
    assert err.max() < 0.3, err.max()  # measured 0.22


def _fixed_draws_optimum(target, full_rank, n_draws, start_mean=None, start_sd=None, seed=0):
    """(mean, sd) of the Gaussian (mean-field, or with ``full_rank`` full-rank) that maximises the
    ELBO averaged over fixed base draws: DADVI's deterministic objective (Giordano et al. 2024,
    eq. 5; compiled in ``workbench/vi/fixed_draws.py``), solved by SciPy's L-BFGS, so the family's
    optimum to within the draws' Monte Carlo error, reached without any step-size schedule.
    The draws come in antithetic pairs (eta, -eta): the odd terms of the objective's expansion
    about q's mean cancel, and on the log-Gaussian Cox process 1,000 such draws put the
    full-rank optimum's mean within 0.0014 reference sds of another draw set's (4,000 plain
    draws: 0.037)."""
    from scipy.optimize import minimize

    from workbench.vi import fixed_draws as FD

    d = target.dim
    half = np.random.default_rng(seed).standard_normal((n_draws // 2, d))
    objective = FD.FixedDrawsObjective(FD.fixed_draws_objective.for_target(target), target,
                                       np.concatenate([half, -half]), full_rank)
    mean = target.initial_point if start_mean is None else start_mean
    sd = np.ones(d) if start_sd is None else start_sd
    fit = minimize(objective.value_and_grad, FD.pack(mean, np.diag(sd), full_rank), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000})
    assert fit.success, fit.message
    mu, chol = FD.unpack(fit.x, d, full_rank)
    return mu, np.sqrt(np.sum(chol**2, axis=1))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_mean_field_vi_reaches_its_familys_optimum_on_the_brownian_motion(seed):
    """From its defaults MeanFieldVI ends where the mean-field family's ELBO optimum lies (found
    by L-BFGS on a fixed-draw objective), within 0.15 of that q's sds per coordinate (measured
    0.084 and 0.064, its sds within 0.085): what is left of its distance to the posterior (the
    optimum's worst mean is 0.57 reference sds off) is the family's, not the optimiser's. Seed
    2's mode search once kept a funnel's neck (log sigma = -17.7) as a mode, and the fit from it
    ended 30 sds off."""
    t = wb.posteriors.load("brownian_motion")
    mu_opt, sd_opt = _fixed_draws_optimum(t, full_rank=False, n_draws=1000)
    fit = wb.methods.MeanFieldVI(progress=False).run(t, seed=seed)
    gap = np.abs(fit.approximation.mean - mu_opt) / sd_opt
    assert gap.max() < 0.15, (t.param_names[int(np.argmax(gap))], gap.max())
    sd_ratio = np.sqrt(np.diag(fit.approximation.cov)) / sd_opt
    assert np.all(np.abs(sd_ratio - 1.0) < 0.15)


# draws of the fixed-draw objective that locate each family's optimum: 4,000 are cheap on the
# first two; the LGCP's density costs a 100 x 100 Cholesky factor and its inverse (0.13 ms), so
# 1,000 antithetic ones
OPTIMUM_DRAWS = {"stochastic_volatility": 4000, "brownian_motion": 4000, "lgcp": 1000}
# the full-rank optimum moves less with the draws: on the LGCP 500 antithetic draws put its mean
# within 0.0005-0.0025 reference sds of 1,000's (two draw sets), the mean-field one's 0.015-0.029
FULL_RANK_OPTIMUM_DRAWS = {**OPTIMUM_DRAWS, "lgcp": 500}


def _reference_mean_and_sd(t):
    """The exact posterior's mean and sds where the target has them (the Brownian motion's
    Kalman smoother), else the shipped reference's."""
    from workbench.references.shipped import shipped_reference

    if t.truth is not None and t.truth.mean is not None:
        return t.truth.mean, t.truth.sd
    ref = shipped_reference(t).draws
    return ref.mean(axis=0), ref.std(axis=0)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["stochastic_volatility", "lgcp"])
def test_mean_field_vi_reaches_its_familys_optimum_on_latent_variable_models(name):
    """From its defaults (about 63,000 gradients on stochastic volatility, 61,000 on the
    log-Gaussian Cox process) MeanFieldVI ends within 0.1 reference sds of the mean-field
    family's optimum in every mean, though on stochastic volatility the optimum itself is 1.79
    reference sds from the posterior in its worst mean (the family's bias, not the optimiser's).
    Measured 0.069 and 0.076 on stochastic volatility (seeds 1, 2; against the optimum of 4,000
    plain draws), 0.059 on the Cox process (seed 1, against two antithetic draw sets). With 500
    plain draws the optimum's location moved by 0.18 reference sds between two draw sets, too
    coarse to check a fit against."""
    t = wb.posteriors.load(name)
    ref_mean, ref_sd = _reference_mean_and_sd(t)
    # L-BFGS starts from the reference's moments, as for the full-rank family below: the same
    # optimum, in fewer of the LGCP's costly iterations
    mu_opt, _ = _fixed_draws_optimum(t, full_rank=False, n_draws=OPTIMUM_DRAWS[name], start_mean=ref_mean,
                                     start_sd=ref_sd)
    fit = wb.methods.MeanFieldVI(progress=False).run(t, seed=1)
    gap = np.abs(fit.approximation.mean - mu_opt) / ref_sd
    assert gap.max() < 0.1, (t.param_names[int(np.argmax(gap))], gap.max())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["stochastic_volatility", "brownian_motion", "lgcp"])
def test_full_rank_vi_reaches_its_familys_optimum_on_latent_variable_models(name):
    """From its defaults FullRankVI ends within 0.1 reference sds of the full-rank family's
    optimum in every mean, and stops itself. Measured (seeds 1, 2): stochastic volatility 0.029
    and 0.048 (10,000-12,000 steps), the optimum itself 0.26 from the posterior; the Brownian
    motion 0.009-0.041 (the optimum 0.22 from the exact posterior); the log-Gaussian Cox process
    0.007 against 1,000 antithetic draws' optimum (0.028-0.032 against 4,000 plain draws', which
    are the noisier: 0.037 from the antithetic one; 500 antithetic draws, the test's, are within
    0.0025 of 1,000's). Before its gradient left out q's score
    (Roeder et al. 2017) and its stopping rule watched the mean, it ended 0.41 away on
    stochastic volatility."""
    from workbench.vi.fit import STATUS_CONVERGED

    t = wb.posteriors.load(name)
    ref_mean, ref_sd = _reference_mean_and_sd(t)
    mu_opt, _ = _fixed_draws_optimum(t, full_rank=True, n_draws=FULL_RANK_OPTIMUM_DRAWS[name], start_mean=ref_mean,
                                     start_sd=ref_sd)
    fit = wb.methods.FullRankVI(progress=False).run(t, seed=1)
    gap = np.abs(fit.approximation.mean - mu_opt) / ref_sd
    assert gap.max() < 0.1, (t.param_names[int(np.argmax(gap))], gap.max())
    assert fit.info["status"] == STATUS_CONVERGED  # it stopped itself, not at its step cap


@pytest.mark.slow
def test_on_centred_eight_schools_each_vi_method_lands_or_says_it_failed_and_why():
    """The funnel: a Gaussian family cannot fit it. Each VI method either ends within 0.5
    posterior sds of the answer (NUTS on the non-centred form, mapped to the centred
    coordinates: theta_j = mu + tau eta_j) or its messages say it failed and why."""
    noncentred = wb.targets.eight_schools(centered=False)
    ref = wb.methods.NUTS(chains=4, warmup=1000, draws=2500, target_accept=0.95, progress=False).run(noncentred, seed=0)
    x = ref.flat_draws()
    centred_draws = np.column_stack([x[:, 0], x[:, 1], x[:, :1] + np.exp(x[:, 1:2]) * x[:, 2:]])
    mean, sd = centred_draws.mean(axis=0), centred_draws.std(axis=0)
    t = wb.targets.eight_schools(centered=True)
    for method in (wb.methods.MeanFieldVI(progress=False), wb.methods.FullRankVI(progress=False),
                   wb.methods.Pathfinder(), wb.methods.DADVI()):
        res = method.run(t, seed=1)
        err = np.max(np.abs(res.approximation.mean - mean) / sd)
        said = [m for m in res.messages if m.startswith(("funnel", "Pareto k-hat"))]
        assert err <= 0.5 or (said and "funnel" in said[0] + said[-1]), (method.name, err, res.messages)
    fit = wb.methods.FullRankVI(progress=False).run(t, seed=1)
    assert any(m.startswith("funnel: no mode was found") for m in fit.messages)


def _sp500_optimum(full_rank: bool):
    """The family's optimum on the S&P 500 volatility posterior: L-BFGS on 4,000 antithetic fixed
    draws from a start built from the data alone (x_t at the log of the squared returns), not
    from any method's fit. Two draw sets put its means within 0.03-0.04 of its sds of each other."""
    from workbench.targets import sp500

    t = wb.posteriors.load("stochastic_volatility_sp500")
    y = sp500.centred_returns()
    start = np.concatenate([[2.0, np.log(np.mean(y * y)), np.log(0.5)], np.log(y * y + 0.1 * np.mean(y * y))])
    return t, _fixed_draws_optimum(t, full_rank=full_rank, n_draws=4000, start_mean=start,
                                   start_sd=np.full(t.dim, 0.5))


@pytest.mark.slow
@pytest.mark.parametrize("method, bound", [("MeanFieldVI", 0.1), ("FullRankVI", 0.2)])
def test_vi_from_its_defaults_reaches_its_familys_optimum_on_real_sp500_volatility(method, bound):
    """Inference Gym's StochasticVolatilitySP500Small from PyMC's start (every log volatility at 0,
    6-10 below the posterior's). Before, FullRankVI ended 170 posterior sds off in the noise scale
    (seed 1: sigma 24 for 0.5, k-hat 8.2, still climbing after 20,000 steps) and its messages
    blamed a funnel; MeanFieldVI ended 'not converged' at sigma 0.2. Now MeanFieldVI starts from
    Pathfinder's Gaussian where its mode search finds no mode, and FullRankVI, whose fit from the
    initial point ends below that Gaussian's ELBO, says it diverged and fits again from there.
    Both reach their family's optimum: mean-field within 0.06-0.07 of its sds in every mean
    (seeds 1, 2); full-rank within 0.02-0.17 of its sds (six seeds; 20,000 fixed-schedule steps:
    0.04-0.12), in its least identified coordinate, the log noise scale, whose sd in q is a quarter
    of the posterior's: within 0.05 posterior sds."""
    full = method == "FullRankVI"
    t, (mu_opt, sd_opt) = _sp500_optimum(full)
    fit = getattr(wb.methods, method)(progress=False).run(t, seed=1)
    gap = np.abs(fit.approximation.mean - mu_opt) / sd_opt
    assert gap.max() < bound, (t.param_names[int(np.argmax(gap))], gap.max())
    assert np.all(np.abs(np.sqrt(np.diag(fit.approximation.cov)) / sd_opt - 1.0) < 0.15)
    assert any("Pathfinder's Gaussian" in m for m in fit.messages)
    if full:  # the first fit's failure is named as what it was, not blamed on the posterior
        (restart,) = [m for m in fit.messages if m.startswith("diverged")]
        assert "started again from Pathfinder's Gaussian" in restart and fit.info["restarted"]
