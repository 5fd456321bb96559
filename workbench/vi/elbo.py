"""The nn4post loss and its gradient, by hand (nn4post paper, sec. 2-3).

q(theta) = sum_i c_i prod_alpha N(theta_alpha; mu_i_alpha, sigma_i_alpha)        (eq. 1-4)
c = softmax(r (a - mean(a)))  [gauge "fix_c", sec. 3.2.1-3.2.2]  or softmax(r a),
sigma = softplus(zeta) = log(1 + e^zeta), computed stably.

Loss (eq. 12-16): with S draws eta_is ~ N(0, I) per component and theta_is = sigma_i eta_is + mu_i,
    L = - sum_i c_i (1/S) sum_s f_is,    f_is = log p(theta_is) - log q(theta_is),
with the exact log q of the whole mixture. The entropy lower bound (eq. 17) replaces
-E[log q] by sum_i c_i H[N_i], H[N_i] = sum_alpha (1/2 log(2 pi e) + log sigma_i_alpha).

Gradient, derived by hand. Write r_j(theta) = c_j N_j(theta) / q(theta) (responsibility),
u_j = (theta - mu_j) / sigma_j, g_p = grad log p, g_q = grad_theta log q = -sum_j r_j u_j / sigma_j.
For a draw of component i, theta moves with mu_i and sigma_i (reparameterisation, eq. 14-16),
and log q(theta) also depends on every component's parameters directly:
    dL/dmu_i    += -c_i (g_p - g_q) / S                 (pathwise)
    dL/dsigma_i += -c_i (g_p - g_q) eta / S             (pathwise)
    dL/dmu_j    +=  c_i r_j u_j / sigma_j / S           (explicit, every j)
    dL/dsigma_j +=  c_i r_j (u_j^2 - 1) / sigma_j / S   (explicit, every j)
    dL/dc_i     += -f / S;   dL/dc_j += c_i N_j / q / S (through log q; N_j / q = r_j / c_j)
then dL/dzeta = dL/dsigma sigmoid(zeta) and, through the softmax (the same Jacobian with and
without the mean subtraction, since the softmax's rows sum to zero):
    dL/da_k = r c_k (dL/dc_k - sum_j c_j dL/dc_j).
So in exact arithmetic the three gauge options give the same plain-gradient step; they
differ once the frozen-out fix or Adam rescales coordinates, and numerically (sec. 3.2.1).

The loops are written so that evaluating q for one draw costs O(N_c d) and a step
O(N_c^2 S d) on top of the N_c S target gradients (the mixture's inherent cost).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..jit import NO_NRT
from ..numerics import LOG_2PI, log1pexp, sigmoid

GAUGE_NONE, GAUGE_MEAN_GRAD, GAUGE_FIX_C = 0, 1, 2
GAUGES = {"none": GAUGE_NONE, "mean_grad": GAUGE_MEAN_GRAD, "fix_c": GAUGE_FIX_C}


@njit(cache=True)
def mixture_weights(a, r, gauge, c_floor, c, log_c):
    """c = softmax(r (a - mean a)) (or softmax(r a)), floored at ``c_floor`` when it is > 0."""
    k = a.size
    shift = 0.0
    if gauge == GAUGE_FIX_C:
        for i in range(k):
            shift += a[i]
        shift /= k
    m = -math.inf
    for i in range(k):
        z = r * (a[i] - shift)
        log_c[i] = z
        if z > m:
            m = z
    total = 0.0
    for i in range(k):
        total += math.exp(log_c[i] - m)
    log_total = m + math.log(total)
    for i in range(k):
        log_c[i] -= log_total
        c[i] = math.exp(log_c[i])
        if c_floor > 0.0 and c[i] < c_floor:  # the frozen-out fix's clip (sec. 3.2.3)
            c[i] = c_floor
            log_c[i] = math.log(c_floor)


@njit(cache=True)
def scales(zeta, sigma, log_sigma, dsigma):
    """sigma = softplus(zeta) (eq. 3), log sigma, and d sigma / d zeta = sigmoid(zeta)."""
    k, d = zeta.shape
    for i in range(k):
        for j in range(d):
            sigma[i, j] = log1pexp(zeta[i, j])
            log_sigma[i, j] = math.log(sigma[i, j])
            dsigma[i, j] = sigmoid(zeta[i, j])


@njit(cache=True)
def component_log_densities(theta, mu, sigma, log_sigma, out):
    """out[j] = log prod_alpha N(theta_alpha; mu_j_alpha, sigma_j_alpha)."""
    k, d = mu.shape
    for j in range(k):
        s = 0.0
        for a in range(d):
            u = (theta[a] - mu[j, a]) / sigma[j, a]
            s += 0.5 * u * u + log_sigma[j, a]
        out[j] = -s - 0.5 * d * LOG_2PI


@njit(cache=True)
def accumulate_draw(i, eta_s, theta, lp, g_p, inv_s, c, log_c, mu, sigma, log_sigma,
                    exact_entropy, log_n, g_q, grad_c, grad_mu, grad_sigma):
    """Adds one draw's terms (component i, weight 1/S = inv_s) to the loss and gradients.

    Returns the draw's contribution to the loss.
    """
    k, d = mu.shape
    if not exact_entropy:  # eq. 17: log q is not needed per draw
        grad_c[i] += -lp * inv_s
        for a in range(d):
            grad_mu[i, a] += -c[i] * g_p[a] * inv_s
            grad_sigma[i, a] += -c[i] * g_p[a] * eta_s[a] * inv_s
        return -c[i] * lp * inv_s
    component_log_densities(theta, mu, sigma, log_sigma, log_n)
    m = -math.inf
    for j in range(k):
        if log_c[j] + log_n[j] > m:
            m = log_c[j] + log_n[j]
    total = 0.0
    for j in range(k):
        total += math.exp(log_c[j] + log_n[j] - m)
    log_q = m + math.log(total)
    f = lp - log_q
    for a in range(d):
        g_q[a] = 0.0
    for j in range(k):
        resp = math.exp(log_c[j] + log_n[j] - log_q)
        grad_c[j] += c[i] * math.exp(log_n[j] - log_q) * inv_s
        w = c[i] * resp * inv_s
        for a in range(d):
            u = (theta[a] - mu[j, a]) / sigma[j, a]
            g_q[a] -= resp * u / sigma[j, a]
            grad_mu[j, a] += w * u / sigma[j, a]
            grad_sigma[j, a] += w * (u * u - 1.0) / sigma[j, a]
    grad_c[i] += -f * inv_s
    for a in range(d):
        diff = g_p[a] - g_q[a]
        grad_mu[i, a] += -c[i] * diff * inv_s
        grad_sigma[i, a] += -c[i] * diff * eta_s[a] * inv_s
    return -c[i] * f * inv_s


@njit(cache=True)
def finish_gradient(a, r, c, log_sigma, sigma, dsigma, exact_entropy, grad_c, grad_sigma, grad_a, grad_zeta):
    """Adds the lower-bound entropy terms, chains sigma -> zeta and c -> a; returns the entropy part of L."""
    k, d = sigma.shape
    extra = 0.0
    if not exact_entropy:
        for i in range(k):
            h = 0.0
            for j in range(d):
                h += 0.5 * (LOG_2PI + 1.0) + log_sigma[i, j]
                grad_sigma[i, j] += -c[i] / sigma[i, j]
            extra += -c[i] * h
            grad_c[i] += -h
    for i in range(k):
        for j in range(d):
            grad_zeta[i, j] = grad_sigma[i, j] * dsigma[i, j]
    mean_gc = 0.0
    for i in range(k):
        mean_gc += c[i] * grad_c[i]
    for i in range(k):
        grad_a[i] = r * c[i] * (grad_c[i] - mean_gc)
    return extra


@njit(cache=True)
def begin_step(a, zeta, r, gauge, c_floor, c, log_c, sigma, log_sigma, dsigma, grad_c, grad_mu, grad_sigma):
    """Weights and scales for this step's parameters; gradients zeroed."""
    mixture_weights(a, r, gauge, c_floor, c, log_c)
    scales(zeta, sigma, log_sigma, dsigma)
    grad_c[:] = 0.0
    grad_mu[:, :] = 0.0
    grad_sigma[:, :] = 0.0


