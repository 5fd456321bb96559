"""Latent-variable posteriors: the hierarchical models with a latent field or a latent time
series that users bring, each on simulated data with a fixed seed (no network here), written
on the same unconstrained coordinates as PyMC writes them (``wb.posteriors`` holds their
PyMC models; a test checks the two agree).

- ``stochastic_volatility``: daily returns y_t ~ N(0, exp((mu + h_t) / 2)) with log-volatilities
  h following a stationary AR(1), h_0 ~ N(0, sigma^2 / (1 - phi^2)), h_t ~ N(phi h_{t-1}, sigma^2);
  mu ~ N(0, 2^2), phi ~ Uniform(-1, 1), sigma ~ HalfNormal(1). Coordinates (mu, logit-scaled
  phi, log sigma, h_0..h_{n-1}): d = n + 3 (103 by default). The model of Kim, Shephard and Chib
  (1998), used by the MAMS paper's benchmark (Robnik et al. 2025, its "stochastic volatility").
- ``lgcp``: a log-Gaussian Cox process on a 1-d grid: counts y_i ~ Poisson(exp(f_i)), the
  latent field f ~ MvNormal(m, amp^2 exp(-|x_i - x_j| / ls) + 1e-6 I) (a Matern-1/2 kernel,
  whose precision is banded: the square-exponential kernel's near-singular covariance on a
  fine grid makes the centred field ill-posed for every method), ls ~ Gamma(2, 4),
  amp ~ HalfNormal(1). Coordinates (log ls, log amp, f_0..f_{n-1}): d = n + 2 (102 by default).
  Centred, as users write it (``pm.MvNormal`` with the covariance of the hyperparameters).

(The Brownian motion, whose truth is exact, is in ``targets/brownian_motion.py``; the non-centred
forms that references are built on, in ``targets/noncentered.py``.) Neither has a closed-form
truth: studies score them against a reference NUTS run held to
posteriordb's standard (``wb.reference``).
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit
from ..numerics import LOG_2PI
from ..target import Target
from ..target_forms import Generative

SV_STEPS = 100
SV_TRUE = {"mu": -1.0, "phi": 0.9, "sigma": 0.5}
LGCP_POINTS = 100
LGCP_JITTER = 1e-6
LGCP_LS_PRIOR = (2.0, 4.0)  # Gamma(alpha, beta): mean 0.5 on a grid over [0, 5]


# ----------------------------------------------------------------------------- data (fixed seeds)


def sv_data(n: int = SV_STEPS, seed: int = 0) -> np.ndarray:
    """Returns simulated from the model at mu = -1, phi = 0.9, sigma = 0.5 (at sigma = 0.25 the
    posterior reaches down the funnel of small sigma, where NUTS's E-BFMI is 0.03)."""
    rng = np.random.default_rng(seed)
    phi, sigma = SV_TRUE["phi"], SV_TRUE["sigma"]
    h = np.empty(n)
    h[0] = rng.normal(0.0, sigma / math.sqrt(1.0 - phi**2))
    for t in range(1, n):
        h[t] = phi * h[t - 1] + sigma * rng.standard_normal()
    return np.exp(0.5 * (SV_TRUE["mu"] + h)) * rng.standard_normal(n)


def lgcp_data(n: int = LGCP_POINTS, seed: int = 0) -> tuple[np.ndarray, np.ndarray, float]:
    """(grid, counts, prior mean m): a field drawn at ls = 0.5, amp = 1 around log 3."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 5.0, n)
    k = np.exp(-np.abs(x[:, None] - x[None, :]) / 0.5) + LGCP_JITTER * np.eye(n)
    f = math.log(3.0) + np.linalg.cholesky(k) @ rng.standard_normal(n)
    counts = rng.poisson(np.exp(f)).astype(float)
    return x, counts, float(np.log(counts.mean()))


# ----------------------------------------------------------------------------- densities


@jit
def sv_logp_grad(theta, grad_out, data):
    """theta = (mu, z, log sigma, h_0..h_{n-1}), phi = 2 sigmoid(z) - 1 (PyMC's interval
    transform of Uniform(-1, 1), Jacobian log(2 s (1 - s))); see the module docstring."""
    (y,) = data
    n = y.size
    mu, z, log_sigma = theta[0], theta[1], theta[2]
    s = 1.0 / (1.0 + math.exp(-z))
    phi = 2.0 * s - 1.0
    sigma = math.exp(log_sigma)
    inv_var = 1.0 / (sigma * sigma)
    one_m_phi2 = 1.0 - phi * phi
    # priors and Jacobians: N(0, 2^2), Uniform(-1, 1), HalfNormal(1)
    lp = -0.125 * mu * mu - math.log(2.0) - 0.5 * LOG_2PI
    lp += -math.log(2.0) + math.log(2.0 * s * (1.0 - s))
    lp += math.log(2.0) - 0.5 * LOG_2PI - 0.5 * sigma * sigma + log_sigma
    g_mu = -0.25 * mu
    g_phi = 0.0
    g_z = 1.0 - 2.0 * s
    g_ls = 1.0 - sigma * sigma
    # the stationary start h_0 ~ N(0, sigma^2 / (1 - phi^2))
    h0 = theta[3]
    lp += -0.5 * h0 * h0 * one_m_phi2 * inv_var - log_sigma + 0.5 * math.log(one_m_phi2) - 0.5 * LOG_2PI
    grad_out[3] = -h0 * one_m_phi2 * inv_var
    g_phi += h0 * h0 * phi * inv_var - phi / one_m_phi2
    g_ls += h0 * h0 * one_m_phi2 * inv_var - 1.0
    for t in range(1, n):
        grad_out[3 + t] = 0.0
    for t in range(1, n):
        e = theta[3 + t] - phi * theta[2 + t]
        lp += -0.5 * e * e * inv_var - log_sigma - 0.5 * LOG_2PI
        grad_out[3 + t] -= e * inv_var
        grad_out[2 + t] += phi * e * inv_var
        g_phi += e * theta[2 + t] * inv_var
        g_ls += e * e * inv_var - 1.0
    # the returns: log N(y_t; 0, exp(mu + h_t))
    for t in range(n):
        a = mu + theta[3 + t]
        w = y[t] * y[t] * math.exp(-a)
        lp += -0.5 * w - 0.5 * a - 0.5 * LOG_2PI
        g = 0.5 * w - 0.5
        grad_out[3 + t] += g
        g_mu += g
    grad_out[0] = g_mu
    grad_out[1] = g_z + g_phi * 2.0 * s * (1.0 - s)
    grad_out[2] = g_ls
    return lp


@jit(fastmath=True)
def cholesky_in_place(a) -> bool:
    """Overwrite the lower triangle of the symmetric ``a`` with its Cholesky factor; False
    (and ``a`` half done) where ``a`` is not numerically positive definite. NumPy's raises
    there, and a density must return -inf instead (as PyMC's ``posdef`` check does)."""
    n = a.shape[0]
    for j in range(n):
        s = a[j, j]
        for k in range(j):
            s -= a[j, k] * a[j, k]
        if not (s > 0.0 and math.isfinite(s)):
            return False
        a[j, j] = math.sqrt(s)
        for i in range(j + 1, n):
            s = a[i, j]
            for k in range(j):
                s -= a[i, k] * a[j, k]
            a[i, j] = s / a[j, j]
    return True


@jit(fastmath=True)
def inverse_from_cholesky(chol):
    """K^-1 = L^-T L^-1 from the lower-triangular L (only its lower triangle is read).

    Both products run along rows, so every inner loop reads memory in order: M = L^-1 row by
    row (row i is e_i minus the earlier rows, each times L[i, k], over L[i, i]), then M^T M as
    the sum over k of each row's outer product with itself (by columns: about 4x slower at n = 100)."""
    n = chol.shape[0]
    linv = np.zeros((n, n))
    for i in range(n):
        for k in range(i):
            c = chol[i, k]
            for j in range(k + 1):
                linv[i, j] -= c * linv[k, j]
        linv[i, i] = 1.0
        d = 1.0 / chol[i, i]
        for j in range(i + 1):
            linv[i, j] *= d
    out = np.zeros((n, n))
    for k in range(n):
        for i in range(k + 1):
            c = linv[k, i]
            for j in range(i + 1):
                out[i, j] += c * linv[k, j]
    for i in range(n):
        for j in range(i):
            out[j, i] = out[i, j]
    return out


@jit
def lgcp_hyperprior(log_ls, log_amp, alpha, beta):
    """(log density, d/d log ls, d/d log amp) of Gamma(alpha, beta) on ls and HalfNormal(1) on
    amp, with the log transforms' Jacobians."""
    ls, amp2 = math.exp(log_ls), math.exp(2.0 * log_amp)
    lp = alpha * math.log(beta) - math.lgamma(alpha) + alpha * log_ls - beta * ls
    lp += math.log(2.0) - 0.5 * LOG_2PI - 0.5 * amp2 + log_amp
    return lp, alpha - beta * ls, 1.0 - amp2


@jit(fastmath=True)
def lgcp_logp_grad(theta, grad_out, data):
    """theta = (log ls, log amp, f_0..f_{n-1}); see the module docstring. O(n^3) per call
    (a Cholesky factor and the inverse of the covariance)."""
    x, counts, prior = data
    m, alpha, beta = prior[0], prior[1], prior[2]
    n = x.size
    ls = math.exp(theta[0])
    amp = math.exp(theta[1])
    amp2 = amp * amp
    lp, g_ls, g_amp = lgcp_hyperprior(theta[0], theta[1], alpha, beta)
    # the covariance's lower triangle (all its factor reads), overwritten by the factor, and the
    # correlations' (all the gradient reads): one exponential per pair
    corr = np.empty((n, n))
    chol = np.empty((n, n))
    for i in range(n):
        for j in range(i):
            e = math.exp(-abs(x[i] - x[j]) / ls)
            corr[i, j] = e
            chol[i, j] = amp2 * e
        chol[i, i] = amp2 + LGCP_JITTER
    r = np.empty(n)
    for i in range(n):
        r[i] = theta[2 + i] - m
    if not cholesky_in_place(chol):  # far out in (log ls, log amp): not positive definite
        for i in range(theta.size):
            grad_out[i] = math.nan
        return -math.inf
    inv = inverse_from_cholesky(chol)
    a = inv @ r
    quad = 0.0
    log_det = 0.0
    for i in range(n):
        quad += r[i] * a[i]
        log_det += 2.0 * math.log(chol[i, i])
    lp += -0.5 * quad - 0.5 * log_det - 0.5 * n * LOG_2PI
    # d/dtheta of the MvNormal: 0.5 a' dK a - 0.5 tr(K^-1 dK), the sum over pairs (i, j) of the
    # symmetric 0.5 (a_i a_j - K^-1_ij) dK_ij: the diagonal once (dK_ii/d log ls = 0), each
    # pair below it twice
    for i in range(n):
        g_amp += (a[i] * a[i] - inv[i, i]) * amp2
        for j in range(i):
            w = (a[i] * a[j] - inv[i, j]) * amp2 * corr[i, j]
            g_ls += w * abs(x[i] - x[j]) / ls
            g_amp += 2.0 * w
    # the counts: Poisson(y; exp(f))
    for i in range(n):
        f = theta[2 + i]
        rate = math.exp(f)
        lp += counts[i] * f - rate - math.lgamma(counts[i] + 1.0)
        grad_out[2 + i] = -a[i] + counts[i] - rate
    grad_out[0] = g_ls
    grad_out[1] = g_amp
    return lp


# ----------------------------------------------------------------------------- targets


def sv_generative(n: int) -> Generative:
    """mu ~ N(0, 2^2), phi ~ Uniform(-1, 1), sigma ~ HalfNormal(1), h a stationary AR(1),
    y_t ~ N(0, exp(mu + h_t))."""

    def simulate(rng):
        mu, phi, sigma = 2.0 * rng.standard_normal(), rng.uniform(-1.0, 1.0), abs(rng.standard_normal())
        h = np.empty(n)
        h[0] = sigma / math.sqrt(1.0 - phi * phi) * rng.standard_normal()
        for t in range(1, n):
            h[t] = phi * h[t - 1] + sigma * rng.standard_normal()
        theta = np.concatenate([[mu, math.log((1.0 + phi) / (1.0 - phi)), math.log(sigma)], h])
        return theta, (np.exp(0.5 * (mu + h)) * rng.standard_normal(n),)

    def log_likelihood(draws, data):
        (y,) = data
        x = np.asarray(draws, dtype=float)
        a = x[:, :1] + x[:, 3:]
        return np.sum(-0.5 * y * y * np.exp(-a) - 0.5 * a - 0.5 * LOG_2PI, axis=1)

    return Generative(simulate, log_likelihood)


def lgcp_generative(x: np.ndarray, prior: np.ndarray) -> Generative:
    """ls ~ Gamma(2, rate 4), amp ~ HalfNormal(1), f ~ MvNormal(m, K(ls, amp)), y_i ~ Poisson(exp f_i)."""
    m, alpha, beta = prior
    distance = np.abs(x[:, None] - x[None, :])

    def simulate(rng):
        ls, amp = rng.gamma(alpha, 1.0 / beta), abs(rng.standard_normal())
        cov = amp * amp * np.exp(-distance / ls) + LGCP_JITTER * np.eye(x.size)
        f = m + np.linalg.cholesky(cov) @ rng.standard_normal(x.size)
        counts = rng.poisson(np.exp(np.minimum(f, 30.0))).astype(float)
        return np.concatenate([[math.log(ls), math.log(amp)], f]), (x, counts, prior)

    def log_likelihood(draws, data):
        _, counts, _ = data
        f = np.asarray(draws, dtype=float)[:, 2:]
        return np.sum(counts * f - np.exp(f), axis=1) - np.sum([math.lgamma(c + 1.0) for c in counts])

    return Generative(simulate, log_likelihood)


def stochastic_volatility(n: int = SV_STEPS, seed: int = 0) -> Target:
    y = sv_data(n, seed)
    return Target(
        name="stochastic_volatility",
        dim=n + 3,
        logp_grad=sv_logp_grad,
        data=(y,),
        param_names=("mu", "phi_interval__", "sigma_log__", *(f"h[{t}]" for t in range(n))),
        initial_point=np.zeros(n + 3),
        spec={"factory": "posterior", "name": "stochastic_volatility", "backend": "numba"},
        generative=sv_generative(n),
        description=f"stochastic volatility, AR(1) log-volatilities, {n} simulated returns (d = {n + 3}); no closed-form truth",
    )


def lgcp(n: int = LGCP_POINTS, seed: int = 0) -> Target:
    x, counts, m = lgcp_data(n, seed)
    init = np.concatenate([[math.log(0.5), 0.0], np.full(n, m)])
    return Target(
        name="lgcp",
        dim=n + 2,
        logp_grad=lgcp_logp_grad,
        data=(x, counts, np.array([m, *LGCP_LS_PRIOR])),
        param_names=("ls_log__", "amp_log__", *(f"f[{i}]" for i in range(n))),
        initial_point=init,
        spec={"factory": "posterior", "name": "lgcp", "backend": "numba"},
        generative=lgcp_generative(x, np.array([m, *LGCP_LS_PRIOR])),
        description=f"log-Gaussian Cox process on a 1-d grid of {n} points, centred MvNormal field (d = {n + 2}); "
                    "no closed-form truth",
    )
