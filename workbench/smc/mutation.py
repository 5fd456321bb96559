"""The mutation step of an SMC sampler: MCMC moves that leave the tempered density invariant.

At temperature b every particle takes ``mcmc_steps`` Metropolis-Hastings moves targeting

    log pi_b(x) = b log p(x) + (1 - b) log p0(x),    grad = b grad log p + (1 - b) grad log p0,

either HMC (``n_leapfrog`` leapfrog steps, the step size jittered by +-``jitter`` per move)
or a Gaussian random walk (one density evaluation per move), both preconditioned by a
covariance: its Cholesky factor ``chol``, or the diagonal ``inv_mass``. The metric and the
step size are set by the caller from the particles before each move: the adaptive SMC
sampler of Buchholz, Chopin and Jacob (2021, "Adaptive tuning of Hamiltonian Monte Carlo
within sequential Monte Carlo", Bayesian Analysis 16(3)), in its simplest form.

One call moves a whole population in one compiled loop without the GIL; the caller keeps
each particle's log p, log p0 and grad log p beside its position, so a move costs only its
own evaluations. A proposal whose density is NaN is rejected and counted.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import types

from ..jit import C_STOP, INDEX, MATRIX, RNG, VEC, jit, kernel_settings, settings_type, target_kernel
from ..mcmc.metric import kinetic_energy, momentum_sd, sample_momentum
from ..numerics import mvn_logp_grad
from ..rng import fill_standard_normal

KERNEL_HMC, KERNEL_RWM = 0, 1
KERNELS = {"hmc": KERNEL_HMC, "rwm": KERNEL_RWM}


class MutationSettings(NamedTuple):
    """What one call of :func:`_mutate` does (built by :func:`mutation_settings`)."""

    kind: int  # KERNEL_HMC or KERNEL_RWM
    n_leapfrog: int  # HMC: leapfrog steps per move
    mcmc_steps: int  # moves per particle
    step: float  # the step size (HMC) or random-walk scale, times the particles' sds
    jitter: float  # the step varies uniformly by +-jitter (a fraction) per move


def mutation_settings(**values) -> MutationSettings:
    """:class:`MutationSettings` cast to the kernel's one type (``jit.kernel_settings``)."""
    return kernel_settings(MutationSettings, **values)


# what it counts (added to the caller's int64 array)
C_PROPOSALS, C_NAN, C_GRADS = range(3)


@jit(inline=True)
def tempered(beta, lp, lp0):
    """b log p + (1 - b) log p0, with 0 x (-inf) read as 0 at the ends of the ladder."""
    if beta == 0.0:
        return lp0
    if beta == 1.0:
        return lp
    return beta * lp + (1.0 - beta) * lp0


@jit(nrt=False)
def _lower_times(chol, v, out):
    """out = L v for lower-triangular L."""
    for j in range(v.size):
        s = 0.0
        for k in range(j + 1):
            s += chol[j, k] * v[k]
        out[j] = s


@jit(nrt=False)
def _lower_transpose_times(chol, v, out):
    """out = L^T v for lower-triangular L."""
    n = v.size
    for k in range(n):
        s = 0.0
        for j in range(k, n):
            s += chol[j, k] * v[j]
        out[k] = s


@jit(nrt=False)
def tempered_logp_grad(logp_grad, data, q, g_target, g, beta, ref_mean, ref_precision, ref_log_norm):
    """(log p(q), log p0(q)); the target's gradient into ``g_target`` and the tempered one into ``g``."""
    lp = logp_grad(q, g_target, data)
    lp0 = mvn_logp_grad(q, g, ref_mean, ref_precision, ref_log_norm)
    for k in range(q.size):
        g[k] = beta * g_target[k] + (1.0 - beta) * g[k]
    return lp, lp0


