"""Every built-in target (workbench/targets/): gradients, self-consistent truth, exact log Z, mini-batch forms,
settings."""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate

import workbench as wb
from workbench.errors import TargetError

T = wb.targets

LOW_DIM = {
    "gaussian_isotropic": lambda: T.gaussian(3),
    "gaussian_logspace": lambda: T.gaussian(6, scales="logspace"),
    "gaussian_correlated": lambda: T.gaussian(5, scales="logspace", correlation=0.6),
    "gaussian_anticorrelated": lambda: T.gaussian(4, correlation=-0.3),
    "gaussian_mixture": lambda: T.gaussian_mixture(3, n_components=3, seed=1),
    "dense_mixture": lambda: T.dense_mixture(3, n_components=3, seed=1),
    "dense_mixture_student_t": lambda: T.dense_mixture(3, n_components=2, family="student_t", df=5.0, seed=2),
    "funnel": lambda: T.funnel(4),
    "banana": lambda: T.banana(3),
    "linear_regression": lambda: T.linear_regression(n_data=50, dim=3),
    "linear_regression_diabetes": lambda: T.linear_regression("diabetes"),
    "logistic_regression": lambda: T.logistic_regression(n_data=80, dim=4),
    "logistic_regression_breast_cancer": lambda: T.logistic_regression("breast_cancer"),
    "bnn": lambda: T.bnn(n_data=20),
    "bnn_two_layers": lambda: T.bnn(n_data=20, widths=(5, 4)),
}
HIGH_DIM = {
    "gaussian_correlated": lambda: T.gaussian(2000, scales="logspace", correlation=0.3),
    "gaussian_mixture": lambda: T.gaussian_mixture(1000, n_components=4),
    "funnel": lambda: T.funnel(1000),
    "banana": lambda: T.banana(1000),
    "linear_regression": lambda: T.linear_regression(n_data=300, dim=150),
    "logistic_regression": lambda: T.logistic_regression(n_data=300, dim=150),
    "bnn": lambda: T.bnn(n_data=30, widths=(15, 15)),
}


# -- gradients ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", LOW_DIM)
def test_gradient_matches_finite_differences_low_dim(name):
    t = LOW_DIM[name]()
    chk = wb.check_gradient(t, n_points=4, seed=3)
    assert chk.max_rel_error < 1e-6, chk


@pytest.mark.parametrize("name", HIGH_DIM)
def test_gradient_matches_finite_differences_high_dim(name):
    t = HIGH_DIM[name]()
    chk = wb.check_gradient(t, n_points=1, seed=5)
    assert chk.max_rel_error < 1e-6, chk


def test_gradient_at_far_points():
    """Away from the typical set (tails, the funnel's neck and mouth) the gradient still holds."""
    for t, x in [
        (T.funnel(3), np.array([-6.0, 0.01, -0.02])),
        (T.funnel(3), np.array([7.0, 30.0, -20.0])),
        (T.banana(2), np.array([25.0, 20.0])),
        (T.gaussian_mixture(2, seed=2), np.array([40.0, -40.0])),
        (T.logistic_regression(n_data=50, dim=3), np.array([30.0, -30.0, 30.0])),
    ]:
        assert wb.check_gradient(t, points=x).max_rel_error < 1e-6


def test_ten_thousand_dimensions_without_dense_matrices():
    for t in (
        T.gaussian(10_000, scales="logspace", correlation=0.5),
        T.gaussian_mixture(10_000),
        T.funnel(10_000),
        T.banana(10_000),
    ):
        x = t.truth.sample(1, 0)[0]
        lp, g = t.logp_and_grad(x)
        assert np.isfinite(lp) and np.all(np.isfinite(g)) and g.shape == (10_000,)
        assert t.truth.sd.shape == (10_000,)
        assert "cov" not in t.truth.__dict__  # the dense covariance was never built


# -- truth: moments, marginals, log Z -----------------------------------------------------

EXACT = {
    "gaussian_correlated": lambda: T.gaussian(4, scales=[0.5, 1.0, 2.0, 3.0], correlation=0.5, mean=[1, -1, 0, 2]),
    "gaussian_anticorrelated": lambda: T.gaussian(3, scales="logspace", correlation=-0.4),
    "gaussian_mixture": lambda: T.gaussian_mixture(3, n_components=3, seed=1),
    "funnel": lambda: T.funnel(3),
    "banana": lambda: T.banana(3, twist=0.03),
    "linear_regression": lambda: T.linear_regression(n_data=30, dim=3),
}


