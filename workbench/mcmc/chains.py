"""Whole-chain kernels: one call runs warmup and sampling of one chain, without leaving Numba.

Every kernel takes the target's ``logp_grad`` as a first-class function and its ``data``
(see ``workbench/jit.py``), one ``np.random.Generator``, its settings as a NamedTuple
(:class:`HamiltonianSettings`), the warmup schedule (``adaptation.warmup_schedule``: what to
adapt after each warmup transition), preallocated outputs, and a ``control`` array shared
with the Python thread that runs it: the kernel writes its progress into
``control[C_PROGRESS]`` and stops at the next iteration when the Python side sets
``control[C_STOP]`` (Ctrl-C, keeping the draws made so far). Kernels are ``nogil``, so chains
run in parallel on threads; each chain owns its generator and outputs, so results do not
depend on the number of threads.

Gradient evaluations are counted exactly (one per leapfrog step, plus the step-size
search); with a budget (``grad_budget`` >= 0) a chain stops at the first transition that
starts with the budget spent, so it may overshoot by at most one transition.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

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
    jit,
    kernel_settings,
    settings_type,
    target_kernel,
)
from . import adaptation as A
from .metric import from_position, from_transformed_gradient, metric_transform, momentum_sd, to_position, to_transformed_gradient
from .step_size import dual_averaging_start, dual_averaging_update, find_reasonable_step_size
from .termination import N_CHECKPOINT_ROWS, NAN_COUNT
from .trajectory import N_VECS, P0, PAIR_G, PAIR_Q, nuts_transition, static_transition
from .walnuts import max_leaf_gradients

ALGO_HMC, ALGO_NUTS = 0, 1
# Warmup divergences after the metric has settled raise the step size's target acceptance
# (0.8 -> 0.95 -> 0.9875 -> 0.99) and restart dual averaging from the current step: a
# divergence counts when it comes SETTLE_ITERATIONS or more after dual averaging last
# (re)started, because its trial steps after a restart (Stan's windows) diverge on any
# posterior (with 20 iterations every Gaussian raised its target under "diag_stan"; with 50,
# none did). What it buys on the banana: ``benchmarks/mcmc_speed.py --banana``.
SETTLE_ITERATIONS = 50
MAX_RAISED_TARGET = 0.99


class HamiltonianSettings(NamedTuple):
    """The settings of one chain of :func:`hamiltonian_chain` (the same for every chain)."""

    n_warmup: int
    n_draws: int
    algorithm: int  # ALGO_HMC or ALGO_NUTS
    n_leapfrog: int  # HMC's steps per transition
    max_depth: int  # NUTS's tree depth limit
    grad_budget: int  # per chain; -1: none
    metric: int  # adaptation.METRICS
    max_rank: int  # low-rank / dense: eigen-directions at most
    window_capacity: int  # low-rank / dense: draws in the largest window (WarmupSchedule)
    symmetric_accept: int  # 1: dual averaging adapts the symmetric acceptance statistic (NUTS)
    gradient_start: int  # 1: a diagonal metric starts at 1 / |grad log p(x0)| (nutpie's start)
    warmup_grad_cap: int  # warmup ends early once it has spent this many gradients; -1: never
    warmup_max_depth: int  # NUTS's depth limit during warmup (<= max_depth)
    divergence_watch_start: int  # warmup iteration from which divergences raise the target; -1: never
    step_size: float  # the first step size; <= 0: find one
    target_accept: float
    max_energy_error: float
    jitter: float  # the step size varies uniformly by +-jitter (a fraction) each transition
    walnuts_error: float  # WALNUTS: the energy error a leaf's micro steps may reach (walnuts.py)
    walnuts_halvings: int  # WALNUTS: a leaf halves its step at most this often; -1: plain NUTS
    gamma: float  # low-rank / dense: regularisation of the covariances
    cutoff: float  # low-rank: eigenvalues within [1/cutoff, cutoff] are left to the diagonal


def hamiltonian_settings(**values) -> HamiltonianSettings:
    """:class:`HamiltonianSettings` cast to the kernel's one type (``jit.kernel_settings``)."""
    return kernel_settings(HamiltonianSettings, **values)


