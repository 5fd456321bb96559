"""Metropolis-Hastings kernels: random-walk (with warmup adaptation) and independence.

Random walk: proposal y = x + s * sd * z, z ~ N(0, I), accepted with min(1, p(y) / p(x)).
During warmup the global scale s is adapted toward acceptance 0.234 (Roberts, Gelman &
Gilks 1997) by the Robbins-Monro recursion of adaptive MCMC (Andrieu & Thoms 2008, sec.
5): log s += (a_t - 0.234) / t^0.6, and the final scale is the average of log s over the
terminal buffer (Polyak averaging). (Dual averaging, used for the HMC step size, left the
scale 30-40% too large here: its early excursions bias its average on the noisy 0/1
acceptance signal of a random walk.) The
per-coordinate ``sd`` is set from the warmup draws at the end of each of Stan's doubling
windows (``adaptation.stan_windows``); the scale then restarts at 2.38 / sqrt(d),
optimal for a Gaussian whose shape is known, and adapts again.

Independence: proposals y ~ q drawn beforehand (any distribution object, in Python) with
their log q(y); accepted with min(1, [p(y) / q(y)] / [p(x) / q(x)]): the Hastings ratio
corrects for q, so an asymmetric q still gives the right answer.

Each proposal costs one call of the target's ``logp_grad`` (the gradient comes along,
unused); these calls are what ``grad_evals`` counts, so budgets compare across methods.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import types

from ..jit import (
    C_EVALS,
    C_PROGRESS,
    C_STOP,
    C_WARMUP_EVALS,
    CHAIN_RETURN,
    INDEX,
    MATRIX,
    RNG,
    VEC,
    kernel_settings,
    settings_type,
    target_kernel,
)
from ..rng import fill_standard_normal
from .adaptation import stan_regularised_variance, welford_add, welford_reset


class RandomWalkSettings(NamedTuple):
    """The settings of one random-walk chain (built by :func:`random_walk_settings`)."""

    n_warmup: int
    n_draws: int
    grad_budget: int  # per chain; -1: none
    window_start: int  # the first warmup iteration of the variance windows
    adapt: int  # 1: adapt the proposal's scale and sds in warmup
    scale: float  # the proposal's first scale (times the sds)
    target_accept: float


def random_walk_settings(**values) -> RandomWalkSettings:
    """:class:`RandomWalkSettings` cast to the kernel's one type (``jit.kernel_settings``)."""
    return kernel_settings(RandomWalkSettings, **values)


STAT_NAMES = ("accept_prob", "accepted", "step_size", "logp", "nan_density")
# "nan_density" marks a proposal where the density was NaN (rejected like -inf, but a fault of
# the density, not the edge of its support): Chains.result counts and reports them