@pytest.mark.parametrize("name", EXACT)
def test_exact_sampler_matches_declared_mean_and_covariance(name):
    t = EXACT[name]()
    n = 200_000
    x = t.truth.sample(n, 11)
    sd = t.truth.sd
    # mean: within 5 Monte Carlo standard errors per coordinate
    assert np.all(np.abs(x.mean(0) - t.truth.mean) < 5 * sd / math.sqrt(n))
    # covariance: each entry within 5 standard errors estimated from the draws themselves
    # (robust to the funnel's heavy tails, whose variance has no useful closed-form SE)
    centred = x - t.truth.mean
    products = centred[:, :, None] * centred[:, None, :]
    se = products.std(0) / math.sqrt(n)
    assert np.all(np.abs(products.mean(0) - t.truth.cov) < 5 * se + 1e-12)
    np.testing.assert_allclose(np.sqrt(np.diag(t.truth.cov)), sd, rtol=1e-12)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in ("funnel", "banana") else n for n in EXACT]
)
def test_marginals_integrate_to_one_and_match_exact_draws(name):
    t = EXACT[name]()
    x = t.truth.sample(50_000, 7)
    for k in range(t.dim):
        lo, hi = np.quantile(x[:, k], [1e-4, 1 - 1e-4])
        pad = 10 * t.truth.sd[k]
        mass = integrate.quad(lambda v, k=k: t.truth.marginal_pdf(k, v), lo - pad, hi + pad, limit=400)[0]
        assert mass == pytest.approx(1.0, abs=2e-4), (k, mass)
        # binned counts vs the probabilities the declared cdf gives (z-scores < 5)
        edges = np.quantile(x[:, k], np.linspace(0, 1, 21))[1:-1]
        probs = np.diff(np.concatenate([[0.0], t.truth.marginal_cdf(k, edges), [1.0]]))
        counts = np.bincount(np.searchsorted(edges, x[:, k]), minlength=20)
        z = (counts - len(x) * probs) / np.sqrt(len(x) * probs * (1 - probs))
        assert np.max(np.abs(z)) < 5, (k, z)
        # the pdf is the derivative of the cdf
        mid = np.quantile(x[:, k], [0.2, 0.5, 0.8])
        h = 1e-6 * t.truth.sd[k]  # small: the funnel's x-marginal has a sharp peak at 0
        dcdf = (t.truth.marginal_cdf(k, mid + h) - t.truth.marginal_cdf(k, mid - h)) / (2 * h)
        np.testing.assert_allclose(dcdf, t.truth.marginal_pdf(k, mid), rtol=1e-4)


def _log_integral(t, box):
    """log of the integral of exp(logp) over a 1-D or 2-D box, by adaptive quadrature."""
    c = max(t.logp(np.array(p, dtype=float)) for p in itertools.product(*[np.linspace(a, b, 41) for a, b in box]))
    if t.dim == 1:
        val = integrate.quad(lambda a: math.exp(t.logp(np.array([a])) - c), *box[0], limit=400)[0]
    else:
        val = integrate.dblquad(
            lambda b, a: math.exp(t.logp(np.array([a, b])) - c),
            *box[0],
            *box[1],
            epsabs=1e-11,
            epsrel=1e-9,
        )[0]
    return c + math.log(val)


@pytest.mark.parametrize(
    "make, box",
    [
        (lambda: T.gaussian(1, scales=2.5), [(-25, 25)]),
        (lambda: T.gaussian(2, scales=[0.5, 3.0], correlation=0.7), [(-5, 5), (-30, 30)]),
        (lambda: T.gaussian_mixture(1, n_components=3, seed=4), None),
        (lambda: T.gaussian_mixture(2, n_components=2, seed=4), None),
        (lambda: T.funnel(1), [(-30, 30)]),
        (lambda: T.funnel(2), [(-25, 25), (-4000, 4000)]),
        (lambda: T.banana(2), [(-80, 80), (-50, 200)]),
        (lambda: T.linear_regression(n_data=20, dim=1), None),
        (lambda: T.linear_regression(n_data=20, dim=2, prior_sd=2.0), None),
    ],
    ids=["gauss1", "gauss2", "mix1", "mix2", "funnel1", "funnel2", "banana2", "linreg1", "linreg2"],
)
@pytest.mark.slow
def test_declared_log_z_matches_numerical_integration(make, box):
    t = make()
    if box is None:  # 12 sds around the (exact) mean
        box = [(m - 12 * s, m + 12 * s) for m, s in zip(t.truth.mean, t.truth.sd)]
    if t.name == "funnel" and t.dim == 2:
        # integrate x analytically-safe: substitute x = e^(v/2) u so the neck is resolved
        val = integrate.dblquad(
            lambda u, v: math.exp(t.logp(np.array([v, math.exp(v / 2) * u])) + v / 2),
            -25, 25, -12, 12, epsabs=1e-12,
        )[0]
        assert math.log(val) == pytest.approx(t.truth.log_z, abs=1e-6)
        return
    assert _log_integral(t, box) == pytest.approx(t.truth.log_z, abs=1e-6)


# -- mini-batch form ---------------------------------------------------------------------

