"""workbench/targets/eight_schools.py: both forms against the model written out with scipy."""

import numpy as np
from scipy import stats

import workbench as wb
from workbench.targets.eight_schools import MU_SD, SIGMA, TAU_SCALE, Y


def _model(mu, tau, theta):
    return (stats.norm.logpdf(mu, 0, MU_SD) + stats.halfcauchy.logpdf(tau, 0, TAU_SCALE)
            + stats.norm.logpdf(Y, theta, SIGMA).sum())


def test_noncentred_and_centred_forms_are_the_same_model_with_their_jacobians():
    """Up to one constant per form: log p at several points against the model written out."""
    rng = np.random.default_rng(0)
    nc, c = wb.targets.eight_schools(), wb.targets.eight_schools(centered=True)
    offsets_nc, offsets_c = [], []
    for _ in range(4):
        mu, log_tau, eta = rng.normal(), rng.normal(), rng.standard_normal(8)
        tau = np.exp(log_tau)
        theta = mu + tau * eta
        # non-centred: eta ~ N(0, 1); both forms add log tau, the Jacobian of tau = exp(log tau)
        expected_nc = _model(mu, tau, theta) + stats.norm.logpdf(eta).sum() + log_tau
        offsets_nc.append(nc.logp(np.concatenate([[mu, log_tau], eta])) - expected_nc)
        expected_c = _model(mu, tau, theta) + stats.norm.logpdf(theta, mu, tau).sum() + log_tau
        offsets_c.append(c.logp(np.concatenate([[mu, log_tau], theta])) - expected_c)
    assert np.ptp(offsets_nc) < 1e-9 and np.ptp(offsets_c) < 1e-9


def test_far_tails_give_no_nan_and_the_half_cauchys_tail_stays_finite():
    """Where tau over- or underflows (log tau = +-400, +-800: a learned transform of the funnel
    maps its far ends there, theta_j = mu exactly at tau = 0) log p and its gradient are never
    NaN; at large tau log p is finite, as it is (the half-Cauchy's tail by its asymptote)."""
    for form in (wb.targets.eight_schools(), wb.targets.eight_schools(centered=True)):
        for log_tau in (-800.0, -400.0, 400.0, 800.0):
            for value in (0.0, 1.0):
                x = np.zeros(10)
                x[1], x[2:] = log_tau, value
                g = np.empty(10)
                lp = form.logp_grad(x, g, form.data)
                assert not np.isnan(lp) and not np.isnan(g).any(), (form.name, log_tau, value, lp, g)
    c = wb.targets.eight_schools(centered=True)
    x = np.zeros(10)
    x[1] = 400.0  # mu = 0 = theta: log(1 + (tau / 5)^2) = 2 (log tau - log 5) to double precision
    expected = (stats.norm.logpdf(0.0, 0, MU_SD) + np.log(2 / (np.pi * TAU_SCALE)) - 2 * (400.0 - np.log(TAU_SCALE))
                + 400.0 + (stats.norm.logpdf(Y, 0.0, SIGMA) - 400.0 - 0.5 * np.log(2 * np.pi)).sum())
    np.testing.assert_allclose(c.logp(x), expected, rtol=1e-12)