def _mutate(logp_grad, data, x, grads, lp, lp0, log_w, rng, beta, ref_mean, ref_precision, ref_log_norm,
            inv_mass, chol, settings, control, counts):
    """Move every live particle (finite log weight) ``mcmc_steps`` times at temperature ``beta``.

    The moves are preconditioned by the particles' covariance: ``chol`` its lower Cholesky
    factor L (d, d), or, when it is not (d, d), the diagonal ``inv_mass`` (the particles'
    variances). HMC then has the mass matrix Sigma^-1 and runs in whitened momentum
    v = L^T p ~ N(0, I): v += eps/2 L^T grad, q += eps L v (the same leapfrog, O(d^2) a step);
    the random walk proposes q + eps L z.

    ``x`` (n, d), ``grads`` (n, d) = grad log p, ``lp`` and ``lp0`` (n,) are updated in place
    for the accepted moves. Returns the sum of the moves' acceptance probabilities
    min(1, pi_b(x') / pi_b(x)) (what the caller adapts the step size to); ``counts`` gets the
    proposals, the NaN densities met and the gradient evaluations made.
    """
    n, d = x.shape
    kind = settings.kind
    n_leapfrog = settings.n_leapfrog
    mcmc_steps = settings.mcmc_steps
    step = settings.step
    jitter = settings.jitter
    q = np.empty(d)
    p = np.empty(d)
    g = np.empty(d)
    g_target = np.empty(d)
    sd = np.empty(d)  # the momentum's sds 1 / sqrt(inv_mass); the random walk's are their inverses
    momentum_sd(inv_mass, sd)
    dense = chol.shape[0] == d and d > 0
    w = np.empty(d)  # dense: L^T g, or L z
    accept_sum = 0.0
    n_proposals = 0
    n_nan = 0
    n_grad = 0
    for i in range(n):
        if control[C_STOP] != 0:
            break
        if not log_w[i] > -math.inf:  # a dead particle: resampling will replace it
            continue
        for _ in range(mcmc_steps):
            current = tempered(beta, lp[i], lp0[i])
            eps = step
            if jitter > 0.0:
                eps = step * (1.0 + jitter * (2.0 * rng.random() - 1.0))
            for k in range(d):
                q[k] = x[i, k]
            new_lp = math.nan
            new_lp0 = math.nan
            if kind == KERNEL_HMC:
                mvn_logp_grad(q, g, ref_mean, ref_precision, ref_log_norm)
                for k in range(d):
                    g[k] = beta * grads[i, k] + (1.0 - beta) * g[k]
                if dense:
                    fill_standard_normal(rng, p)  # p holds the whitened momentum v
                    kinetic = 0.0
                    for k in range(d):
                        kinetic += 0.5 * p[k] * p[k]
                else:
                    kinetic = sample_momentum(rng, sd, p)
                log_ratio = -math.inf
                finite = True
                for _s in range(n_leapfrog):
                    if dense:
                        _lower_transpose_times(chol, g, w)
                        for k in range(d):
                            p[k] += 0.5 * eps * w[k]
                        _lower_times(chol, p, w)
                        for k in range(d):
                            q[k] += eps * w[k]
                    else:
                        for k in range(d):
                            p[k] += 0.5 * eps * g[k]
                            q[k] += eps * inv_mass[k] * p[k]
                    new_lp, new_lp0 = tempered_logp_grad(logp_grad, data, q, g_target, g, beta,
                                                         ref_mean, ref_precision, ref_log_norm)
                    n_grad += 1
                    if not math.isfinite(tempered(beta, new_lp, new_lp0)):
                        finite = False
                        break
                    if dense:
                        _lower_transpose_times(chol, g, w)
                        for k in range(d):
                            p[k] += 0.5 * eps * w[k]
                    else:
                        for k in range(d):
                            p[k] += 0.5 * eps * g[k]
                if finite:
                    if dense:
                        new_kinetic = 0.0
                        for k in range(d):
                            new_kinetic += 0.5 * p[k] * p[k]
                    else:
                        new_kinetic = kinetic_energy(p, inv_mass)
                    log_ratio = (tempered(beta, new_lp, new_lp0) - new_kinetic) - (current - kinetic)
            else:
                fill_standard_normal(rng, p)
                if dense:
                    _lower_times(chol, p, w)
                    for k in range(d):
                        q[k] += eps * w[k]
                else:
                    for k in range(d):
                        q[k] += eps * p[k] / sd[k]
                new_lp, new_lp0 = tempered_logp_grad(logp_grad, data, q, g_target, g, beta,
                                                     ref_mean, ref_precision, ref_log_norm)
                n_grad += 1
                log_ratio = tempered(beta, new_lp, new_lp0) - current
            n_proposals += 1
            if new_lp != new_lp:
                n_nan += 1
            if log_ratio != log_ratio:
                log_ratio = -math.inf
            if log_ratio >= 0.0:
                accept_prob = 1.0
            else:
                accept_prob = math.exp(log_ratio)
            accept_sum += accept_prob
            if rng.random() < accept_prob:
                for k in range(d):
                    x[i, k] = q[k]
                    grads[i, k] = g_target[k]
                lp[i] = new_lp
                lp0[i] = new_lp0
    counts[C_PROPOSALS] += n_proposals
    counts[C_NAN] += n_nan
    counts[C_GRADS] += n_grad
    return accept_sum


mutate = target_kernel(
    lambda t: types.float64(t.logp_grad, t.data, MATRIX, MATRIX, VEC, VEC, VEC, RNG, types.float64, VEC,
                            MATRIX, types.float64, VEC, MATRIX, settings_type(MutationSettings), INDEX, INDEX),
)(_mutate)


def _evaluate(logp_grad, data, x, grads, lp, control):
    """log p and its gradient at every particle (rows of x), into ``lp`` and ``grads``; stops
    early when ``control[C_STOP]`` is set (Ctrl-C). Returns the particles evaluated."""
    for i in range(x.shape[0]):
        if control[C_STOP] != 0:
            return i
        lp[i] = logp_grad(x[i], grads[i], data)
    return x.shape[0]