BATCHED = {
    "linear_regression": lambda: T.linear_regression(n_data=8, dim=3, seed=2),
    "logistic_regression": lambda: T.logistic_regression(n_data=8, dim=3, seed=2),
    "bnn": lambda: T.bnn(n_data=8, widths=(4,), seed=2),
}


@pytest.mark.parametrize("name", BATCHED)
def test_batches_with_scale_one_sum_to_the_full_density(name):
    t = BATCHED[name]()
    x = t.initial_point + np.random.default_rng(0).normal(0, 0.5, t.dim)
    prior, gprior = t.logp_and_grad_batch(x, np.array([], dtype=np.int64), 1.0)  # no rows: the prior
    full, gfull = t.logp_and_grad(x)
    parts = [np.array([0, 5]), np.array([1, 2, 7]), np.array([3]), np.array([4, 6])]
    total, gtotal = prior, gprior.copy()
    for rows in parts:  # each batch carries the prior once: count it once overall
        lp, g = t.logp_and_grad_batch(x, rows, 1.0)
        total += lp - prior
        gtotal += g - gprior
    assert total == pytest.approx(full, rel=1e-12)
    np.testing.assert_allclose(gtotal, gfull, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", BATCHED)
def test_scaled_batches_are_unbiased(name):
    """With scale N_D / N_m, the average over all batches of size N_m is the full density."""
    t = BATCHED[name]()
    x = t.initial_point + np.random.default_rng(1).normal(0, 0.5, t.dim)
    full, gfull = t.logp_and_grad(x)
    n_m = 3
    batches = list(itertools.combinations(range(t.n_data), n_m))
    vals, grads = zip(*(t.logp_and_grad_batch(x, np.array(b), t.n_data / n_m) for b in batches))
    assert np.mean(vals) == pytest.approx(full, rel=1e-12)
    np.testing.assert_allclose(np.mean(grads, axis=0), gfull, rtol=1e-10, atol=1e-12)
    # and a single batch is not the full density (the test can fail)
    assert abs(vals[0] - full) > 1e-6


# -- catalogue and settings --------------------------------------------------------------


def test_available_lists_every_constructor_with_one_line():
    listed = T.available()
    assert set(listed) == {
        "gaussian", "gaussian_mixture", "dense_mixture", "funnel", "banana",
        "linear_regression", "logistic_regression", "bnn", "eight_schools", "posterior", "rotated_gaussian",
    }
    for name, line in listed.items():
        assert callable(getattr(T, name)) and "\n" not in line and len(line) > 20


def test_dim_one_works_for_every_dim_target():
    for t in (T.gaussian(1), T.gaussian_mixture(1), T.funnel(1), T.banana(1)):
        assert t.dim == 1 and np.isfinite(t.logp(np.zeros(1)))
        assert wb.check_gradient(t).max_rel_error < 1e-6


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: T.gaussian(0), "dim must be an integer >= 1"),
        (lambda: T.gaussian(3, scales=[1.0, -1.0, 2.0]), "scales must be positive"),
        (lambda: T.gaussian(3, scales=0.0), "scales must be positive"),
        (lambda: T.gaussian(3, scales=[1.0, 2.0]), r"scales has shape \(2,\)"),
        (lambda: T.gaussian(4, correlation=-0.34), r"outside \(-1/\(d-1\), 1\)"),
        (lambda: T.gaussian(4, correlation=1.0), r"outside \(-1/\(d-1\), 1\)"),
        (lambda: T.gaussian(1, correlation=0.5), "correlation needs dim >= 2"),
        (lambda: T.gaussian_mixture(0), "dim must be an integer >= 1"),
        (lambda: T.gaussian_mixture(2, n_components=0), "n_components must be an integer >= 1"),
        (lambda: T.gaussian_mixture(2, weights=[0.5, -0.5]), "weights must be positive"),
        (lambda: T.gaussian_mixture(2, n_components=2, scales=[[1.0, 0.0], [1.0, 1.0]]), "scales must be positive"),
        (lambda: T.funnel(0), "dim must be an integer >= 1"),
        (lambda: T.banana(-1), "dim must be an integer >= 1"),
        (lambda: T.linear_regression(prior_sd=0.0), "prior_sd must be positive"),
        (lambda: T.linear_regression(noise_sd=-1.0), "noise_sd must be positive"),
        (lambda: T.linear_regression("iris"), "unknown dataset"),
        (lambda: T.logistic_regression("custom", X=np.ones((3, 2)), y=[0, 1, 2]), r"y in \{0, 1\}"),
        (lambda: T.bnn(widths=(0,)), "widths must be positive"),
        (lambda: T.bnn(x=np.zeros(3), y=np.zeros(3), sigma=0.0), "sigma must be positive"),
    ],
)
def test_invalid_target_settings_are_named(make, message):
    with pytest.raises(TargetError, match=message):
        make()


