"""Warmup adaptation of HMC and NUTS: the schedule, and the metric estimators.

**The schedule** is built in plain Python before a chain starts (:func:`warmup_schedule`):
one integer of bit flags per warmup iteration saying what happens after that transition,
in this order: the step size's dual-averaging update (``ADAPT_STEP``); the draw and its
gradient join the metric estimator's windows (``COLLECT``); the metric is re-estimated
(``UPDATE_METRIC``); the background window replaces the foreground (``SWITCH_WINDOW``) or
the window is emptied (``RESET_WINDOW``); the step-size search restarts (``RESTART_STEP``:
a new reasonable step and dual averaging from it, as Stan does after each metric window);
and at the last warmup iteration the step becomes the dual-averaging average
(``FINAL_STEP``). The kernel (``chains.py``) only reads the flags.

**The windowed schedule's choices** ("diag", "low_rank", "dense"), each measured against
nutpie 0.16 on the same densities (``benchmarks/mcmc_speed.py --nutpie``; median of 5 seeds, min
bulk ESS per 1,000 gradients, warmup included):

- the lengths and windows are nutpie's (nuts-rs ``adapt_strategy.rs``: 30% early, switches
  every 10 then 80 draws, the last 15% for the step size alone) and NUTS's default warmup is
  its 400 iterations: at Stan's 1,000 the extra 600 cost about 10% of a run's gradients and
  bought nothing measurable on the Gaussians and regressions of the benchmark;
- dual averaging runs once through the whole warmup (nutpie's): restarting it for the
  step-only phase left its average over the last 60 iterations only, a realised acceptance of
  0.86 for a target of 0.8 and 30% less ESS per gradient on the 100-d Gaussian (84 against
  123). The low-rank and dense metrics restart it once, with a new step-size search, at their
  first estimate (nutpie re-initialises its step there too): that estimate, from three draws,
  replaces the identity, and the step dual averaging had reached under the identity was 100x
  too short for it (the diabetes regression: trees of 1,023 steps for 10 iterations, 60% of
  warmup's gradients; ``NUTS(metric="low_rank")`` 98 against 146 ESS per 1,000 gradients).
  Under the diagonal metric, which starts at the gradient's scales, no restart is needed;
- the diagonal is re-estimated after every draw, as nutpie's (every 10th late in warmup cost
  4-10% of ESS per gradient on corr10 and the logistic regression);
- a "diag" chain starts from 1 / |grad log p(x0)|, nutpie's start, not from the identity
  (``gradient_start``), so the first step-size search already sees the target's scales.

**The metrics** (``METRICS``):

- ``"diag"``: sigma_i^2 = sqrt(Var(x_i) / Var(grad_i)), the diagonal minimising the Fisher
  divergence for a Gaussian (Seyboldt, Carlson & Carpenter 2026, "Preconditioning Hamiltonian
  Monte Carlo by minimizing Fisher divergence"; nutpie's default). It needs a few draws only
  and does not need the chain to have forgotten its start, so it is refreshed at every early
  warmup iteration from a *foreground* window while a *background* window fills; every
  ``switch`` draws the background replaces the foreground (10 draws during the first 30% of
  warmup, 80 after), so transient draws are forgotten. The last 15% of warmup adapts the
  step size only.
- ``"diag_stan"``: Stan's windows (Stan reference manual, "HMC algorithm parameters"): a fast
  buffer of 75 iterations, slow windows doubling from 25, a terminal buffer of 50; at the end
  of each window the variances of its draws, shrunk as n/(n+5) var + 1e-3 5/(n+5).
- ``"low_rank"``: the paper's diagonal-plus-low-rank metric, on the same windows as
  ``"diag"``. From the foreground's draws x and gradients g: the diagonal sigma as above;
  then in the rescaled coordinates (x - mean) / sigma and (g - mean) sigma, the subspace
  spanned by the draws and the gradients, the two covariances projected onto it (plus
  ``gamma`` I), and their SPD geometric mean Sigma (the solution of Sigma C_g Sigma = C_x,
  which is the covariance for a Gaussian). Eigen-directions of Sigma with eigenvalue above
  ``cutoff`` or below 1 / ``cutoff`` (2 and 1e-5 for gamma, the paper's and nutpie's
  defaults) correct the diagonal, at most ``max_rank`` of them, largest |log lambda| first.
- ``"dense"``: the same estimator keeping every eigen-direction (no cutoff, no rank limit):
  the full Fisher-divergence metric, regularised by ``gamma``, once the window holds about
  d / 2 draws or more.
- ``"identity"``: no metric adaptation.

Each estimator is a small state (NamedTuple of arrays) with ``init`` / ``update`` /
``switch`` / ``final`` functions, callable from Python to test them without a chain. The
per-iteration ones allocate nothing and are compiled without NRT (``jit.NO_NRT``): with it,
every row view of a state costs reference-count operations, measured as a 25% higher
overhead of a whole NUTS run on the cheapest target.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ..jit import jit

# --------------------------------------------------------------------------- the schedule

ADAPT_STEP = 1
COLLECT = 2
UPDATE_METRIC = 4
SWITCH_WINDOW = 8
RESET_WINDOW = 16
RESTART_STEP = 32
FINAL_STEP = 128

METRIC_IDENTITY, METRIC_DIAG, METRIC_DIAG_STAN, METRIC_LOW_RANK, METRIC_DENSE = range(5)
METRICS = {"diag": METRIC_DIAG, "diag_stan": METRIC_DIAG_STAN, "low_rank": METRIC_LOW_RANK,
           "dense": METRIC_DENSE, "identity": METRIC_IDENTITY}
"""The metric names of ``NUTS(metric=...)`` and ``HMC(metric=...)``."""

# the windowed schemes' schedule, as fractions of warmup (after nutpie's defaults)
EARLY_FRACTION = 0.3
STEP_ONLY_FRACTION = 0.15
SWITCH_EARLY = 10
SWITCH_LATE = 80


class WarmupSchedule(NamedTuple):
    """What a chain does after each warmup transition (``flags``, one int per iteration) and
    how many draws its largest metric window holds (``window_capacity``)."""

    flags: np.ndarray
    window_capacity: int


def stan_windows(n_warmup: int, init_buffer: int = 75, term_buffer: int = 50, base_window: int = 25):
    """(first slow iteration, end iterations of the slow windows) for Stan's schedule.

    As in Stan: when the default buffers do not fit, they shrink to 15% / 10% of warmup; each
    window doubles, and a window that would leave less than twice its successor before the
    terminal buffer is stretched to the terminal buffer. ``ends`` are exclusive indices.
    """
    if n_warmup < 20:
        return n_warmup, np.zeros(0, dtype=np.int64)
    if init_buffer + base_window + term_buffer > n_warmup:
        init_buffer = int(0.15 * n_warmup)
        term_buffer = int(0.1 * n_warmup)
        base_window = n_warmup - init_buffer - term_buffer
    adapt_end = n_warmup - term_buffer
    ends = []
    start, size = init_buffer, base_window
    while start < adapt_end:
        end = start + size
        if end + 2 * size > adapt_end:
            end = adapt_end
        ends.append(end)
        start, size = end, 2 * size
    return init_buffer, np.array(ends, dtype=np.int64)


@functools.lru_cache(maxsize=64)
def warmup_schedule(n_warmup: int, metric: int, adapt_step: bool = True) -> WarmupSchedule:
    """The flags of every warmup iteration for ``metric`` (a ``METRICS`` value).

    Cached, and shared by every run with the same arguments (kernels only read it; do not
    write to it): building it is a Python loop over warmup, 1.5 ms at 2,000 iterations, as
    long as a whole NUTS run on a cheap target.
    """
    flags = np.zeros(n_warmup, dtype=np.int64)
    if n_warmup == 0:
        return WarmupSchedule(flags, 0)
    if adapt_step:
        flags |= ADAPT_STEP
        flags[-1] |= FINAL_STEP
    capacity = 0
    if metric == METRIC_DIAG_STAN:
        start, ends = stan_windows(n_warmup)
        window_start = start
        for end in ends:
            flags[window_start:end] |= COLLECT
            flags[end - 1] |= UPDATE_METRIC | RESET_WINDOW | (RESTART_STEP if adapt_step else 0)
            capacity = max(capacity, int(end - window_start))
            window_start = end
    elif metric in (METRIC_DIAG, METRIC_LOW_RANK, METRIC_DENSE):
        mass_end = int(round((1.0 - STEP_ONLY_FRACTION) * n_warmup))
        early_end = int(round(EARLY_FRACTION * n_warmup))
        n_fore = n_back = 0
        first_update_done = False
        for it in range(mass_end):
            flags[it] |= COLLECT
            n_fore += 1
            n_back += 1
            capacity = max(capacity, n_fore)
            early = it < early_end
            switch = n_back >= (SWITCH_EARLY if early else SWITCH_LATE)
            if metric == METRIC_DIAG:  # O(d) per update: after every draw, as nutpie
                update = True
            else:  # an eigen-decomposition costs O(d^2 n): every draw of the first window, then once per window
                update = it < SWITCH_EARLY or switch
            if n_fore >= 3 and (update or it + 1 == mass_end):
                flags[it] |= UPDATE_METRIC
                if metric != METRIC_DIAG and adapt_step and not first_update_done:
                    flags[it] |= RESTART_STEP  # the first estimate replaces the identity (above)
                first_update_done = True
            if switch:
                flags[it] |= SWITCH_WINDOW
                n_fore, n_back = n_back, 0
    return WarmupSchedule(flags, capacity)


# --------------------------------------------------------------------------- Welford sums

@jit(nrt=False)
def welford_add(mean, m2, count, x):
    """Adds x to the running (mean, m2) of ``count`` values; returns the new count."""
    count += 1
    weight = 1.0 / count  # one division, not one per coordinate
    for i in range(x.size):
        delta = x[i] - mean[i]
        mean[i] += delta * weight
        m2[i] += delta * (x[i] - mean[i])
    return count


@jit(nrt=False)
def welford_reset(mean, m2):
    for i in range(mean.size):
        mean[i] = 0.0
        m2[i] = 0.0


@jit(nrt=False)
def stan_regularised_variance(m2, count, out):
    """Stan's shrinkage of the window variance toward 1e-3 (with weight 5 / (n + 5))."""
    n = float(count)
    for i in range(m2.size):
        var = m2[i] / (n - 1.0)
        out[i] = (n / (n + 5.0)) * var + 1e-3 * (5.0 / (n + 5.0))


