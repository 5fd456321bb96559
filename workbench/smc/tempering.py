"""The tempering ladder of an SMC sampler: reweighting, the next temperature, resampling.

The sequence of densities is the geometric path pi_b(x) ~ p0(x)^(1-b) p(x)^b from a
normalised reference p0 (b = 0) to the target p (b = 1). Moving from b to b' multiplies each
particle's weight by the incremental weight (p(x) / p0(x))^(b' - b), and the mean of these
increments under the current normalised weights estimates Z_b' / Z_b, so the product over
the ladder estimates Z = Z_1 / Z_0 (Del Moral, Doucet and Jasra 2006, sec. 3.3; Z_0 = 1).

The next b' is the one at which the conditional ESS of the increments falls to a set
fraction of the particles (Zhou, Johansen and Aston 2016, eq. 3.16): with normalised weights
W_i and increments w_i,

    CESS = N (sum_i W_i w_i)^2 / sum_i W_i w_i^2,

found by bisection on b' - b (CESS decreases as the step grows). Unlike the ESS of the
updated weights, the CESS measures only what the step costs, so the ladder does not depend
on when the particles were last resampled.

Everything here is O(N) per call on arrays of N particles; the conditional ESS is compiled,
since the bisection calls it about 35 times a stage (SciPy's ``logsumexp``, 0.1-0.4 ms a call
in its array-API checks, took two thirds of a default run's time on a 10-d Gaussian). The rest
of an SMC run's work is in the mutation kernels (``workbench/smc/mutation.py``).
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit
from ..numerics import logsumexp

BISECTION_TOL = 1e-10


def normalise(log_w: np.ndarray) -> np.ndarray:
    """Log weights normalised to sum to one (all -inf stays all -inf)."""
    top = np.max(log_w)
    if not math.isfinite(top):
        return np.full_like(log_w, -math.inf)
    return log_w - logsumexp(log_w)


def ess_fraction(log_w: np.ndarray) -> float:
    """Kish's effective sample size of the weights, as a fraction of the particles."""
    w = np.exp(normalise(log_w))
    return float(1.0 / np.sum(w * w) / log_w.size)


@jit
def conditional_ess_fraction(log_w_normalised, log_increment, step):
    """CESS / N for a temperature step ``step``: (sum W w)^2 / sum W w^2, w = exp(step u).

    Particles whose increment is -inf or NaN (a density that is zero or NaN there) count as
    weight zero. In log space, a_i = log W_i + step u_i: CESS / N = exp(2 lse(a) - lse(a + step u)).
    """
    top_num = -math.inf  # the largest a_i, and the largest a_i + step u_i (each sum's shift)
    top_den = -math.inf
    for i in range(log_increment.size):
        u = log_increment[i]
        if math.isfinite(u):
            a = log_w_normalised[i] + step * u
            top_num = max(top_num, a)
            top_den = max(top_den, a + step * u)
    if not top_num > -math.inf:
        return 0.0
    num = 0.0
    den = 0.0
    for i in range(log_increment.size):
        u = log_increment[i]
        if math.isfinite(u):
            a = log_w_normalised[i] + step * u
            num += math.exp(a - top_num)
            den += math.exp(a + step * u - top_den)
    return math.exp(2.0 * (top_num + math.log(num)) - (top_den + math.log(den)))


def next_temperature(beta: float, log_w_normalised: np.ndarray, log_increment: np.ndarray, target_fraction: float) -> float:
    """The next b' in (b, 1]: 1 if the whole remaining step keeps CESS / N >= ``target_fraction``,
    else the b' where it equals it (bisection on b' - b).

    ``log_increment`` is log p(x_i) - log p0(x_i) at the particles.
    """
    remaining = 1.0 - beta
    if conditional_ess_fraction(log_w_normalised, log_increment, remaining) >= target_fraction:
        return 1.0
    lo, hi = 0.0, remaining
    while hi - lo > BISECTION_TOL * max(remaining, 1e-300):
        mid = 0.5 * (lo + hi)
        if conditional_ess_fraction(log_w_normalised, log_increment, mid) >= target_fraction:
            lo = mid
        else:
            hi = mid
    # lo keeps CESS at or above the target; a step of at least the tolerance keeps the ladder moving
    return beta + max(lo, BISECTION_TOL * remaining)


def reweight(log_w_normalised: np.ndarray, log_increment: np.ndarray, step: float) -> tuple[np.ndarray, float]:
    """(updated unnormalised log weights, log of the evidence ratio Z_b' / Z_b) for a step b' - b.

    The ratio is the weighted mean of the increments, sum_i W_i w_i; particles with a
    non-finite increment get weight zero.
    """
    inc = np.where(np.isfinite(log_increment), step * log_increment, -math.inf)
    new = log_w_normalised + inc
    return new, float(logsumexp(new))
