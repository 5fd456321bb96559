"""Full-rank Gaussian VI, whole in Numba: q = N(mu, L L^T) fitted by the reparameterised ELBO.

L is lower triangular with a positive diagonal, L_ii = softplus(zeta_i) (as the mean-field
sds are parameterised in ``elbo.py``); Kucukelbir et al. (2017, "Automatic differentiation
variational inference", sec. 2.5, the full-rank Gaussian). With theta_s = mu + L eta_s,
eta_s ~ N(0, I), s = 1..S,

    ELBO = 1/S sum_s log p(theta_s) + sum_i log L_ii + d/2 (1 + log 2 pi)

(the Gaussian's entropy is exact), and the loss -ELBO has the pathwise gradients

    d/d mu      = -1/S sum_s g_s,
    d/d L_ij    = -1/S sum_s g_s,i eta_s,j             (j < i),
    d/d zeta_i  = (-1/S sum_s g_s,i eta_s,i - 1 / L_ii) sigmoid(zeta_i),

with g_s the target's gradient at theta_s. Parameters are one flat vector [mu (d), L (d x d,
row-major; entries above the diagonal stay 0, the diagonal holds zeta)].

The optimiser is Adam (``optimizers.py``) with each coordinate's steps in units of its
current marginal sd (the norm of L's row), so that a step of ``lr`` is that fraction of a
posterior sd whatever the parameters' units, as ``NN4Post(scale_steps=True)`` does; the
rate's schedule and the stopping rule are ``stopping.py``'s. A non-finite loss or parameter
stops the fit with the last finite parameters (status NONFINITE).

The fit returned is the iterates' running average over the last tenth of the steps (at most
a window): Adam's iterates jitter around the optimum by about the rate in every one of the
d (d + 3) / 2 parameters, and averaging them removes most of that noise (Polyak and Juditsky
1992; recommended for VI by Dhaka et al. 2020, "Robust, accurate stochastic optimization for
variational inference").
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ..jit import C_PROGRESS, C_STOP, CHAIN_RETURN, INDEX, MATRIX, RNG, VEC, jit, target_kernel
from ..rng import fill_standard_normal
from .fit import STATUS_BUDGET, STATUS_CONVERGED, STATUS_NONFINITE, STATUS_STEPS, STATUS_STOPPED
from .optimizers import adam_step, all_finite
from .stopping import (
    R_PENALTY,
    R_REJECTED,
    accept_step,
    annealed_out,
    learning_rate,
    new_plateau,
    new_rejections,
    record_elbo,
    reject_step,
)

TRACE_NAMES = ("elbo", "learning_rate", "grad_norm_mu", "grad_norm_chol")
BETA1, BETA2, ADAM_EPS = 0.9, 0.999, 1e-8
LOG_2PI_E = 1.0 + math.log(2.0 * math.pi)


@jit
def stop_status(control, t, n_grad, samples, grad_budget, anneal_steps, plateau):
    """Why the fit ends before step t (Ctrl-C, the budget, the anneal run out), or -1: go on."""
    if control[C_STOP] != 0:
        return STATUS_STOPPED
    if grad_budget >= 0 and n_grad + samples > grad_budget:
        return STATUS_BUDGET
    if annealed_out(t, anneal_steps, plateau):
        return STATUS_CONVERGED
    return -1


def _fit_full_rank(logp_grad, data, params, rng, steps, samples, grad_budget, window, patience, lr, lr_final,
                   tol, state, average, traces, control):
    """Fit for up to ``steps`` steps; returns (steps done, gradients, status, 0.0).

    ``params`` holds the start and then the last iterate, ``average`` the iterates' running
    average; ``state`` is [m1 (P), m2 (P), the stopping rule's numbers]; ``traces`` (steps, 4)."""
    n_par = params.size
    d = int(round(math.sqrt(n_par + 0.25) - 0.5))  # P = d + d^2
    mu = params[:d]
    chol = params[d:].reshape((d, d))
    grads = np.zeros(n_par)
    grad_mu = grads[:d]
    grad_chol = grads[d:].reshape((d, d))
    m1 = state[:n_par]
    m2 = state[n_par : 2 * n_par]
    plateau = state[2 * n_par :]
    previous = params.copy()
    lr_scale = np.ones(n_par)
    eta = np.empty((samples, d))
    eta_flat = eta.reshape(samples * d)
    sd = np.empty(d)  # the diagonal of L
    sigmoid = np.empty(d)
    theta = np.empty(d)
    g = np.empty(d)
    lr_end = lr * lr_final
    anneal_steps = max(patience * window, 1)
    inv_s = 1.0 / samples
    n_grad = 0
    status = STATUS_STEPS
    done = 0
    for p in range(n_par):
        average[p] = params[p]
    m1_before = np.empty(n_par)
    m2_before = np.empty(n_par)
    rejections = new_rejections()  # stopping.py's rule for steps that meet NaN or -inf
    t = 0
    while t < steps:
        stop = stop_status(control, t, n_grad, samples, grad_budget, anneal_steps, plateau)
        if stop >= 0:
            status = stop
            break
        entropy = 0.0
        for i in range(d):
            z = chol[i, i]
            # softplus and its derivative, stable for large |z|
            sd[i] = z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
            sigmoid[i] = 1.0 / (1.0 + math.exp(-z))
            entropy += math.log(sd[i])
        for p in range(n_par):
            grads[p] = 0.0
        fill_standard_normal(rng, eta_flat)
        mean_logp = 0.0
        bad = False
        for s in range(samples):
            for i in range(d):
                v = mu[i] + sd[i] * eta[s, i]
                for j in range(i):
                    v += chol[i, j] * eta[s, j]
                theta[i] = v
            lp = logp_grad(theta, g, data)
            n_grad += 1
            if not math.isfinite(lp):
                bad = True
                break
            mean_logp += inv_s * lp
            for i in range(d):
                gi = inv_s * g[i]
                grad_mu[i] -= gi
                for j in range(i + 1):  # the diagonal collects d/dL_ii, turned into d/dzeta_i below
                    grad_chol[i, j] -= gi * eta[s, j]
        if bad:  # a draw where the density is NaN or -inf: rejected, at half the rate after it
            if reject_step(rejections):
                status = STATUS_NONFINITE
                break
            continue
        for i in range(d):
            grad_chol[i, i] = (grad_chol[i, i] - 1.0 / sd[i]) * sigmoid[i]
        elbo = mean_logp + entropy + 0.5 * d * LOG_2PI_E
        step_lr = rejections[R_PENALTY] * learning_rate(t, steps, lr, lr_final, anneal_steps, plateau)
        # each coordinate's steps in units of its current marginal sd (the norm of L's row)
        for i in range(d):
            row = sd[i] * sd[i]
            for j in range(i):
                row += chol[i, j] * chol[i, j]
            row = math.sqrt(row)
            lr_scale[i] = row
            for j in range(i):
                lr_scale[d + i * d + j] = row
        m1_before[:] = m1
        m2_before[:] = m2
        adam_step(params, previous, grads, m1, m2, lr_scale, 0, n_par, t, step_lr, BETA1, BETA2, ADAM_EPS, 1.0)
        if not all_finite(params):  # an overflowing update: undone, and rejected as above
            for p in range(n_par):
                params[p] = previous[p]
            m1[:] = m1_before
            m2[:] = m2_before
            if reject_step(rejections):
                status = STATUS_NONFINITE
                break
            continue
        accept_step(rejections)
        norm_mu = 0.0
        for i in range(d):
            norm_mu += grad_mu[i] * grad_mu[i]
        norm_chol = 0.0
        for p in range(d, n_par):
            norm_chol += grads[p] * grads[p]
        # the running average over about the last tenth of the steps, at most a window
        horizon = min(window, max(1, (t + 1) // 10))
        for p in range(n_par):
            average[p] += (params[p] - average[p]) / horizon
        traces[t, 0] = elbo
        traces[t, 1] = step_lr
        traces[t, 2] = math.sqrt(norm_mu)
        traces[t, 3] = math.sqrt(norm_chol)
        done = t + 1
        control[C_PROGRESS] = done
        t += 1
        if record_elbo(elbo, done, window, patience, tol, step_lr, lr_end, plateau):
            status = STATUS_CONVERGED
            break
    return done, n_grad, status, rejections[R_REJECTED]


full_rank_kernel = target_kernel(
    lambda t: CHAIN_RETURN(
        t.logp_grad, t.data, VEC, RNG, types.int64, types.int64, types.int64, types.int64, types.int64,
        types.float64, types.float64, types.float64, VEC, VEC, MATRIX, INDEX,
    ),
)(_fit_full_rank)


def pack(mean: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """The flat parameter vector of N(mean, chol chol^T) (``chol`` lower, positive diagonal)."""
    d = mean.size
    lower = np.tril(np.asarray(chol, dtype=float), -1)
    diag = np.diag(chol).astype(float)
    lower[np.diag_indices(d)] = diag + np.log(-np.expm1(-diag))  # softplus^-1
    return np.ascontiguousarray(np.concatenate([mean, lower.ravel()]))


def unpack(params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, Cholesky factor L) from the flat parameter vector."""
    d = int(round(math.sqrt(params.size + 0.25) - 0.5))
    chol = np.tril(params[d:].reshape(d, d), -1)
    chol[np.diag_indices(d)] = np.logaddexp(0.0, np.diag(params[d:].reshape(d, d)))
    return params[:d].copy(), chol


def new_state(n_params: int) -> np.ndarray:
    """Zero Adam moments, then the stopping rule's numbers."""
    return np.concatenate([np.zeros(2 * n_params), new_plateau()])
