"""Diagonal mass-matrix (inverse metric) adaptation: two schemes.

**Stan-style windows** (Stan reference manual, "HMC algorithm parameters"): an initial fast
buffer (step size only), then slow windows that double in length, at the end of each of
which the inverse metric becomes the regularised Welford variance of the window's draws,
    inv_mass = n/(n+5) var + 1e-3 5/(n+5),
and a terminal fast buffer. Each metric update restarts the step-size adaptation.

**Gradient-based, in the manner of nutpie** (Seyboldt et al.): for a Gaussian, Var(x_i) =
sigma_i^2 and Var(d log p / d x_i) = 1 / sigma_i^2, so sqrt(Var(x) / Var(grad)) estimates
sigma_i^2 from far fewer draws than Var(x) alone, and does not need the chain to have
forgotten its start. The estimate is refreshed at every warmup iteration from a
*foreground* window, while a *background* window accumulates; every ``switch`` draws the
background replaces the foreground (short switches early, longer later), so early
transient draws are forgotten quickly. The last part of warmup adapts the step size only.
Once the windows are long (after the early phase), one more draw barely moves the
estimate, and the metric is refreshed every ``LATE_UPDATE_EVERY`` draws instead: its two
square roots and divisions per coordinate cost as much as a cheap target's gradient.

Welford accumulators are plain arrays (mean, m2) plus a count, updated without allocation.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit


MASS_NONE = 0
MASS_STAN = 1
MASS_GRADIENT = 2
SCHEMES = {"none": MASS_NONE, "stan": MASS_STAN, "gradient": MASS_GRADIENT}
LATE_UPDATE_EVERY = 10


@jit
def welford_add(mean, m2, count, x):
    """Adds x to the running (mean, m2) of ``count`` values; returns the new count."""
    count += 1
    weight = 1.0 / count  # one division, not one per coordinate
    for i in range(x.size):
        delta = x[i] - mean[i]
        mean[i] += delta * weight
        m2[i] += delta * (x[i] - mean[i])
    return count


@jit
def welford_reset(mean, m2):
    for i in range(mean.size):
        mean[i] = 0.0
        m2[i] = 0.0


@jit
def stan_regularised_variance(m2, count, out):
    """Stan's shrinkage of the window variance toward 1e-3 (with weight 5 / (n + 5))."""
    n = float(count)
    for i in range(m2.size):
        var = m2[i] / (n - 1.0)
        out[i] = (n / (n + 5.0)) * var + 1e-3 * (5.0 / (n + 5.0))


@jit
def gradient_based_variance(m2_x, m2_g, out):
    """inv_mass_i = sqrt(Var(x_i) / Var(grad_i)), clipped to [1e-10, 1e10]; counts cancel."""
    for i in range(out.size):  # branch-free, so the loop vectorises
        v = min(max(math.sqrt(m2_x[i] / m2_g[i]), 1e-10), 1e10)
        out[i] = v if (m2_g[i] > 0.0) & (m2_x[i] > 0.0) else out[i]


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