def _random_walk_chain(logp_grad, data, x, rng, settings, sd, window_ends, draws_out, stats_out, control):
    """Random-walk Metropolis; ``sd`` is overwritten with the adapted proposal sds.

    Returns (iterations done, density evaluations, of which in warmup, final scale).
    """
    d = x.size
    n_warmup = settings.n_warmup
    n_total = n_warmup + settings.n_draws
    budget = settings.grad_budget
    adapt = settings.adapt != 0
    target_accept = settings.target_accept
    scale = settings.scale
    g = np.empty(d)
    y = np.empty(d)
    mean = np.zeros(d)
    m2 = np.zeros(d)
    var = np.empty(d)
    logp = logp_grad(x, g, data)
    n_evals = 1
    n_evals_warmup = 1 if n_warmup > 0 else 0
    log_scale = math.log(scale)
    t_adapt = 0  # iterations since the scale adaptation (re)started
    log_scale_sum = 0.0  # Polyak average over the terminal buffer
    n_sum = 0
    adapt_end = window_ends[window_ends.size - 1] if window_ends.size > 0 else 0
    window = 0
    n_window = 0
    done = 0
    for it in range(n_total):
        if control[C_STOP] != 0 or (budget >= 0 and n_evals >= budget):
            break
        fill_standard_normal(rng, y)
        for i in range(d):
            y[i] = x[i] + scale * sd[i] * y[i]
        logp_y = logp_grad(y, g, data)
        n_evals += 1
        log_ratio = logp_y - logp
        if not math.isfinite(logp_y):  # NaN or -inf: rejected
            accept_prob = 0.0
        else:
            accept_prob = 1.0 if log_ratio >= 0.0 else math.exp(log_ratio)
        accepted = rng.random() < accept_prob
        if accepted:
            for i in range(d):
                x[i] = y[i]
            logp = logp_y
        draws_out[it, :] = x
        stats_out[it, 0] = accept_prob
        stats_out[it, 1] = 1.0 if accepted else 0.0
        stats_out[it, 2] = scale
        stats_out[it, 3] = logp
        stats_out[it, 4] = 1.0 if logp_y != logp_y else 0.0
        if it < n_warmup and adapt:
            t_adapt += 1
            log_scale += (accept_prob - target_accept) / t_adapt**0.6
            scale = math.exp(log_scale)
            if it >= adapt_end:
                log_scale_sum += log_scale
                n_sum += 1
            if window < window_ends.size and it >= settings.window_start:
                n_window = welford_add(mean, m2, n_window, x)
                if it + 1 == window_ends[window]:
                    stan_regularised_variance(m2, n_window, var)
                    for i in range(d):
                        sd[i] = math.sqrt(var[i])
                    # with the shape learnt, restart from the optimal Gaussian scale
                    scale = 2.38 / math.sqrt(d)
                    log_scale = math.log(scale)
                    t_adapt = 0
                    welford_reset(mean, m2)
                    n_window = 0
                    window += 1
            if it + 1 == n_warmup and n_sum > 0:
                scale = math.exp(log_scale_sum / n_sum)
            n_evals_warmup = n_evals
        done = it + 1
        control[C_PROGRESS] = done
        control[C_EVALS] = n_evals
        control[C_WARMUP_EVALS] = n_evals_warmup
    return done, n_evals, n_evals_warmup, scale


random_walk_chain = target_kernel(
    lambda t: CHAIN_RETURN(t.logp_grad, t.data, VEC, RNG, settings_type(RandomWalkSettings), VEC, INDEX, MATRIX, MATRIX,
                           INDEX),
)(_random_walk_chain)


def _independence_chain(logp_grad, data, x, logq_x, rng, proposals, logq_proposals, budget, draws_out, stats_out, control):
    """Independence Metropolis-Hastings over pre-drawn ``proposals`` (n, d) with their log q.

    Returns (iterations done, density evaluations, 0, final log weight).
    """
    d = x.size
    g = np.empty(d)
    log_w = logp_grad(x, g, data) - logq_x  # log p(x) - log q(x)
    logp = log_w + logq_x
    n_evals = 1
    done = 0
    for it in range(proposals.shape[0]):
        if control[C_STOP] != 0 or (budget >= 0 and n_evals >= budget):
            break
        y = proposals[it]
        logp_y = logp_grad(y, g, data)
        n_evals += 1
        log_w_y = logp_y - logq_proposals[it]
        if not math.isfinite(log_w_y):
            accept_prob = 0.0
        else:
            diff = log_w_y - log_w
            accept_prob = 1.0 if diff >= 0.0 else math.exp(diff)
        accepted = rng.random() < accept_prob
        if accepted:
            for i in range(d):
                x[i] = y[i]
            log_w = log_w_y
            logp = logp_y
        draws_out[it, :] = x
        stats_out[it, 0] = accept_prob
        stats_out[it, 1] = 1.0 if accepted else 0.0
        stats_out[it, 2] = 0.0
        stats_out[it, 3] = logp
        stats_out[it, 4] = 1.0 if logp_y != logp_y else 0.0
        done = it + 1
        control[C_PROGRESS] = done
        control[C_EVALS] = n_evals
    return done, n_evals, 0, log_w


independence_chain = target_kernel(
    lambda t: CHAIN_RETURN(t.logp_grad, t.data, VEC, types.float64, RNG, MATRIX, VEC, types.int64, MATRIX, MATRIX, INDEX),
)(_independence_chain)
