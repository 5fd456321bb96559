"""Whole-chain kernels: one call runs warmup and sampling of one chain, without leaving Numba.

Every kernel takes the target's ``logp_grad`` as a first-class function and its ``data``
(see ``workbench/jit.py``), one ``np.random.Generator``, integer and float settings arrays
(indexed by the ``I_*`` / ``F_*`` constants below), preallocated outputs, and a
``control`` array shared with the Python thread that runs it: the kernel writes its
progress into ``control[C_PROGRESS]`` and stops at the next iteration when the Python side
sets ``control[C_STOP]`` (Ctrl-C, keeping the draws made so far). Kernels are ``nogil``,
so chains run in parallel on threads; each chain owns its generator and outputs, so
results do not depend on the number of threads.

Gradient evaluations are counted exactly (one per leapfrog step, plus the step-size
search); with a budget (``I_GRAD_BUDGET`` >= 0) a chain stops at the first transition that
starts with the budget spent, so it may overshoot by at most one transition.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import C_PROGRESS, C_STOP, CHAIN_RETURN, INDEX, MATRIX, RNG, VEC, target_kernel
from .mass_adaptation import (
    LATE_UPDATE_EVERY,
    MASS_GRADIENT,
    MASS_STAN,
    gradient_based_variance,
    stan_regularised_variance,
    welford_add,
    welford_reset,
)
from .metric import momentum_sd
from .step_size import dual_averaging_start, dual_averaging_update, find_reasonable_step_size
from .termination import N_CHECKPOINT_ROWS
from .trajectory import N_VECS, P0, PAIR_G, PAIR_Q, nuts_transition, static_transition

# integer settings
(I_WARMUP, I_DRAWS, I_ALGORITHM, I_N_LEAPFROG, I_MAX_DEPTH, I_MASS, I_WINDOW_START,
 I_GRAD_BUDGET, I_MASS_END, I_EARLY_END, I_SWITCH_EARLY, I_SWITCH_LATE, I_ADAPT_STEP) = range(13)
N_ISETTINGS = 13
# float settings
F_STEP, F_TARGET, F_MAX_ENERGY, F_JITTER = range(4)
N_FSETTINGS = 4
# algorithms
ALGO_HMC, ALGO_NUTS = 0, 1
# per-draw statistics (columns of stats_out)
STAT_NAMES = ("accept_prob", "diverging", "step_size", "tree_depth", "n_steps", "energy", "energy_error", "logp")
S_ACCEPT, S_DIVERGING, S_STEP, S_DEPTH, S_N_STEPS, S_ENERGY, S_ENERGY_ERROR, S_LOGP = range(8)


def _hamiltonian_chain(logp_grad, data, q, rng, isettings, fsettings, inv_mass, window_ends, draws_out, stats_out, control):
    """HMC (static L) or NUTS, with step-size and diagonal mass adaptation during warmup.

    ``q`` is the starting point (overwritten), ``inv_mass`` the starting inverse metric
    (overwritten with the adapted one). Returns (iterations done, gradient evaluations,
    of which in warmup, final step size).
    """
    d = q.size
    n_warmup = isettings[I_WARMUP]
    n_total = n_warmup + isettings[I_DRAWS]
    algorithm = isettings[I_ALGORITHM]
    max_depth = isettings[I_MAX_DEPTH]
    n_leapfrog = isettings[I_N_LEAPFROG]
    mass_scheme = isettings[I_MASS]
    budget = isettings[I_GRAD_BUDGET]
    adapt_step = isettings[I_ADAPT_STEP] != 0
    target_accept = fsettings[F_TARGET]
    max_energy_error = fsettings[F_MAX_ENERGY]
    jitter = fsettings[F_JITTER]

    vecs = np.zeros((N_VECS, d))
    ckpt = np.zeros((N_CHECKPOINT_ROWS, max(max_depth, 1), d))  # termination.checkpoints
    sd = np.empty(d)  # the momentum's sds, 1 / sqrt(inv_mass)
    momentum_sd(inv_mass, sd)
    # Welford accumulators: rows 0-1 (mean, m2) of draws, 2-3 of gradients; 4-7 background
    acc = np.zeros((8, d))
    g = np.empty(d)
    logp = logp_grad(q, g, data)
    n_grad = 1
    step = fsettings[F_STEP]
    if step <= 0.0:
        step, k = find_reasonable_step_size(
            logp_grad, data, q, g, logp, inv_mass, sd, rng, 1.0, vecs[PAIR_Q], vecs[P0], vecs[PAIR_G]
        )
        n_grad += k
    da = dual_averaging_start(step)
    window = 0
    n_window = 0
    n_fore = 0
    n_back = 0
    n_grad_warmup = n_grad if n_warmup > 0 else 0
    done = 0
    for it in range(n_total):
        if control[C_STOP] != 0 or (budget >= 0 and n_grad >= budget):
            break
        eps = step
        if jitter > 0.0:
            eps = step * (1.0 + jitter * (2.0 * rng.random() - 1.0))
        if algorithm == ALGO_NUTS:
            logp, accept, n, depth, diverging, energy, energy_error = nuts_transition(
                logp_grad, data, q, g, logp, eps, inv_mass, sd, max_depth, max_energy_error, rng, vecs, ckpt
            )
        else:
            logp, accept, n, diverging, energy, energy_error = static_transition(
                logp_grad, data, q, g, logp, eps, n_leapfrog, inv_mass, sd, max_energy_error, rng, vecs
            )
            depth = 0
        n_grad += n
        draws_out[it, :] = q
        stats_out[it, S_ACCEPT] = accept
        stats_out[it, S_DIVERGING] = 1.0 if diverging else 0.0
        stats_out[it, S_STEP] = eps
        stats_out[it, S_DEPTH] = depth
        stats_out[it, S_N_STEPS] = n
        stats_out[it, S_ENERGY] = energy
        stats_out[it, S_ENERGY_ERROR] = energy_error
        stats_out[it, S_LOGP] = logp

        if it < n_warmup:
            if adapt_step:
                da = dual_averaging_update(da, accept, target_accept)
                step = math.exp(da.log_step)
            if mass_scheme == MASS_STAN and window < window_ends.size and it >= isettings[I_WINDOW_START]:
                n_window = welford_add(acc[0], acc[1], n_window, q)
                if it + 1 == window_ends[window]:
                    stan_regularised_variance(acc[1], n_window, inv_mass)
                    momentum_sd(inv_mass, sd)
                    welford_reset(acc[0], acc[1])
                    n_window = 0
                    window += 1
                    if adapt_step:  # the metric changed: restart the step-size adaptation
                        step, k = find_reasonable_step_size(
                            logp_grad, data, q, g, logp, inv_mass, sd, rng, step,
                            vecs[PAIR_Q], vecs[P0], vecs[PAIR_G],
                        )
                        n_grad += k
                        da = dual_averaging_start(step)
            elif mass_scheme == MASS_GRADIENT and it < isettings[I_MASS_END]:
                n_fore = welford_add(acc[0], acc[1], n_fore, q)
                welford_add(acc[2], acc[3], n_fore - 1, g)
                n_back = welford_add(acc[4], acc[5], n_back, q)
                welford_add(acc[6], acc[7], n_back - 1, g)
                early = it < isettings[I_EARLY_END]
                if n_fore >= 3 and (early or it % LATE_UPDATE_EVERY == 0 or it + 1 == isettings[I_MASS_END]):
                    gradient_based_variance(acc[1], acc[3], inv_mass)
                    momentum_sd(inv_mass, sd)
                switch = isettings[I_SWITCH_EARLY] if early else isettings[I_SWITCH_LATE]
                if n_back >= switch:  # the background window becomes the foreground
                    for r in range(4):
                        acc[r, :] = acc[r + 4, :]
                        acc[r + 4, :] = 0.0
                    n_fore = n_back
                    n_back = 0
                if it + 1 == isettings[I_MASS_END] and adapt_step:
                    # the metric is final: adapt the step size for it alone
                    da = dual_averaging_start(step)
            if it + 1 == n_warmup and adapt_step:
                step = math.exp(da.log_step_avg)
            n_grad_warmup = n_grad
        done = it + 1
        control[C_PROGRESS] = done
    return done, n_grad, n_grad_warmup, step


hamiltonian_chain = target_kernel(
    lambda t: CHAIN_RETURN(t.logp_grad, t.data, VEC, RNG, INDEX, VEC, VEC, INDEX, MATRIX, MATRIX, INDEX),
)(_hamiltonian_chain)