SETTINGS_TYPE = settings_type(HamiltonianSettings)
TRANSFORM_TYPE = numba.typeof(metric_transform(2, 1))

# per-draw statistics (columns of stats_out)
STAT_NAMES = ("accept_prob", "diverging", "step_size", "tree_depth", "n_steps", "energy", "energy_error", "logp",
              "nan_density")
S_ACCEPT, S_DIVERGING, S_STEP, S_DEPTH, S_N_STEPS, S_ENERGY, S_ENERGY_ERROR, S_LOGP, S_NAN = range(9)


def _hamiltonian_chain(logp_grad, data, x, rng, settings, schedule, inv_mass, transform, draws_out, stats_out,
                       adapt_log, control):
    """HMC (static L) or NUTS, with step-size and metric adaptation during warmup.

    ``x`` is the starting point (overwritten). A diagonal metric lives in ``inv_mass`` (the
    starting inverse metric, overwritten with the adapted one); a low-rank or dense one in
    ``transform`` (``metric.MetricTransform``, overwritten likewise), with ``inv_mass`` = 1.
    ``transform`` is None under a diagonal metric: this function is compiled twice, for a map
    and for None (``hamiltonian_chain`` and ``hamiltonian_chain_diag``), and Numba prunes each
    ``if transform is not None`` branch by the argument's type, so each kernel holds one NUTS
    tree, not both (the one kernel that held both took 40 s to compile, on one core).
    ``adapt_log`` gets (metric estimates, estimates that failed and left the diagonal alone,
    warmup iterations run, times the target acceptance was raised, the final target x 1e4,
    1 if the last estimate failed, so that the draws use the diagonal alone).
    Returns (iterations done, gradient evaluations, of which in warmup, final step).
    """
    d = x.size
    n_warmup = settings.n_warmup
    n_total = n_warmup + settings.n_draws
    metric = settings.metric

    vecs = np.zeros((N_VECS, d))
    # termination.checkpoints: one row per tree level, for the deepest tree any phase may build
    ckpt = np.zeros((N_CHECKPOINT_ROWS, max(settings.max_depth, settings.warmup_max_depth, 1), d))
    sd = np.empty(d)  # the momentum's sds, 1 / sqrt(inv_mass)
    momentum_sd(inv_mass, sd)
    diag = A.diag_init(d if metric == A.METRIC_DIAG or metric == A.METRIC_DIAG_STAN else 1)
    window = A.window_init(d if transform is not None else 1, settings.window_capacity if transform is not None else 1)
    g = np.empty(d)
    logp = logp_grad(x, g, data)
    n_grad = 1
    if metric == A.METRIC_DIAG and n_warmup > 0 and settings.gradient_start != 0:
        A.gradient_start(g, inv_mass)
        momentum_sd(inv_mass, sd)
    # the trajectory's coordinates: x itself, or y = A^-1 x under a low-rank or dense metric;
    # there (q, gq) carry the chain from one transition to the next, and x follows for the
    # draws (g, the gradient in x, only where the metric's estimator needs it)
    q = np.empty(d) if transform is not None else x
    gq = np.empty(d) if transform is not None else g
    if transform is not None:
        from_position(transform, x, q)
        to_transformed_gradient(transform, g, gq)
    step = settings.step_size
    if step <= 0.0:
        step, k = find_reasonable_step_size(logp_grad, data, q, gq, logp, inv_mass, sd, transform, rng, 1.0,
                                            vecs[PAIR_Q], vecs[P0], vecs[PAIR_G])
        n_grad += k
    da = dual_averaging_start(step)
    n_grad_warmup = n_grad if n_warmup > 0 else 0
    done = 0
    warmup_done = n_warmup
    target = settings.target_accept
    last_restart = 0  # the iteration dual averaging last (re)started at
    leaf_cost = max_leaf_gradients(settings.walnuts_halvings) if settings.walnuts_halvings >= 0 else 1
    it = 0
    while it < n_total:
        if control[C_STOP] != 0:
            break
        warming = it < n_warmup
        depth_limit = settings.warmup_max_depth if warming else settings.max_depth
        if settings.grad_budget >= 0:
            # never past the budget: the deepest tree the gradients left can pay for in full
            # (a tree of depth k costs at most 2^k - 1), or no transition at all
            remaining = settings.grad_budget - n_grad
            if settings.algorithm == ALGO_NUTS:
                depth_limit = min(depth_limit, _floor_log2(remaining + 1))
                if depth_limit < 1 or remaining < leaf_cost:
                    break
            elif remaining < settings.n_leapfrog:
                break
        eps = step
        if settings.jitter > 0.0:
            eps = step * (1.0 + settings.jitter * (2.0 * rng.random() - 1.0))
        # a diagonal metric passes None for the map: see metric.potential
        # a WALNUTS transition stops before a leaf the budget cannot pay for in full
        max_grads = settings.grad_budget - n_grad if settings.grad_budget >= 0 else 1 << 62
        if settings.algorithm == ALGO_NUTS:
            logp, accept, accept_sym, n, depth, diverging, energy, energy_error = nuts_transition(
                logp_grad, data, q, gq, logp, eps, inv_mass, sd, transform, depth_limit,
                settings.max_energy_error, rng, vecs, ckpt, settings.walnuts_error, settings.walnuts_halvings,
                leaf_cost, max_grads
            )
        else:
            logp, accept, n, diverging, energy, energy_error = static_transition(
                logp_grad, data, q, gq, logp, eps, settings.n_leapfrog, inv_mass, sd, transform,
                settings.max_energy_error, rng, vecs, ckpt
            )
            depth = 0
            accept_sym = accept
        if transform is not None:
            to_position(transform, q, x)
        n_grad += n
        draws_out[it, :] = x
        stats_out[it, S_ACCEPT] = accept
        stats_out[it, S_DIVERGING] = 1.0 if diverging else 0.0
        stats_out[it, S_STEP] = eps
        stats_out[it, S_DEPTH] = depth
        stats_out[it, S_N_STEPS] = n
        stats_out[it, S_ENERGY] = energy
        stats_out[it, S_ENERGY_ERROR] = energy_error
        stats_out[it, S_LOGP] = logp
        stats_out[it, S_NAN] = ckpt[NAN_COUNT, 0, 0]  # NaN densities met in this transition
        ckpt[NAN_COUNT, 0, 0] = 0.0

        if it < n_warmup:
            flags = schedule[it]
            if diverging and 0 <= settings.divergence_watch_start <= it and it - last_restart >= SETTLE_ITERATIONS:
                # divergences once the metric and the step have settled: the step is too long
                # for the posterior's curvature somewhere; quarter the distance of the target to 1
                target = min(MAX_RAISED_TARGET, 1.0 - 0.25 * (1.0 - target))
                last_restart = it
                adapt_log[3] += 1
                # dual averaging starts afresh from the current step: its averages over the
                # iterations before would hold the final step near the old target's
                da = dual_averaging_start(step, 1.0)
            if flags & A.ADAPT_STEP:
                da = dual_averaging_update(da, accept_sym if settings.symmetric_accept != 0 else accept, target)
                step = math.exp(da.log_step)
            if flags & A.COLLECT:
                if metric == A.METRIC_DIAG:
                    A.diag_update(diag, x, g)
                elif metric == A.METRIC_DIAG_STAN:
                    A.stan_update(diag, x)
                elif transform is not None:
                    from_transformed_gradient(transform, gq, g)
                    A.window_update(window, x, g)
            if flags & A.UPDATE_METRIC:
                if metric == A.METRIC_DIAG:
                    A.diag_final(diag, inv_mass)
                    momentum_sd(inv_mass, sd)
                elif metric == A.METRIC_DIAG_STAN:
                    A.stan_final(diag, inv_mass)
                    momentum_sd(inv_mass, sd)
                elif transform is not None:
                    draws, grads = A.window_foreground(window)
                    rank = A.fisher_metric(draws, grads, settings.gamma, settings.cutoff, settings.max_rank,
                                           transform.sigma, transform.vecs, transform.sqrt_vals)
                    adapt_log[0] += 1
                    adapt_log[5] = 0
                    if rank < 0:  # unusable (non-finite): the diagonal alone
                        adapt_log[1] += 1
                        adapt_log[5] = 1
                        rank = 0
                    transform.rank[0] = rank
                    # the map changed: the chain's state in its new coordinates (an update
                    # always follows a COLLECT of the same iteration, so g is current)
                    from_position(transform, x, q)
                    to_transformed_gradient(transform, g, gq)
            if flags & A.SWITCH_WINDOW:
                if metric == A.METRIC_DIAG:
                    A.diag_switch(diag)
                elif transform is not None:
                    A.window_switch(window)
            if flags & A.RESET_WINDOW:
                A.stan_reset(diag)
            if flags & A.RESTART_STEP:  # the metric changed: restart the step-size adaptation
                step, k = find_reasonable_step_size(logp_grad, data, q, gq, logp, inv_mass, sd, transform, rng, step,
                                                    vecs[PAIR_Q], vecs[P0], vecs[PAIR_G])
                n_grad += k
                da = dual_averaging_start(step)
                last_restart = it
            if flags & A.FINAL_STEP:
                step = math.exp(da.log_step_avg)
            n_grad_warmup = n_grad
            if 0 <= settings.warmup_grad_cap <= n_grad and it + 1 < n_warmup:
                # warmup has had its share of the budget: end it here, as its last iteration
                # would (the metric from the foreground window, the averaged step), and sample
                if metric == A.METRIC_DIAG and diag.counts[0] >= 3:
                    A.diag_final(diag, inv_mass)
                    momentum_sd(inv_mass, sd)
                if flags & A.ADAPT_STEP:
                    step = math.exp(da.log_step_avg)
                warmup_done = it + 1
                for skipped in range(it + 1, n_warmup):  # the warmup rows not run: the chain stood still
                    draws_out[skipped, :] = x
                    stats_out[skipped, :] = 0.0
                    stats_out[skipped, S_STEP] = step
                    stats_out[skipped, S_LOGP] = logp
                it = n_warmup - 1
        done = it + 1
        control[C_PROGRESS] = done
        control[C_EVALS] = n_grad
        control[C_WARMUP_EVALS] = n_grad_warmup
        it += 1
    adapt_log[2] = warmup_done
    adapt_log[4] = int(round(1e4 * target))
    return done, n_grad, n_grad_warmup, step


@jit(inline=True)
def _floor_log2(n):
    """The largest k with 2^k <= n (n >= 1); -1 for n < 1."""
    k = -1
    while n >= 1:
        n >>= 1
        k += 1
    return k


hamiltonian_chain = target_kernel(
    lambda t: CHAIN_RETURN(t.logp_grad, t.data, VEC, RNG, SETTINGS_TYPE, INDEX, VEC, TRANSFORM_TYPE, MATRIX, MATRIX,
                           INDEX, INDEX),
)(_hamiltonian_chain)
"""The chain under a low-rank or dense metric (``transform`` a ``metric.MetricTransform``)."""

hamiltonian_chain_diag = target_kernel(
    lambda t: CHAIN_RETURN(t.logp_grad, t.data, VEC, RNG, SETTINGS_TYPE, INDEX, VEC, numba.types.none, MATRIX, MATRIX,
                           INDEX, INDEX),
    name="_hamiltonian_chain_diag",
)(_hamiltonian_chain)
"""The chain under a diagonal metric (``transform`` None)."""