@jit(nrt=False)
def gradient_based_variance(m2_x, m2_g, out):
    """inv_mass_i = sqrt(Var(x_i) / Var(grad_i)), clipped to [1e-10, 1e10]; counts cancel.
    Coordinates where either variance is zero (or NaN) keep their value."""
    for i in range(out.size):  # branch-free, so the loop vectorises
        v = min(max(math.sqrt(m2_x[i] / m2_g[i]), 1e-10), 1e10)
        out[i] = v if (m2_g[i] > 0.0) & (m2_x[i] > 0.0) else out[i]


# --------------------------------------------------------------------------- diagonal estimators

class DiagState(NamedTuple):
    """Welford sums of draws and gradients: rows 0-3 the foreground window (mean x, m2 x,
    mean g, m2 g), rows 4-7 the background; ``counts`` = (foreground, background) sizes."""

    sums: np.ndarray  # (8, d)
    counts: np.ndarray  # int64 (2,)


@jit
def diag_init(dim):
    """Empty windows for the "diag" estimator; Stan's uses rows 0-1 and the first count."""
    return DiagState(np.zeros((8, dim)), np.zeros(2, dtype=np.int64))


@jit(nrt=False)
def diag_update(state, x, g):
    """Adds one draw and its gradient to both windows (the draws' counts drive Welford)."""
    s = state.sums
    n_fore = state.counts[0]
    n_back = state.counts[1]
    state.counts[0] = welford_add(s[0], s[1], n_fore, x)
    welford_add(s[2], s[3], n_fore, g)
    state.counts[1] = welford_add(s[4], s[5], n_back, x)
    welford_add(s[6], s[7], n_back, g)


