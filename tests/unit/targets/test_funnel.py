"""workbench/targets/funnel.py: the marginal of x against quadrature."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

import workbench as wb

T = wb.targets


def test_funnel_marginal_of_x_matches_adaptive_quadrature():
    """The vectorised Gauss-Legendre rule against scipy's adaptive quadrature, split at the
    scale mixture's peak in v (e^v = x^2), from tiny to huge |x|."""
    import sys

    funnel_module = sys.modules["workbench.targets.funnel"]
    xs = np.array([0.0, 1e-9, 1e-4, 0.01, 0.3, 1.0, 4.0, 30.0, 500.0, -2.0, -1e-3])

    def by_quad(x, integrand):
        peak = min(max(2.0 * math.log(max(abs(x), 1e-300)), -23.0), 23.0)
        edges = [-24.0, *sorted({peak, 0.0}), 24.0]
        return sum(integrate.quad(integrand, a, b, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
                   for a, b in zip(edges[:-1], edges[1:]))

    pdf = [by_quad(x, lambda v, x=x: stats.norm.pdf(x, 0.0, math.exp(0.5 * v)) * stats.norm.pdf(v, 0.0, 3.0)) for x in xs]
    cdf = [by_quad(x, lambda v, x=x: stats.norm.cdf(x * math.exp(-0.5 * v)) * stats.norm.pdf(v, 0.0, 3.0)) for x in xs]
    np.testing.assert_allclose(funnel_module.x_marginal_pdf(xs), pdf, rtol=1e-10)
    np.testing.assert_allclose(funnel_module.x_marginal_cdf(xs), cdf, rtol=0, atol=1e-12)


def test_funnel_density_is_minus_infinity_not_nan_where_its_terms_overflow():
    """A diverging trajectory can reach |v| ~ 1e154, where -v^2/18 and -n v / 2 overflow to
    infinities of opposite sign: the density is zero there, not undefined."""
    t = wb.targets.funnel(10)
    for v in (-1e200, -1e155, 1e155):
        lp, g = t.logp_and_grad(np.r_[v, np.ones(9)])
        assert lp == -np.inf and np.all(np.isfinite(g))
    lp, _ = t.logp_and_grad(np.r_[-300.0, np.zeros(9)])  # far down the neck, still finite
    assert np.isfinite(lp)


def test_a_funnel_with_another_log_scale_sd_matches_scipy_and_its_own_truth():
    """``v_sd`` (nutpie's documented flow example uses 1): the density against scipy's normals
    (normalised: its log Z is 0), the x marginal against adaptive quadrature, the exact sampler
    against the stated sds; Neal's (3) keeps its old spec, so cached cells still match."""
    import sys

    funnel_module = sys.modules["workbench.targets.funnel"]
    t = wb.targets.funnel(5, v_sd=1.0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        theta = rng.normal(size=5)
        lp, g = t.logp_and_grad(theta)
        scale = math.exp(0.5 * theta[0])
        expected = stats.norm.logpdf(theta[0], 0.0, 1.0) + stats.norm.logpdf(theta[1:], 0.0, scale).sum()
        assert lp == pytest.approx(expected, rel=1e-12)
        eps = 1e-6
        fd = [(t.logp_and_grad(theta + eps * e)[0] - t.logp_and_grad(theta - eps * e)[0]) / (2 * eps) for e in np.eye(5)]
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    x = 0.7
    quad = integrate.quad(lambda v: stats.norm.pdf(x, 0.0, math.exp(0.5 * v)) * stats.norm.pdf(v, 0.0, 1.0), -10, 10,
                          epsabs=1e-14, epsrel=1e-12)[0]
    assert funnel_module.x_marginal_pdf(np.array([x]), 1.0)[0] == pytest.approx(quad, rel=1e-10)
    draws = t.truth.sampler(np.random.default_rng(1), 200_000)
    np.testing.assert_allclose(draws.std(axis=0), t.truth.sd, rtol=0.02)
    assert t.truth.sd[1] == pytest.approx(math.exp(0.25))
    assert t.spec == {"factory": "funnel", "dim": 5, "v_sd": 1.0}
    assert wb.targets.funnel(5).spec == {"factory": "funnel", "dim": 5}
    with pytest.raises(wb.TargetError, match="v_sd must be a number in"):
        wb.targets.funnel(5, v_sd=0.0)
