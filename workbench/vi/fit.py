"""The nn4post optimisation loop, whole in Numba: draws, loss and gradient, the paper's
gradient modifications, the optimiser step, traces and stopping rules.

Parameters live in one flat vector [a (K), mu (K x d), zeta (K x d)]. Per step t:

1. r_t: constant ``r``, or dynamic (sec. 3.2.2): ``r_start`` until ``r_warm`` x steps, then a
   linear ramp to 1 over ``r_ramp`` x steps, so the weights a barely move while mu and zeta
   search, and are then fitted at full scale. Plain gradient descent gets this from dL/da
   being proportional to r; Adam divides out a gradient's scale, so under Adam the step of a
   is multiplied by r_t (otherwise a disperses at full speed while r is small and the ramp
   then amplifies the dispersal: the very problem r is meant to prevent);
2. eta ~ N(0, I), shape (K, S, d); the loss and its gradient (``elbo.py``), on the whole data
   or on a mini-batch of ``batch`` rows with scale N_D / N_m (eq. 18-20; 1 when the factor is
   dropped on purpose);
3. the frozen-out fixes (sec. 3.2.3): "divide" multiplies component i's gradients by
   1 / (c_i + eps); "clip" also floors c at eps in the loss (a straight-through floor, so a
   frozen a_i gets a gradient again); "clip_a" zeroes dL/da_i when a_i < a_min =
   ln(C_ACCURACY) + logsumexp(a) and a_i wants to decrease. Problem 1 of the paper: the
   unfrozen a_j can still raise a_min, so "clip_a" does not bound c_i below;
4. gauge "mean_grad" subtracts the mean of dL/da (sec. 3.2.1);
5. Adam (default) or plain gradient descent (``optimizers.py``), learning rate
   lr x lr_final^(t / steps), times a per-parameter scale (``lr_scale``: 1, or for the means
   the posterior scale the start knows, or, with ``scale_by_sigma``, each component's current
   sd, refreshed every step, so that a step is the same fraction of a posterior sd in every
   coordinate and follows the scales as they are fitted);
6. traces: ELBO estimate (-L), r_t, min c, learning rate, and the norms of the three
   gradient blocks.

A call runs steps [t_start, t_stop) and can be resumed: the optimiser's moments and the
stopping rule's running numbers live in ``state`` ([m1 (P), m2 (P), then ``stopping.py``'s
numbers]), so a fit run in segments is the same fit as one run at once (the caller adapts
components between segments).

Stopping: after ``steps``; before a step the target-gradient budget cannot pay for; at the
ELBO's plateau (the rule and the rate's anneal in ``stopping.py``; tol = 0 switches it off);
at a non-finite loss or parameter, keeping the last finite
parameters (status NONFINITE); or when the caller sets control[C_STOP].
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import jit as jit_module
from ..jit import C_PROGRESS, C_STOP, CHAIN_RETURN, INDEX, MATRIX, RNG, VEC, jit, kernel_settings, settings_type, target_kernel
from ..rng import fill_standard_normal
from .elbo import GAUGE_MEAN_GRAD, N_COMP, N_SHAPE, SIGMA, C, loss_and_gradient, loss_and_gradient_batch
from .optimizers import adam_step, all_finite, gradient_descent_step
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


class FitSettings(NamedTuple):
    """The settings of one call of :func:`_fit` (built by :func:`fit_settings`)."""

    k: int = 0  # mixture components K
    steps: int = 0  # the schedule's length (r ramp, learning-rate decay)
    samples: int = 0  # draws per component per step, S
    gauge: int = 0  # elbo.GAUGE_*
    exact: int = 0  # 1: the exact-entropy loss
    frozen: int = 0  # FROZEN_*: the frozen-out fix (sec. 3.2.3)
    optimizer: int = 0  # OPT_ADAM or OPT_GD
    grad_budget: int = -1  # target gradients this call may spend; -1: none
    batch: int = 0  # mini-batch rows; 0: the whole data
    n_data: int = 0
    dynamic_r: int = 0  # 1: the dynamic r schedule (sec. 3.2.2)
    window: int = 0  # the ELBO plateau rule's window (stopping.py)
    patience: int = 0
    t_start: int = 0  # this call runs steps [t_start, t_stop)
    t_stop: int = 0
    scale_by_sigma: int = 0  # 1: the means step in units of their component's current sd
    lr: float = 0.0
    lr_final: float = 0.0
    r: float = 0.0
    r_start: float = 0.0
    r_warm: float = 0.0
    r_ramp: float = 0.0
    eps: float = 0.0  # the frozen-out fixes' epsilon
    c_accuracy: float = 0.0  # clip_a's floor on the weights
    tol: float = 0.0  # the plateau rule's tolerance; 0: off
    batch_scale: float = 0.0  # N_D / N_m (eq. 18-20), or 1
    beta1: float = 0.0
    beta2: float = 0.0
    adam_eps: float = 0.0


def fit_settings(**values) -> FitSettings:
    """:class:`FitSettings` cast to the kernel's one type (``jit.kernel_settings``)."""
    return kernel_settings(FitSettings, **values)


