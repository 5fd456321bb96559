"""Eight schools (Rubin 1981; Gelman et al., Bayesian Data Analysis, sec. 5.5): the standard
hierarchical model, in its centred and non-centred forms.

    y_j ~ N(theta_j, sigma_j),  theta_j = mu + tau eta_j,  mu ~ N(0, 5^2),  tau ~ HalfCauchy(5),

with the SAT-coaching effects y and their standard errors sigma of the eight schools. The
parameters live on the unconstrained space: (mu, log tau, eta_1..8) non-centred (eta_j ~ N(0, 1)),
(mu, log tau, theta_1..8) centred (theta_j ~ N(mu, tau^2)); log p includes the Jacobian
log tau of tau = exp(log tau). The centred form has the funnel between tau and theta that
makes NUTS diverge; the non-centred form is the cure. No closed-form truth: studies score it
against a reference NUTS run (posteriordb's ``eight_schools-eight_schools_noncentered`` is the
same model).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import TargetError
from ..jit import jit
from ..numerics import LOG_2PI
from ..target import Target
from ..target_forms import Generative, Reparametrization

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
MU_SD = 5.0
TAU_SCALE = 5.0


@jit
def _hyperprior(mu, log_tau, grad_out):
    """log N(mu; 0, 5^2) + log HalfCauchy(tau; 5) + log tau (the Jacobian); writes grad_out[0:2]."""
    tau = math.exp(log_tau)
    ratio = (tau / TAU_SCALE) ** 2
    grad_out[0] = -mu / MU_SD**2
    if math.isinf(ratio):
        # tau beyond 1e154: log(1 + ratio) by its asymptote (exact in double precision), so log p
        # stays finite, as it is, and its gradient is not inf / inf
        log1p_ratio = 2.0 * (log_tau - math.log(TAU_SCALE))
        grad_out[1] = -1.0
    else:
        log1p_ratio = math.log1p(ratio)
        grad_out[1] = 1.0 - 2.0 * ratio / (1.0 + ratio)
    return (-0.5 * mu * mu / MU_SD**2 - 0.5 * LOG_2PI - math.log(MU_SD)
            + math.log(2.0 / (math.pi * TAU_SCALE)) - log1p_ratio + log_tau)


@jit
def eight_schools_noncentered_logp_grad(theta, grad_out, data):
    """theta = (mu, log tau, eta_1..J); y_j ~ N(mu + tau eta_j, sigma_j), eta_j ~ N(0, 1)."""
    y, sigma = data
    mu, log_tau = theta[0], theta[1]
    tau = math.exp(log_tau)
    lp = _hyperprior(mu, log_tau, grad_out)
    for j in range(y.size):
        eta = theta[2 + j]
        inv_var = 1.0 / (sigma[j] * sigma[j])
        effect = tau * eta if eta != 0.0 else 0.0  # tau eta, 0 where tau overflows and eta is 0
        r = y[j] - mu - effect
        lp += -0.5 * eta * eta - 0.5 * r * r * inv_var - LOG_2PI - math.log(sigma[j])
        grad_out[0] += r * inv_var
        grad_out[1] += r * inv_var * tau * eta if eta != 0.0 else 0.0
        grad_out[2 + j] = -eta + r * inv_var * tau
    return lp


@jit
def eight_schools_centered_logp_grad(theta, grad_out, data):
    """theta = (mu, log tau, theta_1..J); theta_j ~ N(mu, tau^2), y_j ~ N(theta_j, sigma_j)."""
    y, sigma = data
    mu, log_tau = theta[0], theta[1]
    inv_tau2 = math.exp(-2.0 * log_tau)
    lp = _hyperprior(mu, log_tau, grad_out)
    for j in range(y.size):
        th = theta[2 + j]
        inv_var = 1.0 / (sigma[j] * sigma[j])
        dev = th - mu
        r = y[j] - th
        # theta_j = mu exactly has no deviation term, even where tau underflows (not 0 x inf = NaN:
        # a learned transform of the funnel maps its neck's far end to tau = 0, theta = mu)
        pull = dev * inv_tau2 if dev != 0.0 else 0.0
        quad = dev * dev * inv_tau2 if dev != 0.0 else 0.0  # the old code's order: the same bits
        lp += -0.5 * quad - log_tau - 0.5 * r * r * inv_var - LOG_2PI - math.log(sigma[j])
        grad_out[0] += pull
        grad_out[1] += quad - 1.0
        grad_out[2 + j] = -pull + r * inv_var
    return lp


def noncentered_to_centered(draws: np.ndarray) -> np.ndarray:
    """(..., 10) draws of (mu, log tau, eta) as (mu, log tau, theta), theta_j = mu + tau eta_j."""
    x = np.asarray(draws, dtype=float)
    return np.concatenate([x[..., :2], x[..., :1] + np.exp(x[..., 1:2]) * x[..., 2:]], axis=-1)


def generative(centered: bool) -> Generative:
    """mu ~ N(0, 5^2), tau ~ HalfCauchy(5), eta ~ N(0, 1), theta = mu + tau eta, y ~ N(theta, sigma),
    the schools' own standard errors sigma."""

    def simulate(rng):
        mu = MU_SD * rng.standard_normal()
        tau = abs(TAU_SCALE * rng.standard_cauchy())
        eta = rng.standard_normal(Y.size)
        effects = mu + tau * eta
        theta = np.concatenate([[mu, math.log(tau)], effects if centered else eta])
        return theta, (effects + SIGMA * rng.standard_normal(Y.size), SIGMA.copy())

    def log_likelihood(draws, data):
        y, sigma = data
        x = np.asarray(draws, dtype=float)
        effects = x[:, 2:] if centered else noncentered_to_centered(x)[:, 2:]
        return np.sum(-0.5 * ((y - effects) / sigma) ** 2 - np.log(sigma) - 0.5 * LOG_2PI, axis=1)

    return Generative(simulate, log_likelihood)


def eight_schools(centered: bool = False) -> Target:
    """The eight schools posterior, non-centred (default) or centred; d = 10, no closed-form truth.
    The centred form's reference comes from the non-centred one, mapped
    (``Target.reparametrization``)."""
    if not isinstance(centered, (bool, np.bool_)):
        raise TargetError(f"centered must be True or False, got {centered!r}")
    form = "centered" if centered else "noncentered"
    names = ("mu", "log_tau") + tuple(f"{'theta' if centered else 'eta'}[{j}]" for j in range(Y.size))
    return Target(
        name=f"eight_schools_{form}",
        dim=2 + Y.size,
        logp_grad=eight_schools_centered_logp_grad if centered else eight_schools_noncentered_logp_grad,
        data=(Y.copy(), SIGMA.copy()),
        param_names=names,
        initial_point=np.zeros(2 + Y.size),
        spec={"factory": "eight_schools", "centered": bool(centered)},
        reparametrization=Reparametrization("non-centred: theta_j = mu + tau eta_j", eight_schools,
                                            noncentered_to_centered) if centered else None,
        generative=generative(bool(centered)),
        description=f"eight schools, {form} (hierarchical; mu, log tau and 8 school effects); no closed-form truth",
    )
