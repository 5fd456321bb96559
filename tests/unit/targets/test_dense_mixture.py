"""workbench/targets/dense_mixture.py: GMMVI's mixture benchmarks against scipy's densities."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import workbench as wb
from workbench.errors import TargetError


def scipy_log_density(t, x):
    log_w, mu, inv_chols, _, df = t.data
    terms = []
    for k in range(mu.shape[0]):
        chol = np.linalg.inv(inv_chols[k])
        scale = chol @ chol.T
        if df[0] > 0:
            terms.append(log_w[k] + stats.multivariate_t.logpdf(x, mu[k], scale, df=df[0]))
        else:
            terms.append(log_w[k] + stats.multivariate_normal.logpdf(x, mu[k], scale))
    return logsumexp(np.stack(terms, axis=-1), axis=-1)


@pytest.mark.parametrize("family", ["gaussian", "student_t"])
def test_the_density_is_scipys_mixture(family):
    t = wb.targets.dense_mixture(6, n_components=4, family=family, df=3.0, seed=1)
    x = t.truth.sample(20, np.random.default_rng(0))
    for xi, expected in zip(x, scipy_log_density(t, x)):
        assert t.logp(xi) == pytest.approx(expected, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("family", ["gaussian", "student_t"])
def test_the_gradient_matches_finite_differences(family):
    t = wb.targets.dense_mixture(5, n_components=3, family=family, seed=2)
    rng = np.random.default_rng(3)
    for x in t.truth.sample(5, rng):
        _, g = t.logp_and_grad(x)
        h = 1e-6
        fd = np.array([(t.logp(x + h * e) - t.logp(x - h * e)) / (2 * h) for e in np.eye(5)])
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)


def test_the_sampler_matches_the_declared_moments_and_weights():
    t = wb.targets.dense_mixture(4, n_components=3, seed=4)
    x = t.truth.sample(200_000, np.random.default_rng(5))
    sd = t.truth.sd
    assert np.all(np.abs(x.mean(0) - t.truth.mean) < 4 * sd / np.sqrt(len(x)))  # 4 Monte Carlo standard errors
    np.testing.assert_allclose(np.cov(x.T), t.truth.cov, rtol=0.02, atol=0.02 * sd.max() ** 2)
    share = np.bincount(t.truth.extras["assign_component"](x), minlength=3) / len(x)
    np.testing.assert_allclose(share, 1 / 3, atol=0.01)


def test_the_marginals_integrate_to_the_cdf():
    t = wb.targets.dense_mixture(3, n_components=2, family="student_t", df=4.0, seed=6)
    grid = np.linspace(-60, 60, 20001)
    pdf = t.truth.marginal_pdf(1, grid)
    mass = t.truth.marginal_cdf_fn(1, grid[-1]) - t.truth.marginal_cdf_fn(1, grid[0])
    np.testing.assert_allclose(np.trapezoid(pdf, grid), mass, rtol=1e-4)


def test_the_spec_rebuilds_the_same_target():
    t = wb.targets.dense_mixture(3, n_components=2, seed=7)
    again = wb.targets.FACTORIES[t.spec["factory"]](**{k: v for k, v in t.spec.items() if k != "factory"})
    np.testing.assert_array_equal(again.data[1], t.data[1])


@pytest.mark.parametrize("kwargs, word", [({"dim": 0}, "dim"), ({"dim": 2, "family": "cauchy"}, "family"),
                                          ({"dim": 2, "family": "student_t", "df": 1.0}, "df"),
                                          ({"dim": 2, "n_components": 0}, "n_components")])
def test_bad_arguments_are_named(kwargs, word):
    with pytest.raises(TargetError, match=word):
        wb.targets.dense_mixture(**kwargs)