@jit
def diag_switch(state):
    """The background window becomes the foreground; a new background starts empty."""
    s = state.sums
    for r in range(4):
        s[r, :] = s[r + 4, :]
        s[r + 4, :] = 0.0
    state.counts[0] = state.counts[1]
    state.counts[1] = 0


@jit(nrt=False)
def diag_final(state, inv_mass):
    """inv_mass from the foreground window (:func:`gradient_based_variance`)."""
    gradient_based_variance(state.sums[1], state.sums[3], inv_mass)


@jit(nrt=False)
def gradient_start(g, inv_mass):
    """inv_mass_i = 1 / |grad_i| at the start (clipped to [1e-10, 1e10]; 1 where the gradient is
    0 or not finite): the scale a Gaussian coordinate with that gradient would have."""
    for i in range(g.size):
        a = abs(g[i])
        inv_mass[i] = min(max(1.0 / a, 1e-10), 1e10) if (a > 0.0) & (a < math.inf) else 1.0


@jit(nrt=False)
def stan_update(state, x):
    state.counts[0] = welford_add(state.sums[0], state.sums[1], state.counts[0], x)


@jit(nrt=False)
def stan_reset(state):
    welford_reset(state.sums[0], state.sums[1])
    state.counts[0] = 0


@jit(nrt=False)
def stan_final(state, inv_mass):
    stan_regularised_variance(state.sums[1], state.counts[0], inv_mass)


