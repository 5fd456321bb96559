"""Chain kernels of the microcanonical samplers: MCLMC (unadjusted) and MAMS (Metropolis
adjusted), on the isokinetic dynamics of ``isokinetic.py``.

One kernel call runs ``n_steps`` transitions with fixed (or self-tuning) settings and returns;
the methods (``methods/microcanonical.py``) chain calls into the tuning schedule of the
papers, so each stage is a plain loop and the state (position, velocity, the tuner's numbers,
the variance sums) carries over in arrays between calls.

- MCLMC (Robnik, De Luca, Silverstein and Seljak 2023, Algorithm 1 with the partial refresh
  of sec. 3.2): a transition is one integrator step then a partial velocity refresh; every
  step is a draw; no accept/reject, so its bias shrinks with the energy error per dimension,
  which the step-size tuner holds at ``desired_energy_var`` (Var[E] / d = 5e-4; the tuner is
  BlackJAX's ``mclmc_adaptation.predictor``: Var[E] ~ eps^6, a weighted running estimate).
- MAMS (Robnik, Cohn-Gordon and Seljak 2025, Algorithm 1): a transition draws a fresh
  velocity on the sphere, integrates ``n`` steps, n = 1 + floor(U s) with s chosen so that
  E[n] = L / eps (``steps_scale``, BlackJAX's ``adjusted_mclmc.rescale``: about uniform on
  {1, ..., 2 L / eps - 1}), and accepts with probability min(1, e^-dE), dE the energy error
  including the kinetic change; the step size adapts by dual averaging toward an acceptance of 0.9.

Both work in the preconditioned coordinates y = x / sigma (``sigma`` a diagonal
preconditioner) and never spend past ``grad_budget``.
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
    INDEX,
    MATRIX,
    RNG,
    VEC,
    jit,
    kernel_settings,
    settings_type,
    target_kernel,
)
from .adaptation import welford_add
from .isokinetic import LEAPFROG, N_WORK, isokinetic_step, partial_refresh, random_unit_vector
from .step_size import DualAveraging, dual_averaging_update

TUNE_NONE, TUNE_ENERGY_VARIANCE, TUNE_DUAL_AVERAGING = 0, 1, 2
# the tuner's numbers, carried between calls in one float array
# energy variance (MCLMC): (weight sum, weighted xi / eps^6 sum, largest step that stayed finite)
EV_TIME, EV_AVERAGE, EV_STEP_MAX = 0, 1, 2
# dual averaging (MAMS): step_size.DualAveraging's five numbers
N_TUNE = 5
# per-transition statistics (columns of stats_out)
STAT_NAMES = ("accept_prob", "energy_change", "step_size", "n_steps", "diverging", "logp")
S_ACCEPT, S_ENERGY, S_STEP, S_N_STEPS, S_DIVERGING, S_LOGP = range(6)
# the energy-variance tuner (BlackJAX's defaults): memory of about 150 transitions, and how
# far (in log xi / 6) a transition's estimate may lie from the target before it is discounted
EV_DECAY = (150.0 - 1.0) / (150.0 + 1.0)
EV_TRUST = 1.5
NAN_STEP_FACTOR = 0.8  # a non-finite step: the step size shrinks by this much


class MicrocanonicalSettings(NamedTuple):
    """What one call of :func:`_microcanonical_chain` does (built by :func:`microcanonical_settings`)."""

    n_steps: int  # transitions to run
    adjusted: int  # 1: MAMS (Metropolis test, full refresh); 0: MCLMC
    integrator: int  # isokinetic.LEAPFROG or MINIMAL_NORM
    tune: int  # TUNE_NONE, TUNE_ENERGY_VARIANCE (MCLMC) or TUNE_DUAL_AVERAGING (MAMS)
    collect: int  # 1: add each transition's x and grad log p(x) to the Welford sums
    thin: int  # keep every thin-th transition in draws_out
    grad_budget: int  # gradients this call may spend; -1: none
    progress_offset: int  # transitions of earlier calls (for control[C_PROGRESS])
    grads_offset: int  # gradients of earlier calls (for control[C_EVALS])
    warmup: int  # 1: this call is tuning (its gradients count as warmup's)
    step_size: float
    big_l: float  # MCLMC: the velocity's decoherence length; MAMS: the mean trajectory length
    l_over_eps: float  # MAMS, > 0: L follows the step size as l_over_eps x eps (the first tuning stage)
    target_accept: float  # MAMS's dual averaging target
    desired_energy_var: float  # MCLMC's Var[E] / d


def microcanonical_settings(**values) -> MicrocanonicalSettings:
    """:class:`MicrocanonicalSettings` cast to the kernel's one type (``jit.kernel_settings``)."""
    return kernel_settings(MicrocanonicalSettings, **values)


