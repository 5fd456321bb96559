"""workbench/targets/funnel.py: the marginal of x against quadrature."""

import math

import numpy as np
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

    pdf = [by_quad(x, lambda v: stats.norm.pdf(x, 0.0, math.exp(0.5 * v)) * stats.norm.pdf(v, 0.0, 3.0)) for x in xs]
    cdf = [by_quad(x, lambda v: stats.norm.cdf(x * math.exp(-0.5 * v)) * stats.norm.pdf(v, 0.0, 3.0)) for x in xs]
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