@njit(cache=True, **NO_NRT)
def loss_and_gradient(logp_grad, data, a, mu, zeta, eta, r, gauge, c_floor, exact_entropy,
                      work, c, log_c, log_n, sigma, log_sigma, dsigma, grad_c, grad_sigma,
                      grad_a, grad_mu, grad_zeta):
    """The Monte Carlo loss L and its exact gradient for the draws ``eta`` (K, S, d).

    ``work`` (3, d) holds theta, grad log p and grad log q. Returns (L, target gradients used,
    non-finite flag). Allocates nothing.
    """
    k, n_s, d = eta.shape
    theta, g_p, g_q = work[0], work[1], work[2]
    begin_step(a, zeta, r, gauge, c_floor, c, log_c, sigma, log_sigma, dsigma, grad_c, grad_mu, grad_sigma)
    inv_s = 1.0 / n_s
    loss = 0.0
    n_grad = 0
    bad = False
    for i in range(k):
        for s in range(n_s):
            for j in range(d):
                theta[j] = sigma[i, j] * eta[i, s, j] + mu[i, j]
            lp = logp_grad(theta, g_p, data)
            n_grad += 1
            if not math.isfinite(lp):
                bad = True
            loss += accumulate_draw(i, eta[i, s], theta, lp, g_p, inv_s, c, log_c, mu, sigma, log_sigma,
                                    exact_entropy, log_n, g_q, grad_c, grad_mu, grad_sigma)
    loss += finish_gradient(a, r, c, log_sigma, sigma, dsigma, exact_entropy, grad_c, grad_sigma, grad_a, grad_zeta)
    return loss, n_grad, bad


