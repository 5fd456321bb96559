"""Step-size adaptation: Nesterov's dual averaging as in Hoffman and Gelman (2014), and
their heuristic for a reasonable first step size (as Stan implements it).

Dual averaging (Hoffman & Gelman 2014, sec. 3.2, eq. 6) drives the average acceptance
statistic toward ``target`` with

    H_t = (1 - 1/(t + t0)) H_{t-1} + (target - a_t) / (t + t0)
    log eps_t = mu - sqrt(t) / gamma * H_t
    log eps_avg_t = t^-kappa log eps_t + (1 - t^-kappa) log eps_avg_{t-1}

with their defaults gamma = 0.05, t0 = 10, kappa = 0.75 and mu = log(10 eps_0). During
warmup the sampler uses eps_t; afterwards it fixes eps = exp(log eps_avg).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..jit import jit
from .integrators import leapfrog
from .metric import kinetic_energy, sample_momentum

GAMMA = 0.05
T0 = 10.0
KAPPA = 0.75


class DualAveraging(NamedTuple):
    """State of the dual-averaging step-size adaptation."""

    log_step: float  # log eps_t, used during warmup
    log_step_avg: float  # log eps_avg_t, used after warmup
    error_avg: float  # H_t
    mu: float  # shrinkage point log(10 eps_0)
    count: float  # t


@jit
def dual_averaging_start(step_size, shrink_factor=10.0):
    """Fresh adaptation state around ``step_size``, shrinking toward log(shrink_factor step_size).

    Hoffman & Gelman's mu = log(10 eps_0) favours trying larger HMC steps; a random-walk
    scale that is already near its optimum uses ``shrink_factor = 1``.
    """
    return DualAveraging(math.log(step_size), 0.0, 0.0, math.log(shrink_factor * step_size), 0.0)


@jit
def dual_averaging_update(state, accept_prob, target):
    """One step of eq. 6 given the last transition's acceptance statistic (NaN counts as 0)."""
    if not (accept_prob >= 0.0):  # NaN
        accept_prob = 0.0
    count = state.count + 1.0
    eta = 1.0 / (count + T0)
    error_avg = (1.0 - eta) * state.error_avg + eta * (target - accept_prob)
    log_step = state.mu - math.sqrt(count) / GAMMA * error_avg
    weight = count ** (-KAPPA)
    log_step_avg = weight * log_step + (1.0 - weight) * state.log_step_avg
    return DualAveraging(log_step, log_step_avg, error_avg, state.mu, count)


@jit(nrt=False)
def find_reasonable_step_size(logp_grad, data, q, g, logp, inv_mass, momentum_sd, transform, rng, step_size, work_q, work_p,
                              work_g):
    """Double or halve ``step_size`` until one leapfrog step's acceptance crosses 0.8.

    Hoffman & Gelman (2014), Algorithm 4, in Stan's form (threshold log 0.8). The state
    (q, g, logp) is not changed; ``momentum_sd`` = 1 / sqrt(inv_mass); ``work_*`` are scratch vectors. Returns
    (step_size, gradient evaluations used). Gives up at 100 doublings or halvings, or
    when the step leaves [1e-10, 1e7], returning the last value.
    """
    n_grad = 0
    direction = 0
    for _ in range(100):
        for i in range(q.size):
            work_q[i] = q[i]
            work_g[i] = g[i]
        h0 = -logp + sample_momentum(rng, momentum_sd, work_p)
        lp = leapfrog(logp_grad, data, work_q, work_p, work_g, step_size, inv_mass, transform)
        n_grad += 1
        h = -lp + kinetic_energy(work_p, inv_mass)
        delta = h0 - h if math.isfinite(h) else -math.inf
        if direction == 0:
            direction = 1 if delta > math.log(0.8) else -1
        elif direction == 1 and not (delta > math.log(0.8)):
            break
        elif direction == -1 and delta > math.log(0.8):
            break
        step_size = step_size * 2.0 if direction == 1 else step_size * 0.5
        if step_size > 1e7 or step_size < 1e-10:
            break
    return step_size, n_grad
