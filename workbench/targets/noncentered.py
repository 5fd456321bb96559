"""The non-centred (whitened) forms of the latent-variable posteriors, and the maps that carry
their draws back to the centred coordinates users write.

A centred latent field or series sits in a funnel with its scale: where the scale is small the
latent values must be small too, and one step size cannot serve both ends (Papaspiliopoulos,
Roberts and Sköld 2007; Betancourt and Girolami 2015). Writing the latent values as a
deterministic function of standard normal innovations removes the funnel from the prior; the
posterior is the same, mapped. References for the centred forms come from these
(``Target.reparametrization``, used by ``wb.reference``):

- stochastic volatility: h_0 = sigma / sqrt(1 - phi^2) e_0, h_t = phi h_{t-1} + sigma e_t, e ~ N(0, I);
  coordinates (mu, logit-scaled phi, log sigma, e_0..e_{n-1});
- the log-Gaussian Cox process: f = m + L e with L L' = K(ls, amp), e ~ N(0, I); coordinates
  (log ls, log amp, e_0..e_{n-1}). Its gradient in (ls, amp) goes through the Cholesky factor
  by reverse-mode differentiation (Murray 2016, "Differentiation of the Cholesky decomposition",
  the unblocked algorithm).
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit
from ..numerics import LOG_2PI
from ..target import Target
from ..target_forms import Reparametrization
from .latent import LGCP_JITTER, LGCP_LS_PRIOR, LGCP_POINTS, SV_STEPS, cholesky_in_place, lgcp_data, lgcp_hyperprior, sv_data


@jit
def sv_noncentered_logp_grad(theta, grad_out, data):
    """theta = (mu, z, log sigma, e_0..e_{n-1}); the same posterior as ``latent.sv_logp_grad``
    with h a function of the innovations e (module docstring)."""
    (y,) = data
    n = y.size
    mu, z, log_sigma = theta[0], theta[1], theta[2]
    s = 1.0 / (1.0 + math.exp(-z))
    phi = 2.0 * s - 1.0
    sigma = math.exp(log_sigma)
    root = math.sqrt(1.0 - phi * phi)
    # priors and Jacobians as in the centred form: N(0, 2^2), Uniform(-1, 1), HalfNormal(1)
    lp = -0.125 * mu * mu - math.log(2.0) - 0.5 * LOG_2PI
    lp += -math.log(2.0) + math.log(2.0 * s * (1.0 - s))
    lp += math.log(2.0) - 0.5 * LOG_2PI - 0.5 * sigma * sigma + log_sigma
    g_mu = -0.25 * mu
    g_z = 1.0 - 2.0 * s
    g_sigma = -sigma  # d/d sigma of the HalfNormal; its Jacobian's 1 is added to d/d log sigma below
    # forward: the path h, and log N(y_t; 0, exp(mu + h_t)) with its derivative in h_t alone
    h = np.empty(n)
    direct = np.empty(n)
    for t in range(n):
        e = theta[3 + t]
        lp += -0.5 * e * e - 0.5 * LOG_2PI
        h[t] = sigma / root * e if t == 0 else phi * h[t - 1] + sigma * e
        a = mu + h[t]
        w = y[t] * y[t] * math.exp(-a)
        lp += -0.5 * w - 0.5 * a - 0.5 * LOG_2PI
        direct[t] = 0.5 * w - 0.5
        g_mu += direct[t]
    # backward: lam_t = d log p / d h_t through y_t and every later step (h_{t+1} = phi h_t + ...)
    g_phi = 0.0
    lam = 0.0
    for t in range(n - 1, 0, -1):
        lam = direct[t] + phi * lam
        e = theta[3 + t]
        grad_out[3 + t] = -e + lam * sigma
        g_sigma += lam * e
        g_phi += lam * h[t - 1]
    lam = direct[0] + phi * lam  # h_0 = sigma (1 - phi^2)^(-1/2) e_0
    e = theta[3]
    grad_out[3] = -e + lam * sigma / root
    g_sigma += lam * e / root
    g_phi += lam * sigma * e * phi / (root * root * root)
    grad_out[0] = g_mu
    grad_out[1] = g_z + g_phi * 2.0 * s * (1.0 - s)
    grad_out[2] = g_sigma * sigma + 1.0
    return lp


def sv_to_centered(draws: np.ndarray) -> np.ndarray:
    """(..., n + 3) draws of the non-centred form as (mu, z, log sigma, h_0..h_{n-1})."""
    x = np.asarray(draws, dtype=float)
    out = x.copy()
    phi = 2.0 / (1.0 + np.exp(-x[..., 1])) - 1.0
    sigma = np.exp(x[..., 2])
    out[..., 3] = sigma / np.sqrt(1.0 - phi**2) * x[..., 3]
    for t in range(4, x.shape[-1]):
        out[..., t] = phi * out[..., t - 1] + sigma * x[..., t]
    return out


@jit
def cholesky_backward(chol, lbar):
    """Reverse mode of the Cholesky factor (Murray 2016, the unblocked algorithm): given the
    factor L (lower triangle of ``chol``) and the gradient ``lbar`` of a scalar with respect to
    L's lower triangle, overwrite ``lbar`` with the gradient with respect to the lower triangle
    of the factored matrix A (dF = sum over i >= j of lbar_ij dA_ij)."""
    n = chol.shape[0]
    for j in range(n - 1, -1, -1):
        s = 0.0
        for i in range(j + 1, n):
            s += chol[i, j] * lbar[i, j]
        lbar[j, j] -= s / chol[j, j]
        for i in range(j, n):
            lbar[i, j] /= chol[j, j]
        for k in range(j):
            s = 0.0
            for i in range(j, n):
                s += lbar[i, j] * chol[i, k]
            lbar[j, k] -= s
        for i in range(j + 1, n):
            for k in range(j):
                lbar[i, k] -= lbar[i, j] * chol[j, k]
        lbar[j, j] *= 0.5


@jit
def lgcp_whitened_logp_grad(theta, grad_out, data):
    """theta = (log ls, log amp, e_0..e_{n-1}), f = m + L e (module docstring); the same
    posterior as ``latent.lgcp_logp_grad``. O(n^3) per call (the factor and its reverse)."""
    x, counts, prior = data
    m, alpha, beta = prior[0], prior[1], prior[2]
    n = x.size
    ls = math.exp(theta[0])
    amp = math.exp(theta[1])
    amp2 = amp * amp
    lp, g_ls, g_amp = lgcp_hyperprior(theta[0], theta[1], alpha, beta)
    chol = np.empty((n, n))
    for i in range(n):
        for j in range(i + 1):
            chol[i, j] = amp2 * math.exp(-abs(x[i] - x[j]) / ls)
        chol[i, i] += LGCP_JITTER
    if not cholesky_in_place(chol):
        for i in range(theta.size):
            grad_out[i] = math.nan
        return -math.inf
    gf = np.empty(n)
    for i in range(n):
        f = m
        for j in range(i + 1):
            f += chol[i, j] * theta[2 + j]
        rate = math.exp(f)
        lp += counts[i] * f - rate - math.lgamma(counts[i] + 1.0)
        gf[i] = counts[i] - rate
    lbar = np.zeros((n, n))
    for i in range(n):
        e = theta[2 + i]
        lp += -0.5 * e * e - 0.5 * LOG_2PI
        g = -e
        for k in range(i, n):  # (L' gf)_i
            g += chol[k, i] * gf[k]
        grad_out[2 + i] = g
        for j in range(i + 1):  # d/dL_ij of gf . (L e)
            lbar[i, j] = gf[i] * theta[2 + j]
    cholesky_backward(chol, lbar)
    for i in range(n):
        for j in range(i + 1):
            dist = abs(x[i] - x[j])
            corr = math.exp(-dist / ls)
            g_ls += lbar[i, j] * amp2 * corr * dist / ls
            g_amp += lbar[i, j] * 2.0 * amp2 * corr
    grad_out[0] = g_ls
    grad_out[1] = g_amp
    return lp


def lgcp_to_centered(draws: np.ndarray, grid: np.ndarray, mean: float, chunk: int = 512) -> np.ndarray:
    """(..., n + 2) draws of the whitened form as (log ls, log amp, f_0..f_{n-1})."""
    x = np.asarray(draws, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    out = flat.copy()
    dist = np.abs(grid[:, None] - grid[None, :])
    eye = LGCP_JITTER * np.eye(grid.size)
    for lo in range(0, len(flat), chunk):
        part = flat[lo:lo + chunk]
        ls, amp = np.exp(part[:, 0]), np.exp(part[:, 1])
        cov = amp[:, None, None] ** 2 * np.exp(-dist[None] / ls[:, None, None]) + eye
        out[lo:lo + chunk, 2:] = mean + np.einsum("kij,kj->ki", np.linalg.cholesky(cov), part[:, 2:])
    return out.reshape(x.shape)


def stochastic_volatility_noncentered(n: int = SV_STEPS, seed: int = 0) -> Target:
    """The stochastic-volatility posterior of ``latent.stochastic_volatility`` on its innovations."""
    return Target(
        name="stochastic_volatility_noncentered",
        dim=n + 3,
        logp_grad=sv_noncentered_logp_grad,
        data=(sv_data(n, seed),),
        param_names=("mu", "phi_interval__", "sigma_log__", *(f"e[{t}]" for t in range(n))),
        spec={"factory": "posterior", "name": "stochastic_volatility_noncentered", "backend": "numba"},
        description=f"stochastic volatility, non-centred (innovations), {n} simulated returns (d = {n + 3})",
    )


def lgcp_whitened(n: int = LGCP_POINTS, seed: int = 0) -> Target:
    """The log-Gaussian Cox process of ``latent.lgcp`` with its field whitened by the Cholesky factor."""
    x, counts, m = lgcp_data(n, seed)
    return Target(
        name="lgcp_whitened",
        dim=n + 2,
        logp_grad=lgcp_whitened_logp_grad,
        data=(x, counts, np.array([m, *LGCP_LS_PRIOR])),
        param_names=("ls_log__", "amp_log__", *(f"e[{i}]" for i in range(n))),
        initial_point=np.concatenate([[math.log(0.5), 0.0], np.zeros(n)]),
        spec={"factory": "posterior", "name": "lgcp_whitened", "backend": "numba"},
        description=f"log-Gaussian Cox process, the field whitened by its covariance's Cholesky factor (d = {n + 2})",
    )


def sv_reparametrization(n: int = SV_STEPS, seed: int = 0) -> Reparametrization:
    return Reparametrization("non-centred: h from its innovations (h_t = phi h_{t-1} + sigma e_t)",
                             lambda: stochastic_volatility_noncentered(n, seed), sv_to_centered)


def lgcp_reparametrization(n: int = LGCP_POINTS, seed: int = 0) -> Reparametrization:
    grid, _, m = lgcp_data(n, seed)
    return Reparametrization("whitened: f = m + L e, L the Cholesky factor of the field's covariance",
                             lambda: lgcp_whitened(n, seed), lambda draws: lgcp_to_centered(draws, grid, m))