@njit(cache=True, **NO_NRT)
def loss_and_gradient_batch(logp_grad_batch, data, rows, scale, a, mu, zeta, eta, r, gauge, c_floor,
                            exact_entropy, work, c, log_c, log_n, sigma, log_sigma, dsigma, grad_c,
                            grad_sigma, grad_a, grad_mu, grad_zeta):
    """As :func:`loss_and_gradient` with the mini-batch form scale x loglik(rows) + log prior (eq. 19-20)."""
    k, n_s, d = eta.shape
    theta, g_p, g_q = work[0], work[1], work[2]
    begin_step(a, zeta, r, gauge, c_floor, c, log_c, sigma, log_sigma, dsigma, grad_c, grad_mu, grad_sigma)
    inv_s = 1.0 / n_s
    loss = 0.0
    n_grad = 0
    bad = False
    for i in range(k):
        for s in range(n_s):
            for j in range(d):
                theta[j] = sigma[i, j] * eta[i, s, j] + mu[i, j]
            lp = logp_grad_batch(theta, g_p, data, rows, scale)
            n_grad += 1
            if not math.isfinite(lp):
                bad = True
            loss += accumulate_draw(i, eta[i, s], theta, lp, g_p, inv_s, c, log_c, mu, sigma, log_sigma,
                                    exact_entropy, log_n, g_q, grad_c, grad_mu, grad_sigma)
    loss += finish_gradient(a, r, c, log_sigma, sigma, dsigma, exact_entropy, grad_c, grad_sigma, grad_a, grad_zeta)
    return loss, n_grad, bad


def workspace(n_components: int, dim: int) -> dict:
    """The scratch arrays loss_and_gradient needs, by name."""
    k, d = n_components, dim
    return {
        "work": np.zeros((3, d)),
        "c": np.zeros(k),
        "log_c": np.zeros(k),
        "log_n": np.zeros(k),
        "sigma": np.zeros((k, d)),
        "log_sigma": np.zeros((k, d)),
        "dsigma": np.zeros((k, d)),
        "grad_c": np.zeros(k),
        "grad_sigma": np.zeros((k, d)),
        "grad_a": np.zeros(k),
        "grad_mu": np.zeros((k, d)),
        "grad_zeta": np.zeros((k, d)),
    }