# --------------------------------------------------------------------------- low-rank and dense

class WindowState(NamedTuple):
    """The draws and gradients of the foreground and background windows, in a ring buffer of
    ``capacity`` rows: ``marks`` = (total added, first of the foreground, first of the
    background), as running counts (row = count % capacity)."""

    draws: np.ndarray  # (capacity, d)
    grads: np.ndarray  # (capacity, d)
    marks: np.ndarray  # int64 (3,)


@jit
def window_init(dim, capacity):
    return WindowState(np.zeros((max(capacity, 1), dim)), np.zeros((max(capacity, 1), dim)),
                       np.zeros(3, dtype=np.int64))


@jit
def window_update(state, x, g):
    row = state.marks[0] % state.draws.shape[0]
    state.draws[row, :] = x
    state.grads[row, :] = g
    state.marks[0] += 1


@jit(nrt=False)
def window_switch(state):
    state.marks[1] = state.marks[2]
    state.marks[2] = state.marks[0]


@jit
def window_foreground(state):
    """(draws, gradients) of the foreground window, oldest first, as new (n, d) arrays."""
    cap = state.draws.shape[0]
    start = max(state.marks[1], state.marks[0] - cap)
    n = state.marks[0] - start
    d = state.draws.shape[1]
    x = np.empty((n, d))
    g = np.empty((n, d))
    for r in range(n):
        row = (start + r) % cap
        x[r, :] = state.draws[row, :]
        g[r, :] = state.grads[row, :]
    return x, g


