"""Full-rank Gaussian VI by natural-gradient ascent, whole in Numba: q = N(mu, C C^T), C lower
triangular, every step a natural-gradient step of the ELBO inside a trust region.

The natural gradient (Amari 1998) of the ELBO for a Gaussian is the Euclidean gradient
preconditioned by the inverse Fisher information: for the mean, Sigma grad_mu; for the
covariance, 2 Sigma grad_Sigma Sigma. Written on the Cholesky factor (Tan 2021, "Analytic
natural gradient updates for Cholesky factor in Gaussian variational approximation", eq. 7:
a change dC = C X, X lower triangular, changes C^-1 dSigma C^-T by X + X^T), with
theta_s = mu + C eta_s and whitened gradients u_s = C^T g_s (g_s the target's gradient at
theta_s), the steps are

    d mu = rho C v_bar,            v_bar = 1/S sum_s v_s,        v_s = u_s + eta_s,
    d C  = rho C H(M),             M = 1/(2 S) sum_s (eta_s v_s^T + v_s eta_s^T),

where H(M) keeps M's lower triangle with its diagonal halved, and M estimates
2 C^T grad_Sigma(ELBO) C by Stein's lemma (E_q[grad^2 log p] = Sigma^-1 E_q[(theta - mu) g^T]):
its expectation is 0 exactly where q's covariance is optimal. (For a Gaussian target
N(m, P^-1): E v = -C^T P (mu - m) and E M = I - C^T P C, both 0 at q = p.)

v_s = C^T (grad log p - grad log q)(theta_s) is the "sticking the landing" gradient (Roeder,
Wu and Duvenaud 2017, eq. 8): the score of q, whose expectation is 0, is left out of the
estimate, and with it the noise that does not vanish at the optimum (for q = p every v_s is 0:
the estimate is exact). The plain estimate, u_s in place of v_s and I + 1/(2 S) sum_s
(eta_s u_s^T + u_s eta_s^T) for M, has the same expectation (E[eta] = 0, E[eta eta^T] = I).
On a 103-d stochastic-volatility posterior the plain estimate stays several times farther from
the family's optimum at the same cost.
The ELBO is estimated in the same way, as the mean of log p - log q over the draws.

Why natural gradients: the step is the same whatever the coordinates' scales and correlations
(it is affine invariant), so a posterior whose scales differ by orders of magnitude, or whose
latent series is strongly correlated, is crossed in as many steps as an isotropic one. Adam's
per-coordinate steps are not (on the 103-d stochastic-volatility posterior they stop short of
the family's optimum by more than a posterior sd).

The trust region: rho is the scheduled rate, cut so that the step's length in q's own
whitened coordinates, sqrt(|v_bar|^2 + 2 |H(M)|_F^2) rho (the square root of twice the KL
divergence between the old and the new q, to second order), is at most :data:`MAX_STEP`.
Far from the optimum, where the gradients are large, this is what sets the step (the
trust-region view of natural gradients; Arenz et al. 2023, sec. 3, bound KL in the same way),
and it keeps C's diagonal positive: rho |H(M)_ii| <= MAX_STEP / sqrt(2) < 1.

Parameters are one flat vector as in ``full_rank.py`` (mu, then C row-major with the diagonal
stored as softplus^-1 of C_ii), so the two optimisers share pack, unpack and the returned fit
(the running average of the iterates, over about the last tenth of the steps). The rate's
schedule, the stopping rule and the rule for rejected steps are ``stopping.py``'s, with one
addition: a window whose average mean moved more than :data:`MAX_DRIFT` of q's sds from the
last window that moved (``window_drift``) is not a plateau, and the fit does not stop while the mean moves. Along a
weakly identified direction the ELBO is flat long before the mean stops travelling: on the
stochastic-volatility posterior under a budget of 5 x 10^5 gradients, the ELBO's rule alone
stopped 0.08-0.13 reference sds from the family's optimum, with this addition 0.04-0.05.
Cost per step: S gradients and O(S d^2 + d^3 / 6) arithmetic (the product C H(M)).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ..jit import C_PROGRESS, CHAIN_RETURN, INDEX, MATRIX, RNG, VEC, jit, target_kernel
from ..rng import fill_standard_normal
from .fit import STATUS_CONVERGED, STATUS_NONFINITE, STATUS_STEPS
from .full_rank import stop_status
from .stopping import (
    P_T_ANNEAL,
    R_PENALTY,
    R_REJECTED,
    accept_step,
    learning_rate,
    new_rejections,
    record_drift,
    record_elbo,
    reject_step,
)

# the anneal after a plateau lasts half as long as the fit took to reach it (at least patience
# windows): on the S&P 500 volatility posterior the log noise scale still travels toward the
# family's optimum while the rate comes down (an anneal of patience windows stopped 0.2-0.3 of q's
# sds short of it, in 8,000-11,000 steps; this one 0.02-0.17 in 11,000-16,500, six seeds; one as
# long as the fit took ran the simulated volatility posterior's fit to its step cap)
ANNEAL_SHARE = 2
MAX_DRIFT = 0.05  # a window's average mean moved more than this many of q's sds: still travelling
MAX_STEP = 1.0  # the trust region: a step's whitened length, sqrt(2 KL(q_new || q_old))
LOG_2PI = math.log(2.0 * math.pi)


@jit
def _softplus_inverse(c):
    return c + math.log(-math.expm1(-c))


def _fit_full_rank_natural(logp_grad, data, params, rng, steps, samples, grad_budget, window, patience, lr,
                           lr_final, tol, state, average, traces, control):
    """Fit for up to ``steps`` steps; returns (steps done, gradients, status, rejected steps).

    The signature is ``full_rank._fit_full_rank``'s: ``params`` holds the start and then the
    last iterate, ``average`` the iterates' running average (both packed); ``state`` ends in
    the stopping rule's numbers (its first 2 P entries, Adam's moments there, are unused)."""
    n_par = params.size
    d = int(round(math.sqrt(n_par + 0.25) - 0.5))  # P = d + d^2
    plateau = state[2 * n_par :]
    mu = params[:d].copy()
    chol = np.zeros((d, d))
    packed = params[d:].reshape((d, d))
    for i in range(d):
        for j in range(i):
            chol[i, j] = packed[i, j]
        z = packed[i, i]
        chol[i, i] = z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
    avg_mu = mu.copy()
    avg_chol = chol.copy()
    new_chol = np.empty((d, d))
    eta = np.empty((samples, d))
    eta_flat = eta.reshape(samples * d)
    v_s = np.empty((samples, d))
    v_bar = np.empty(d)
    half_m = np.empty((d, d))  # H(M): M's lower triangle, diagonal halved
    theta = np.empty(d)
    g = np.empty(d)
    lr_end = lr * lr_final
    anneal_steps = max(patience * window, 1)
    inv_s = 1.0 / samples
    n_grad = 0
    status = STATUS_STEPS
    done = 0
    rejections = new_rejections()
    window_mu = np.zeros(d)  # the sum of this window's means, and the average of the window before
    last_window_mu = np.full(d, np.nan)
    t = 0
    while t < steps:
        if plateau[P_T_ANNEAL] >= 0:
            # the anneal lasts half as long as the fit took to its plateau (ANNEAL_SHARE): a weakly
            # identified direction still travels while the rate comes down
            anneal_steps = max(patience * window, int(plateau[P_T_ANNEAL]) // ANNEAL_SHARE, 1)
        stop = stop_status(control, t, n_grad, samples, grad_budget, anneal_steps, plateau)
        if stop >= 0:
            status = stop
            break
        fill_standard_normal(rng, eta_flat)
        mean_log_ratio = 0.0
        bad = False
        for s in range(samples):
            for i in range(d):
                v = mu[i]
                for j in range(i + 1):
                    v += chol[i, j] * eta[s, j]
                theta[i] = v
            lp = logp_grad(theta, g, data)
            n_grad += 1
            if not math.isfinite(lp):
                bad = True
                break
            half_norm2 = 0.0
            for j in range(d):  # v = C^T g + eta: the whitened gradient of log p - log q
                acc = 0.0
                for i in range(j, d):
                    acc += chol[i, j] * g[i]
                if not math.isfinite(acc):  # an infinite gradient beside a finite density
                    bad = True
                v_s[s, j] = acc + eta[s, j]
                half_norm2 += 0.5 * eta[s, j] * eta[s, j]
            mean_log_ratio += inv_s * (lp + half_norm2)  # log p - log q, up to q's normalising constant
            if bad:
                break
        if bad:  # a draw where the density is NaN or -inf: rejected, at half the rate after it
            if reject_step(rejections):
                status = STATUS_NONFINITE
                break
            continue
        log_det = 0.0
        for i in range(d):
            log_det += math.log(chol[i, i])
        elbo = mean_log_ratio + log_det + 0.5 * d * LOG_2PI
        norm2 = 0.0
        for i in range(d):
            acc = 0.0
            for s in range(samples):
                acc += v_s[s, i]
            v_bar[i] = inv_s * acc
            norm2 += v_bar[i] * v_bar[i]
        norm_mu = math.sqrt(norm2)
        norm_chol2 = 0.0
        for i in range(d):
            for j in range(i + 1):
                acc = 0.0
                for s in range(samples):
                    acc += eta[s, i] * v_s[s, j] + v_s[s, i] * eta[s, j]
                m = 0.5 * inv_s * acc
                if i == j:
                    m *= 0.5
                half_m[i, j] = m
                norm_chol2 += m * m
        length = math.sqrt(norm2 + 2.0 * norm_chol2)
        step_lr = rejections[R_PENALTY] * learning_rate(t, steps, lr, lr_final, anneal_steps, plateau)
        rho = step_lr
        if rho * length > MAX_STEP:
            rho = MAX_STEP / length
        # the new parameters: mu + rho C v_bar and C + rho C H(M) (C H(M) is lower triangular)
        finite = True
        for i in range(d):
            acc = 0.0
            for k in range(i + 1):
                acc += chol[i, k] * v_bar[k]
            theta[i] = mu[i] + rho * acc
            if not math.isfinite(theta[i]):
                finite = False
            for j in range(i + 1):
                acc = 0.0
                for k in range(j, i + 1):
                    acc += chol[i, k] * half_m[k, j]
                new_chol[i, j] = chol[i, j] + rho * acc
                if not math.isfinite(new_chol[i, j]):
                    finite = False
        if not finite:  # an overflowing update: rejected as above
            if reject_step(rejections):
                status = STATUS_NONFINITE
                break
            continue
        accept_step(rejections)
        for i in range(d):
            mu[i] = theta[i]
            for j in range(i + 1):
                chol[i, j] = new_chol[i, j]
        # the running average over about the last tenth of the steps, at most a window
        horizon = min(window, max(1, (t + 1) // 10))
        for i in range(d):
            avg_mu[i] += (mu[i] - avg_mu[i]) / horizon
            for j in range(i + 1):
                avg_chol[i, j] += (chol[i, j] - avg_chol[i, j]) / horizon
        for i in range(d):
            window_mu[i] += mu[i]
        traces[t, 0] = elbo
        traces[t, 1] = rho
        traces[t, 2] = norm_mu
        traces[t, 3] = math.sqrt(norm_chol2)
        done = t + 1
        control[C_PROGRESS] = done
        t += 1
        if window > 0 and done % window == 0:
            record_drift(window_drift(window_mu, last_window_mu, chol, window) > MAX_DRIFT, plateau)
        if record_elbo(elbo, done, window, patience, tol, step_lr, lr_end, plateau):
            status = STATUS_CONVERGED
            break
    _pack_into(params, mu, chol)
    _pack_into(average, avg_mu, avg_chol)
    return done, n_grad, status, rejections[R_REJECTED]


@jit
def window_drift(window_mu, last_window_mu, chol, window):
    """How far this window's average mean moved from the anchor ``last_window_mu``, in q's
    marginal sds (the largest coordinate; inf for the first window), and clears the sum
    ``window_mu``. The anchor moves to this window's average only when it moved more than
    :data:`MAX_DRIFT`: a slow drift, less than that per window, adds up until it shows (on the
    S&P 500 volatility posterior the log noise scale crept 0.02-0.03 of q's sd per window, and
    the fit stopped 0.2-0.3 of them short of the family's optimum)."""
    d = window_mu.size
    drift = 0.0
    for i in range(d):
        sd = 0.0
        for j in range(i + 1):
            sd += chol[i, j] * chol[i, j]
        moved = abs(window_mu[i] / window - last_window_mu[i]) / math.sqrt(sd)
        drift = max(drift, moved) if math.isfinite(moved) else math.inf
    for i in range(d):
        if drift > MAX_DRIFT:
            last_window_mu[i] = window_mu[i] / window
        window_mu[i] = 0.0
    return drift


@jit
def _pack_into(out, mu, chol):
    """Write (mu, C) into the flat layout of ``full_rank.pack`` (diagonal as softplus^-1)."""
    d = mu.size
    packed = out[d:].reshape((d, d))
    for i in range(d):
        out[i] = mu[i]
        for j in range(d):
            packed[i, j] = chol[i, j] if j < i else 0.0
        packed[i, i] = _softplus_inverse(chol[i, i])


full_rank_natural_kernel = target_kernel(
    lambda t: CHAIN_RETURN(
        t.logp_grad, t.data, VEC, RNG, types.int64, types.int64, types.int64, types.int64, types.int64,
        types.float64, types.float64, types.float64, VEC, VEC, MATRIX, INDEX,
    ),
)(_fit_full_rank_natural)