evaluate = target_kernel(
    lambda t: types.int64(t.logp_grad, t.data, MATRIX, MATRIX, VEC, INDEX),
)(_evaluate)


# -- how the particles are moved: the halves, the metric from the particles, what the moves left


def split_halves(n: int) -> tuple[tuple[slice, slice], tuple[slice, slice]]:
    """(moving, other) slices of the particles: each half moves with a metric estimated from the other.

    Why: a metric estimated from the particles that it moves is not a fixed kernel for any of
    them. Each particle's own position enters the covariance it is moved with, which stretches
    the moves along where it already is. The population then settles too wide, by about d^2 / n
    in E[x^T Sigma^-1 x]. Measured on the 0.8-correlated 50-d Gaussian with 2,000 particles:
    51.4 instead of 50 after 40 moves re-estimated before each. That bias adds up over the
    tempering ladder: log Z came out -4.5 too low over 97 stages. Given the other half, the
    kernel is fixed, so a population of i.i.d. draws of pi_b stays one (Gibbs over the halves).
    """
    h = n // 2
    return (slice(0, h), slice(h, n)), (slice(h, n), slice(0, h))


# The particles' weighted moments and the Cholesky factor below are compiled loops, not BLAS
# and LAPACK: those sum in an order of their own for each CPU type (OpenBLAS picks its kernels at
# load), and the adaptive ladder turns a last-bit difference into other draws. With ``w @ x`` and
# ``np.linalg.cholesky`` the same seed drew other particles under OpenBLAS's Haswell kernels (an
# AMD EPYC) than under its SkylakeX ones (an Intel Xeon); with these it draws the same.


@jit
def weighted_mean(x, w):
    """sum_n w_n x_n, row by row: (n, d) -> (d,)."""
    out = np.zeros(x.shape[1])
    for n in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[k] += w[n] * x[n, k]
    return out


@jit
def weighted_covariance(centred, w):
    """sum_n w_n c_n c_n^T of centred rows: (n, d) -> (d, d)."""
    d = centred.shape[1]
    out = np.zeros((d, d))
    for n in range(centred.shape[0]):
        for i in range(d):
            wc = w[n] * centred[n, i]
            for j in range(i + 1):
                out[i, j] += wc * centred[n, j]
    for i in range(d):
        for j in range(i):
            out[j, i] = out[i, j]
    return out


@jit
def lower_cholesky(a):
    """(L, ok): the lower Cholesky factor of the symmetric ``a``, column by column; ok is False
    where ``a`` is not numerically positive definite. The LGCP density's ``cholesky_in_place``
    (``targets/latent.py``) is the same loop compiled with fastmath for speed: reassociation
    follows the CPU's vector width, which is what this one must not depend on."""
    d = a.shape[0]
    low = np.zeros((d, d))
    for j in range(d):
        s = a[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        if not (s > 0.0 and math.isfinite(s)):
            return low, False
        low[j, j] = math.sqrt(s)
        for i in range(j + 1, d):
            s = a[i, j]
            for k in range(j):
                s -= low[i, k] * low[j, k]
            low[i, j] = s / low[j, j]
    return low, True


def _normalised(log_w: np.ndarray) -> np.ndarray:
    w = np.exp(log_w - np.max(log_w))
    return w / w.sum()


def stage_correlation(start: np.ndarray, now: np.ndarray, log_w: np.ndarray) -> float:
    """The weighted correlation between the particles' positions at the start of a stage's moves
    and now, averaged over the coordinates: how much of where they started they still remember."""
    w = _normalised(log_w)
    a = start - weighted_mean(start, w)
    b = now - weighted_mean(now, w)
    cov = weighted_mean(a * b, w)
    sd = np.sqrt(weighted_mean(a * a, w) * weighted_mean(b * b, w))
    ok = sd > 0
    return float(np.mean(np.abs(cov[ok] / sd[ok]))) if np.any(ok) else 0.0


def particle_metric(x: np.ndarray, log_w: np.ndarray, previous: np.ndarray,
                     dense: bool) -> tuple[np.ndarray, np.ndarray]:
    """(inv_mass, chol) for the mutation kernel from the weighted particles ``x``: their variances,
    and with ``dense`` the lower Cholesky factor of their covariance (else a (1, 1) stand-in,
    which the kernel reads as "diagonal"). Where the particles have collapsed onto one value
    (variance 0 or not finite) the previous variances are kept, and a covariance that is not
    positive definite falls back to the diagonal."""
    w = _normalised(log_w)
    centred = np.ascontiguousarray(x - weighted_mean(x, w))
    var = weighted_mean(centred**2, w)
    good = np.isfinite(var) & (var > 0)
    inv_mass = np.ascontiguousarray(np.where(good, var, previous))
    if dense and np.all(good):
        chol, ok = lower_cholesky(weighted_covariance(centred, w))
        if ok:
            return inv_mass, chol
    return inv_mass, DIAGONAL_METRIC


DIAGONAL_METRIC = np.zeros((1, 1))