FIT_SETTINGS_TYPE = settings_type(FitSettings)

FROZEN_NONE, FROZEN_DIVIDE, FROZEN_CLIP, FROZEN_CLIP_A = range(4)
FROZEN_FIXES = {"none": FROZEN_NONE, "divide": FROZEN_DIVIDE, "clip": FROZEN_CLIP, "clip_a": FROZEN_CLIP_A}
OPT_ADAM, OPT_GD = 0, 1
OPTIMIZERS = {"adam": OPT_ADAM, "gd": OPT_GD}
TRACE_NAMES = ("elbo", "r", "min_c", "learning_rate", "grad_norm_a", "grad_norm_mu", "grad_norm_zeta", "skipped_draws")
STATUS_STEPS, STATUS_CONVERGED, STATUS_BUDGET, STATUS_NONFINITE, STATUS_STOPPED = range(5)


@jit
def rescale_factor(t, steps, dynamic, r, r_start, warm, ramp):
    """r_t: constant r, or r_start for warm x steps, then linear to 1 over ramp x steps."""
    if not dynamic:
        return r
    start = warm * steps
    length = max(ramp * steps, 1.0)
    if t < start:
        return r_start
    return min(1.0, r_start + (1.0 - r_start) * (t - start) / length)


@jit
def _norm(x):
    s = 0.0
    for v in x:
        s += v * v
    return math.sqrt(s)


