"""The leapfrog (Stormer-Verlet) integrator of Hamiltonian dynamics.

H(q, p) = -log p(q) + K(p). One step of size eps:
p <- p + eps/2 grad log p(q);  q <- q + eps M^-1 p;  p <- p + eps/2 grad log p(q).
The gradient at the end of a step is the one at the start of the next, so the caller keeps
``g`` between steps and every step costs exactly one gradient evaluation. The map is
volume-preserving and time-reversible (flip p, step, flip p: back to the start), and its
energy error is O(eps^2) over a fixed integration time.

``integrate`` runs n steps at once for a fixed-length trajectory (HMC): the closing half
kick of one step and the opening half kick of the next are one full kick, fused with the
drift into a single pass over the coordinates, so n steps cost n + 1 passes instead of 3n.

Every step takes the metric as ``inv_mass`` (diagonal, in the coordinates the trajectory runs
in) and ``transform``: None for a diagonal metric; for a dense or low-rank one its
``metric.MetricTransform``, the trajectory runs on y = A^-1 x and the density is called
through ``metric.potential``.
"""

from __future__ import annotations

import math

from ..jit import jit
from .metric import potential


@jit(nrt=False)
def leapfrog(logp_grad, data, q, p, g, step_size, inv_mass, transform):
    """One leapfrog step under the metric (``inv_mass``, ``transform``), in place on (q, p, g);
    returns log p(q_new).

    ``g`` must hold grad log p(q) on entry; it holds the gradient at the new q on exit.
    A negative ``step_size`` integrates backwards in time.
    """
    half = 0.5 * step_size
    for i in range(q.size):  # half kick and drift in one pass
        p[i] += half * g[i]
        q[i] += step_size * inv_mass[i] * p[i]
    if transform is None:  # a diagonal metric: pruned at compile time (metric.potential)
        logp = logp_grad(q, g, data)
    else:
        logp = potential(logp_grad, data, q, g, transform)
    for i in range(q.size):
        p[i] += half * g[i]
    return logp


@jit(fastmath=True, nrt=False)
def leapfrog_leaf(logp_grad, data, q, p, g, step_size, inv_mass, transform, psum, first):
    """One :func:`leapfrog` step as a NUTS leaf needs it: the closing half kick also adds the
    new momentum to the running sum ``psum`` (or starts it, if ``first``) and computes the
    kinetic energy, in one pass. Returns (log p(q_new), 1/2 p^T M^-1 p)."""
    half = 0.5 * step_size
    for i in range(q.size):
        p[i] += half * g[i]
        q[i] += step_size * inv_mass[i] * p[i]
    if transform is None:  # a diagonal metric: pruned at compile time (metric.potential)
        logp = logp_grad(q, g, data)
    else:
        logp = potential(logp_grad, data, q, g, transform)
    kinetic = 0.0
    if first:
        for i in range(q.size):
            p[i] += half * g[i]
            kinetic += inv_mass[i] * p[i] * p[i]
            psum[i] = p[i]
    else:
        for i in range(q.size):
            p[i] += half * g[i]
            kinetic += inv_mass[i] * p[i] * p[i]
            psum[i] += p[i]
    return logp, 0.5 * kinetic


@jit(nrt=False)
def integrate(logp_grad, data, q, p, g, step_size, inv_mass, transform, n_steps):
    """``n_steps`` leapfrog steps in place on (q, p, g), as many calls of :func:`leapfrog`.

    Stops early at a non-finite density (the caller rejects the trajectory). Returns
    (log p at the last position, steps taken = gradient evaluations).
    """
    half = 0.5 * step_size
    for i in range(q.size):
        p[i] += half * g[i]
        q[i] += step_size * inv_mass[i] * p[i]
    logp = math.nan
    for s in range(n_steps):
        if transform is None:  # a diagonal metric: pruned at compile time (metric.potential)
            logp = logp_grad(q, g, data)
        else:
            logp = potential(logp_grad, data, q, g, transform)
        if not math.isfinite(logp):
            return logp, s + 1
        if s == n_steps - 1:
            for i in range(q.size):
                p[i] += half * g[i]
        else:
            for i in range(q.size):
                p[i] += step_size * g[i]
                q[i] += step_size * inv_mass[i] * p[i]
    return logp, n_steps
