"""The leapfrog (Stormer-Verlet) integrator of Hamiltonian dynamics.

H(q, p) = -log p(q) + K(p). One step of size eps:
p <- p + eps/2 grad log p(q);  q <- q + eps M^-1 p;  p <- p + eps/2 grad log p(q).
The gradient at the end of a step is the one at the start of the next, so the caller keeps
``g`` between steps and every step costs exactly one gradient evaluation. The map is
volume-preserving and time-reversible (flip p, step, flip p: back to the start), and its
energy error is O(eps^2) over a fixed integration time.
"""

from __future__ import annotations

from numba import njit

from ..jit import NO_NRT


@njit(cache=True, **NO_NRT)
def leapfrog(logp_grad, data, q, p, g, step_size, inv_mass):
    """One leapfrog step with a diagonal metric, in place on (q, p, g); returns log p(q_new).

    ``g`` must hold grad log p(q) on entry; it holds the gradient at the new q on exit.
    A negative ``step_size`` integrates backwards in time.
    """
    half = 0.5 * step_size
    for i in range(q.size):
        p[i] += half * g[i]
    for i in range(q.size):
        q[i] += step_size * inv_mass[i] * p[i]
    logp = logp_grad(q, g, data)
    for i in range(q.size):
        p[i] += half * g[i]
    return logp


@njit(cache=True, **NO_NRT)
def leapfrog_dense(logp_grad, data, q, p, g, step_size, inv_mass):
    """One leapfrog step with a dense metric ``inv_mass`` = M^-1 (d, d); as :func:`leapfrog`."""
    d = q.size
    half = 0.5 * step_size
    for i in range(d):
        p[i] += half * g[i]
    for i in range(d):  # q += eps M^-1 p; p is not written in this loop, so in place is safe
        s = 0.0
        for j in range(d):
            s += inv_mass[i, j] * p[j]
        q[i] += step_size * s
    logp = logp_grad(q, g, data)
    for i in range(d):
        p[i] += half * g[i]
    return logp