def _fit(logp_grad, logp_grad_batch, data, params, rng, settings, lr_scale, state, traces, control):
    k = settings.k
    d = (params.size - k) // (2 * k)
    steps = settings.steps
    n_s = settings.samples
    gauge = settings.gauge
    dynamic_r = settings.dynamic_r != 0
    exact = settings.exact != 0
    frozen = settings.frozen
    budget = settings.grad_budget
    batch = settings.batch
    n_data = settings.n_data
    window = settings.window
    patience = settings.patience
    eps = settings.eps
    c_floor = eps if frozen == FROZEN_CLIP else 0.0
    tol = settings.tol
    beta1 = settings.beta1
    beta2 = settings.beta2

    a = params[:k]
    mu = params[k : k + k * d].reshape((k, d))
    zeta = params[k + k * d :].reshape((k, d))
    grads = np.zeros(params.size)
    grad_a = grads[:k]
    grad_mu = grads[k : k + k * d].reshape((k, d))
    grad_zeta = grads[k + k * d :].reshape((k, d))
    n_par = params.size
    m1 = state[:n_par]
    m2 = state[n_par : 2 * n_par]
    previous = params.copy()
    eta_flat = np.empty(k * n_s * d)
    eta = eta_flat.reshape((k, n_s, d))
    work = np.zeros((3, d))
    comp = np.zeros((N_COMP, k))
    shape = np.zeros((N_SHAPE, k, d))
    c = comp[C]  # this step's weights, for the frozen-out fixes and the traces
    perm = np.arange(max(n_data, 1))

    n_grad = 0
    status = STATUS_STEPS
    t_start = settings.t_start
    done = t_start
    plateau = state[2 * n_par :]  # the stopping rule's running numbers (stopping.py)
    lr_end = settings.lr * settings.lr_final
    anneal_steps = max(patience * window, 1)
    m1_before = np.empty(n_par)
    m2_before = np.empty(n_par)
    rejections = new_rejections()  # stopping.py's rule for steps that meet NaN or -inf
    t = t_start
    while t < settings.t_stop:
        if control[C_STOP] != 0:
            status = STATUS_STOPPED
            break
        if budget >= 0 and n_grad + k * n_s > budget:
            status = STATUS_BUDGET
            break
        if annealed_out(t, anneal_steps, plateau):
            status = STATUS_CONVERGED
            break
        r = rescale_factor(t, steps, dynamic_r, settings.r, settings.r_start,
                           settings.r_warm, settings.r_ramp)
        fill_standard_normal(rng, eta_flat)  # eta ~ N(0, I), (K, S, d)
        if batch > 0:
            for j in range(batch):  # partial Fisher-Yates: batch rows without replacement
                pick = j + int(rng.random() * (n_data - j))
                tmp = perm[j]
                perm[j] = perm[pick]
                perm[pick] = tmp
            loss, n, n_bad = loss_and_gradient_batch(
                logp_grad_batch, data, perm[:batch], settings.batch_scale, a, mu, zeta, eta, r, gauge,
                c_floor, exact, work, comp, shape, grad_a, grad_mu, grad_zeta,
            )
        else:
            loss, n, n_bad = loss_and_gradient(
                logp_grad, data, a, mu, zeta, eta, r, gauge, c_floor, exact, work, comp, shape,
                grad_a, grad_mu, grad_zeta,
            )
        n_grad += n
        if not math.isfinite(loss) or 10 * n_bad > eta.shape[0] * eta.shape[1]:
            # more than a tenth of the draws where the density is NaN or -inf: a rejected step, at
            # half the rate after it (q is kept off that region); fewer are left out of the step's
            # estimates and counted in the trace (a near-singular kernel matrix can fail at a few
            # draws of every step, and rejecting each such step would end the fit at its start)
            if reject_step(rejections):
                status = STATUS_NONFINITE
                break
            continue
        # the paper's redefinitions of the gradient (sec. 3.2)
        if frozen == FROZEN_DIVIDE or frozen == FROZEN_CLIP:
            for i in range(k):
                f = 1.0 / (c[i] + eps)
                grad_a[i] *= f
                for j in range(d):
                    grad_mu[i, j] *= f
                    grad_zeta[i, j] *= f
        elif frozen == FROZEN_CLIP_A:
            m = -math.inf
            for i in range(k):
                m = max(m, a[i])
            total = 0.0
            for i in range(k):
                total += math.exp(a[i] - m)
            a_min = math.log(settings.c_accuracy) + m + math.log(total)
            for i in range(k):
                if a[i] < a_min and grad_a[i] > 0.0:
                    grad_a[i] = 0.0
        if gauge == GAUGE_MEAN_GRAD:
            mean = 0.0
            for i in range(k):
                mean += grad_a[i]
            mean /= k
            for i in range(k):
                grad_a[i] -= mean
        lr = rejections[R_PENALTY] * learning_rate(t, steps, settings.lr, settings.lr_final, anneal_steps, plateau)
        if settings.scale_by_sigma != 0:
            # each mean steps in units of its component's sd at this step, as the loss computed
            # it (frozen entries stay 0)
            sigma = shape[SIGMA]
            for i in range(k):
                for j in range(d):
                    p = k + i * d + j
                    if lr_scale[p] != 0.0:
                        lr_scale[p] = sigma[i, j]
        m1_before[:] = m1
        m2_before[:] = m2
        if settings.optimizer == OPT_ADAM:
            # Adam ignores the gradient's scale r: keep a still while a dynamic r is small
            a_factor = r if dynamic_r else 1.0
            adam_step(params, previous, grads, m1, m2, lr_scale, 0, k, t, lr, beta1, beta2, settings.adam_eps,
                      a_factor)
            adam_step(params, previous, grads, m1, m2, lr_scale, k, params.size, t, lr, beta1, beta2,
                      settings.adam_eps, 1.0)
        else:
            gradient_descent_step(params, previous, grads, lr_scale, 0, params.size, lr)
        if not all_finite(params):  # an overflowing update: undone, and rejected as above
            for p in range(params.size):
                params[p] = previous[p]
            m1[:] = m1_before
            m2[:] = m2_before
            if reject_step(rejections):
                status = STATUS_NONFINITE
                break
            continue
        accept_step(rejections)
        min_c = c[0]
        for i in range(k):
            min_c = min(min_c, c[i])
        traces[t, 0] = -loss
        traces[t, 1] = r
        traces[t, 2] = min_c
        traces[t, 3] = lr
        traces[t, 4] = _norm(grad_a)
        traces[t, 5] = _norm(grads[k : k + k * d])
        traces[t, 6] = _norm(grads[k + k * d :])
        traces[t, 7] = n_bad
        done = t + 1
        control[C_PROGRESS] = done
        t += 1
        if record_elbo(-loss, done, window, patience, tol, lr, lr_end, plateau):
            status = STATUS_CONVERGED
            break
    return done, n_grad, status, rejections[R_REJECTED]


fit_kernel = target_kernel(
    lambda t: CHAIN_RETURN(
        t.logp_grad, t.logp_grad_batch, t.data, VEC, RNG, FIT_SETTINGS_TYPE, VEC, VEC, MATRIX, INDEX,
    ),
)(_fit)


no_batch_form = jit_module.no_batch_form  # the stand-in for targets without a batch form


def new_state(n_params: int) -> np.ndarray:
    """A fresh ``state`` for ``_fit``: zero Adam moments, then the stopping rule's numbers."""
    return np.concatenate([np.zeros(2 * n_params), new_plateau()])