@jit
def spd_geometric_mean(a, b):
    """The SPD Sigma with Sigma b Sigma = a: b^-1/2 (b^1/2 a b^1/2)^1/2 b^-1/2 (for a draws'
    covariance a and a gradients' covariance b, Sigma is the Gaussian's covariance)."""
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return np.full(a.shape, np.nan)  # LAPACK refuses non-finite input: the caller checks
    vb, ub = np.linalg.eigh(b)
    root = np.sqrt(np.maximum(vb, 1e-300))
    b_half = (ub * root) @ ub.T
    b_inv_half = (ub / root) @ ub.T
    m = b_half @ a @ b_half
    if not np.all(np.isfinite(m)):
        return np.full(a.shape, np.nan)
    vm, um = np.linalg.eigh(0.5 * (m + m.T))
    m_half = (um * np.sqrt(np.maximum(vm, 0.0))) @ um.T
    out = b_inv_half @ m_half @ b_inv_half
    return 0.5 * (out + out.T)


@jit
def fisher_metric(draws, grads, gamma, cutoff, max_rank, sigma, vecs, sqrt_vals):
    """The diagonal-plus-low-rank metric of Seyboldt et al. (2026) from draws and their
    gradients (n, d), written into ``sigma`` (d,), ``vecs`` (rows: eigenvectors) and
    ``sqrt_vals``; returns the number of eigen-directions kept, or -1 when the estimate is
    unusable (non-finite input or output): the caller then keeps the diagonal alone.

    ``sigma`` must hold the current diagonal: coordinates whose draws or gradients do not
    vary keep it. ``cutoff`` <= 1 keeps every direction (the dense metric).
    """
    n, d = draws.shape
    if n < 2 or not (np.all(np.isfinite(draws)) and np.all(np.isfinite(grads))):
        return -1
    # the diagonal: the "diag" metric's estimate from the same draws (sums of squares, as
    # gradient_based_variance takes them), then draws and gradients rescaled by it
    xs = draws - draws.sum(axis=0) / n
    gs = grads - grads.sum(axis=0) / n
    variance = sigma * sigma
    gradient_based_variance((xs * xs).sum(axis=0), (gs * gs).sum(axis=0), variance)
    sigma[:] = np.sqrt(variance)
    xs /= sigma
    gs *= sigma
    # an orthonormal basis (rows of vt) of the span of the rescaled draws and gradients: the
    # whole space once there are d / 2 draws or more, else from a QR factorisation (cheaper
    # than the SVD; columns beyond the span's rank are still orthonormal, and harmless)
    if 2 * n >= d:
        vt = np.eye(0)  # none: the eigenvectors are already in the d coordinates
        px = xs
        pg = gs
    else:
        stacked = np.empty((d, 2 * n))
        stacked[:, :n] = xs.T
        stacked[:, n:] = gs.T
        basis = np.ascontiguousarray(np.linalg.qr(stacked)[0])
        vt = np.ascontiguousarray(basis.T)
        px = xs @ basis
        pg = gs @ basis
    m = px.shape[1]
    c_x = px.T @ px / n + gamma * np.eye(m)
    c_g = pg.T @ pg / n + gamma * np.eye(m)
    mean = spd_geometric_mean(c_x, c_g)
    if not np.all(np.isfinite(mean)):  # overflow: draws far beyond the float range's square root
        return -1
    vals, w = np.linalg.eigh(mean)
    if not (np.all(np.isfinite(vals)) and np.all(vals > 0.0)):
        return -1
    score = np.abs(np.log(vals))
    order = np.argsort(-score)
    k = 0
    limit = min(max_rank, vecs.shape[0])
    eigvecs = w.T @ vt if vt.shape[0] > 0 else np.ascontiguousarray(w.T)  # row j: the eigenvector of vals[j]
    for j in order:
        if k >= limit:
            break
        if cutoff > 1.0 and 1.0 / cutoff <= vals[j] <= cutoff:
            break  # sorted by |log lambda|: every later one is inside the band too
        vecs[k, :] = eigvecs[j]
        sqrt_vals[k] = math.sqrt(min(max(vals[j], 1e-10), 1e10))
        k += 1
    return k