@jit(nrt=False)
def steps_scale(mean_steps):
    """The s for which n = 1 + floor(U s), U ~ U(0, 1), has E[n] = ``mean_steps`` (BlackJAX's
    ``adjusted_mclmc.rescale``, the authors' code): with k = floor(2 mu - 1), n is uniform on
    {1, ..., k} with a share x / s on k + 1, x = k (mu - (k + 1) / 2) / (k + 1 - mu). A mean
    of at most one step gives s = 0 (n = 1). The MAMS paper's n uniform on {1, ..., 2 L / eps}
    has mean L / eps + 1/2: where L / eps is near 1 that is half as many gradients again."""
    k = math.floor(2.0 * mean_steps - 1.0)
    if k <= 0.0:
        return 0.0
    return k + k * (mean_steps - 0.5 * (k + 1.0)) / (k + 1.0 - mean_steps)


def _microcanonical_chain(logp_grad, data, x, u, sigma, rng, settings, tune_state, welford, draws_out, stats_out,
                          control):
    """Run ``settings.n_steps`` transitions from (x, u), both updated in place. Returns
    (transitions done, gradients spent, the step size at the end)."""
    d = x.size
    work = np.empty((N_WORK, d))
    x_old = np.empty(d)
    u_old = np.empty(d)
    gy = np.empty(d)
    gy_old = np.empty(d)
    g_x = work[1]
    lp = logp_grad(x, g_x, data)
    for i in range(d):
        gy[i] = sigma[i] * g_x[i]
    n_grad = 1
    eps = settings.step_size
    per_step = 1 if settings.integrator == LEAPFROG else 2
    done = 0
    da = DualAveraging(tune_state[0], tune_state[1], tune_state[2], tune_state[3], tune_state[4])
    for it in range(settings.n_steps):
        if control[C_STOP] != 0:
            break
        remaining = settings.grad_budget - n_grad
        if settings.grad_budget >= 0 and remaining < per_step:
            break
        for i in range(d):
            x_old[i] = x[i]
            u_old[i] = u[i]
            gy_old[i] = gy[i]
        lp_old = lp
        accept = 1.0
        diverging = 0.0
        if settings.adjusted != 0:
            random_unit_vector(rng, u)
            big_l = settings.l_over_eps * eps if settings.l_over_eps > 0.0 else settings.big_l
            n_int = 1 + math.floor(rng.random() * steps_scale(big_l / eps))
            n_int = max(1, min(n_int, 100_000))
            if settings.grad_budget >= 0:
                n_int = min(n_int, remaining // per_step)
            kinetic = 0.0
            steps_done = 0
            for _ in range(n_int):
                lp, dk, ng = isokinetic_step(logp_grad, data, settings.integrator, x, u, gy, sigma, eps, work)
                kinetic += dk
                n_grad += ng
                steps_done += 1
                if not math.isfinite(lp):
                    break
            energy = kinetic - (lp - lp_old)
            if math.isfinite(lp) and math.isfinite(energy):
                accept = 1.0 if energy <= 0.0 else math.exp(-energy)
            else:
                accept = 0.0
                diverging = 1.0
            if rng.random() >= accept:  # rejected: back to the start (the velocity is redrawn anyway)
                for i in range(d):
                    x[i] = x_old[i]
                    gy[i] = gy_old[i]
                lp = lp_old
            if settings.tune == TUNE_DUAL_AVERAGING:
                # no cap at L (BlackJAX's is L / 1.1): a step past L makes one-step transitions
                # (n = 1), still exact, and the acceptance target bounds it
                da = dual_averaging_update(da, accept, settings.target_accept)
                eps = math.exp(da.log_step)
        else:
            lp, kinetic, ng = isokinetic_step(logp_grad, data, settings.integrator, x, u, gy, sigma, eps, work)
            n_grad += ng
            steps_done = 1
            energy = kinetic - (lp - lp_old)
            if not (math.isfinite(lp) and math.isfinite(energy)):
                # a step into NaN or -inf: undone, and the step size shrinks (BlackJAX's handle_nans)
                for i in range(d):
                    x[i] = x_old[i]
                    u[i] = u_old[i]
                    gy[i] = gy_old[i]
                lp = lp_old
                energy = 0.0
                diverging = 1.0
                tune_state[EV_STEP_MAX] = NAN_STEP_FACTOR * eps
                eps = min(eps, tune_state[EV_STEP_MAX])
            elif settings.tune == TUNE_ENERGY_VARIANCE:
                xi = energy * energy / (d * settings.desired_energy_var) + 1e-8
                w = math.exp(-0.5 * (math.log(xi) / (6.0 * EV_TRUST)) ** 2)
                tune_state[EV_AVERAGE] = EV_DECAY * tune_state[EV_AVERAGE] + w * xi / eps ** 6
                tune_state[EV_TIME] = EV_DECAY * tune_state[EV_TIME] + w
                eps = min((tune_state[EV_AVERAGE] / tune_state[EV_TIME]) ** (-1.0 / 6.0), tune_state[EV_STEP_MAX])
            partial_refresh(rng, u, eps, settings.big_l)
        if settings.collect != 0:  # x and its gradient in x (gy / sigma), for the Fisher diagonal
            n_seen = int(welford[4, 0])
            welford_add(welford[0], welford[1], n_seen, x)
            for i in range(d):
                g_x[i] = gy[i] / sigma[i]
            welford[4, 0] = welford_add(welford[2], welford[3], n_seen, g_x)
        row = it // settings.thin
        if it % settings.thin == settings.thin - 1 and row < draws_out.shape[0]:
            draws_out[row, :] = x
            stats_out[row, S_ACCEPT] = accept
            stats_out[row, S_ENERGY] = energy
            stats_out[row, S_STEP] = eps
            stats_out[row, S_N_STEPS] = steps_done * per_step
            stats_out[row, S_DIVERGING] = diverging
            stats_out[row, S_LOGP] = lp
        done = it + 1
        control[C_PROGRESS] = settings.progress_offset + done // settings.thin
        control[C_EVALS] = settings.grads_offset + n_grad
        if settings.warmup != 0:
            control[C_WARMUP_EVALS] = settings.grads_offset + n_grad
    if settings.tune == TUNE_DUAL_AVERAGING:
        tune_state[0] = da.log_step
        tune_state[1] = da.log_step_avg
        tune_state[2] = da.error_avg
        tune_state[3] = da.mu
        tune_state[4] = da.count
    return done, n_grad, eps


MICROCANONICAL_RETURN = types.Tuple((types.int64, types.int64, types.float64))

microcanonical_chain = target_kernel(
    lambda t: MICROCANONICAL_RETURN(t.logp_grad, t.data, VEC, VEC, VEC, RNG, settings_type(MicrocanonicalSettings),
                                    VEC, MATRIX, MATRIX, MATRIX, INDEX),
)(_microcanonical_chain)
