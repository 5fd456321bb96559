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
O(N_c^2 S d) on top of the N_c S target gradients (the mixture's inherent cost). What does
not change within a step is computed once per step (``begin_step``): c, sigma, 1/sigma,
sigmoid(zeta) and each component's log normaliser, so the per-draw passes multiply instead
of divide and take no logarithms; a component whose responsibility underflows to 0 is skipped.

Scratch space (``workspace``): ``work`` (3, d) = theta, grad log p, grad log q; ``comp``
(N_COMP, K) = the per-component rows C, LOG_C, LOG_N (log N_j(theta) of the current draw),
LOG_NORM (-sum_alpha log sigma_j_alpha - d/2 log 2 pi), GRAD_C; ``shape`` (N_SHAPE, K, d) =
SIGMA, INV_SIGMA, DSIGMA (= sigmoid(zeta)), GRAD_SIGMA.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit
from ..numerics import LOG_2PI

GAUGE_NONE, GAUGE_MEAN_GRAD, GAUGE_FIX_C = 0, 1, 2
GAUGES = {"none": GAUGE_NONE, "mean_grad": GAUGE_MEAN_GRAD, "fix_c": GAUGE_FIX_C}

# rows of the scratch arrays (see the module docstring)
C, LOG_C, LOG_N, LOG_NORM, GRAD_C = range(5)
N_COMP = 5
SIGMA, INV_SIGMA, DSIGMA, GRAD_SIGMA = range(4)
N_SHAPE = 4
THETA, GRAD_P, GRAD_Q = range(3)


@jit
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


@jit
def scales(zeta, sigma, inv_sigma, dsigma, log_norm):
    """sigma = softplus(zeta) (eq. 3), 1 / sigma, d sigma / d zeta = sigmoid(zeta), and each
    component's log normaliser -sum_alpha log sigma - d/2 log 2 pi.

    softplus(z) = log1p(e) + max(z, 0) and sigmoid(z) = 1 / (1 + e) (z >= 0) or e / (1 + e),
    with e = exp(-|z|) shared: stable for any z, and one exp per parameter (calling
    ``numerics.log1pexp`` and ``numerics.sigmoid`` would take one each). The sum of
    log sigma is the log of a running product, taken whenever the product leaves
    [1e-100, 1e100], so a logarithm is needed every few dozen coordinates, not every one.
    """
    k, d = zeta.shape
    for i in range(k):
        sum_log = 0.0
        product = 1.0
        for j in range(d):
            z = zeta[i, j]
            e = math.exp(-abs(z))
            s = math.log1p(e) + max(z, 0.0)
            sigma[i, j] = s
            inv_sigma[i, j] = 1.0 / s
            dsigma[i, j] = 1.0 / (1.0 + e) if z >= 0.0 else e / (1.0 + e)
            if 1e-100 < s < 1e100:
                product *= s
                if not (1e-100 < product < 1e100):
                    sum_log += math.log(product)
                    product = 1.0
            else:  # too small or large to multiply safely
                sum_log += math.log(s)
        log_norm[i] = -(sum_log + math.log(product)) - 0.5 * d * LOG_2PI


@jit(fastmath=True)
def component_log_densities(theta, mu, inv_sigma, log_norm, out):
    """out[j] = log prod_alpha N(theta_alpha; mu_j_alpha, sigma_j_alpha)."""
    k, d = mu.shape
    for j in range(k):
        s = 0.0
        for a in range(d):
            u = (theta[a] - mu[j, a]) * inv_sigma[j, a]
            s += u * u
        out[j] = log_norm[j] - 0.5 * s


@jit(fastmath=True)
def _explicit_terms(theta, mu_j, inv_sigma_j, resp, w, g_q, grad_mu_j, grad_sigma_j):
    """Component j's terms of one draw: -r_j u_j / sigma_j into g_q, and the explicit
    dependence of log q on (mu_j, sigma_j), weighted by w = c_i r_j / S."""
    for a in range(theta.size):
        u = (theta[a] - mu_j[a]) * inv_sigma_j[a]
        t = u * inv_sigma_j[a]
        g_q[a] -= resp * t
        grad_mu_j[a] += w * t
        grad_sigma_j[a] += w * (u * u - 1.0) * inv_sigma_j[a]


@jit(fastmath=True)
def _pathwise_terms(coef, g_p, g_q, eta_s, grad_mu_i, grad_sigma_i):
    """The draw's own component i: theta = sigma_i eta + mu_i moves with (mu_i, sigma_i);
    coef = -c_i / S."""
    for a in range(g_p.size):
        diff = g_p[a] - g_q[a]
        grad_mu_i[a] += coef * diff
        grad_sigma_i[a] += coef * diff * eta_s[a]


@jit(fastmath=True)
def _single_gaussian_draw(c0, eta_s, lp, inv_s, log_norm0, inv_sigma0, g_p, grad_mu0, grad_sigma0):
    """One draw of a one-component q (mean-field VI, Bayes by Backprop), exact entropy.

    Here u = eta, so log q(theta) = log normaliser - |eta|^2 / 2 exactly, and the explicit
    terms of log q cancel against its pathwise part: d/dmu adds -c g_p / S and d/dsigma adds
    -c (g_p eta + 1 / sigma) / S, the familiar reparameterisation gradient. Returns f.
    """
    sum_sq = 0.0
    coef = -c0 * inv_s
    for a in range(eta_s.size):
        sum_sq += eta_s[a] * eta_s[a]
        grad_mu0[a] += coef * g_p[a]
        grad_sigma0[a] += coef * (g_p[a] * eta_s[a] + inv_sigma0[a])
    return lp - (log_norm0 - 0.5 * sum_sq)


@jit
def accumulate_draw(i, eta_s, lp, inv_s, mu, exact_entropy, work, comp, shape, grad_mu):
    """Adds one draw's terms (component i, weight 1/S = inv_s, log p = lp with its gradient in
    work[GRAD_P]) to the loss and gradients. Returns the draw's contribution to the loss."""
    k, d = mu.shape
    c, log_c, log_n, grad_c = comp[C], comp[LOG_C], comp[LOG_N], comp[GRAD_C]
    theta, g_p, g_q = work[THETA], work[GRAD_P], work[GRAD_Q]
    grad_sigma = shape[GRAD_SIGMA]
    if not exact_entropy:  # eq. 17: log q is not needed per draw
        grad_c[i] += -lp * inv_s
        _pathwise_terms(-c[i] * inv_s, g_p, g_q, eta_s, grad_mu[i], grad_sigma[i])  # g_q stays 0
        return -c[i] * lp * inv_s
    if k == 1:  # one component: closed forms (the general path below gives the same values)
        f = _single_gaussian_draw(c[0], eta_s, lp, inv_s, comp[LOG_NORM, 0], shape[INV_SIGMA, 0], g_p,
                                  grad_mu[0], grad_sigma[0])
        grad_c[0] += (1.0 - f) * inv_s  # c_i N_1 / q = c_1 / c_1
        return -c[0] * f * inv_s
    component_log_densities(theta, mu, shape[INV_SIGMA], comp[LOG_NORM], log_n)
    m = -math.inf
    for j in range(k):
        if log_c[j] + log_n[j] > m:
            m = log_c[j] + log_n[j]
    total = 0.0
    for j in range(k):
        total += math.exp(log_c[j] + log_n[j] - m)
    log_q = m + math.log(total)
    f = lp - log_q
    g_q[:] = 0.0
    for j in range(k):
        resp = math.exp(log_c[j] + log_n[j] - log_q)
        # N_j / q = r_j / c_j, without a second exp unless c_j is too small to divide by
        n_over_q = resp / c[j] if c[j] > 1e-200 else math.exp(log_n[j] - log_q)
        grad_c[j] += c[i] * n_over_q * inv_s
        if resp > 0.0:  # an underflowed responsibility contributes exactly nothing below
            _explicit_terms(theta, mu[j], shape[INV_SIGMA, j], resp, c[i] * resp * inv_s, g_q,
                            grad_mu[j], grad_sigma[j])
    grad_c[i] += -f * inv_s
    _pathwise_terms(-c[i] * inv_s, g_p, g_q, eta_s, grad_mu[i], grad_sigma[i])
    return -c[i] * f * inv_s


@jit
def finish_gradient(a, r, exact_entropy, comp, shape, grad_a, grad_zeta):
    """Adds the lower-bound entropy terms, chains sigma -> zeta and c -> a; returns the entropy part of L."""
    k, d = shape.shape[1], shape.shape[2]
    c, grad_c = comp[C], comp[GRAD_C]
    inv_sigma, grad_sigma = shape[INV_SIGMA], shape[GRAD_SIGMA]
    extra = 0.0
    if not exact_entropy:
        for i in range(k):
            # H[N_i] = sum_alpha (1/2 log(2 pi e) + log sigma) = d/2 - log normaliser
            h = 0.5 * d - comp[LOG_NORM, i]
            for j in range(d):
                grad_sigma[i, j] += -c[i] * inv_sigma[i, j]
            extra += -c[i] * h
            grad_c[i] += -h
    for i in range(k):
        for j in range(d):
            grad_zeta[i, j] = grad_sigma[i, j] * shape[DSIGMA, i, j]
    mean_gc = 0.0
    for i in range(k):
        mean_gc += c[i] * grad_c[i]
    for i in range(k):
        grad_a[i] = r * c[i] * (grad_c[i] - mean_gc)
    return extra


@jit
def begin_step(a, zeta, r, gauge, c_floor, work, comp, shape, grad_mu):
    """Weights and scales for this step's parameters; gradients (and grad log q) zeroed."""
    work[GRAD_Q, :] = 0.0  # the lower bound never writes it; the exact entropy resets it per draw
    mixture_weights(a, r, gauge, c_floor, comp[C], comp[LOG_C])
    scales(zeta, shape[SIGMA], shape[INV_SIGMA], shape[DSIGMA], comp[LOG_NORM])
    comp[GRAD_C, :] = 0.0
    grad_mu[:, :] = 0.0
    shape[GRAD_SIGMA, :, :] = 0.0


@jit(fastmath=True)
def _draw_theta(sigma_i, eta_s, mu_i, theta):
    """theta = sigma_i eta + mu_i (eq. 14-16)."""
    for j in range(theta.size):
        theta[j] = sigma_i[j] * eta_s[j] + mu_i[j]


@jit(nrt=False)
def loss_and_gradient(logp_grad, data, a, mu, zeta, eta, r, gauge, c_floor, exact_entropy,
                      work, comp, shape, grad_a, grad_mu, grad_zeta):
    """The Monte Carlo loss L and its exact gradient for the draws ``eta`` (K, S, d).

    Scratch arrays as :func:`workspace` makes them. Returns (L, target gradients used, draws
    whose density was NaN or -inf: those are left out of L and its gradient, so the estimate
    averages the finite draws with weight 1/S each). Allocates nothing.
    """
    k, n_s, d = eta.shape
    begin_step(a, zeta, r, gauge, c_floor, work, comp, shape, grad_mu)
    inv_s = 1.0 / n_s
    loss = 0.0
    n_grad = 0
    n_bad = 0
    for i in range(k):
        for s in range(n_s):
            _draw_theta(shape[SIGMA, i], eta[i, s], mu[i], work[THETA])
            lp = logp_grad(work[THETA], work[GRAD_P], data)
            n_grad += 1
            if not math.isfinite(lp):  # left out of the estimates (the caller decides whether to step)
                n_bad += 1
                continue
            loss += accumulate_draw(i, eta[i, s], lp, inv_s, mu, exact_entropy, work, comp, shape, grad_mu)
    loss += finish_gradient(a, r, exact_entropy, comp, shape, grad_a, grad_zeta)
    return loss, n_grad, n_bad


@jit(nrt=False)
def loss_and_gradient_batch(logp_grad_batch, data, rows, scale, a, mu, zeta, eta, r, gauge, c_floor,
                            exact_entropy, work, comp, shape, grad_a, grad_mu, grad_zeta):
    """As :func:`loss_and_gradient` with the mini-batch form scale x loglik(rows) + log prior (eq. 19-20)."""
    k, n_s, d = eta.shape
    begin_step(a, zeta, r, gauge, c_floor, work, comp, shape, grad_mu)
    inv_s = 1.0 / n_s
    loss = 0.0
    n_grad = 0
    n_bad = 0
    for i in range(k):
        for s in range(n_s):
            _draw_theta(shape[SIGMA, i], eta[i, s], mu[i], work[THETA])
            lp = logp_grad_batch(work[THETA], work[GRAD_P], data, rows, scale)
            n_grad += 1
            if not math.isfinite(lp):  # left out of the estimates (the caller decides whether to step)
                n_bad += 1
                continue
            loss += accumulate_draw(i, eta[i, s], lp, inv_s, mu, exact_entropy, work, comp, shape, grad_mu)
    loss += finish_gradient(a, r, exact_entropy, comp, shape, grad_a, grad_zeta)
    return loss, n_grad, n_bad


def workspace(n_components: int, dim: int) -> dict:
    """The scratch arrays loss_and_gradient needs, by name, and its gradient outputs."""
    k, d = n_components, dim
    return {
        "work": np.zeros((3, d)),
        "comp": np.zeros((N_COMP, k)),
        "shape": np.zeros((N_SHAPE, k, d)),
        "grad_a": np.zeros(k),
        "grad_mu": np.zeros((k, d)),
        "grad_zeta": np.zeros((k, d)),
    }
