"""WALNUTS: a step size chosen per leaf of the NUTS tree, within the orbit.

Bou-Rabee, Carpenter, Kleppe and Liu (2025), "The within-orbit adaptive leapfrog no-U-turn
sampler" (WALNUTS). Each leaf of the NUTS trajectory (a *macro step* of the adapted step
size) is integrated by 2^k leapfrog *micro steps* of size step / 2^k, k the smallest of
0..``max_halvings`` for which the Hamiltonian stays within ``max_error`` along the micro steps
(max H - min H over them and the start: the criterion nuts-rs uses, symmetric under time
reversal). Where the posterior curves more than the adapted step can follow (the arms of a
banana, the neck of a funnel) the leaf takes smaller steps instead of diverging.

The choice of k depends on where the leaf starts, so it must be the same read backwards: a
leaf that needed k > 0 is kept only if integrating back from its end with every coarser
count (2^(k-1), ..., 1 micro steps) leaves the tolerance too. Otherwise the leaf is
*irreversible* and the subtree that holds it is discarded, as after a U-turn inside it
(the paper's orbit-selection rule, which keeps the transition reversible and the target
invariant). No count within ``max_halvings`` is a divergence.

The step size keeps being adapted by dual averaging, on the energy error of each leaf's first
(coarsest) attempt: the accepted leaves are within tolerance by construction, so their own
errors would say nothing about the step. The same gradients-per-leaf bookkeeping lets the
caller cap a transition's cost (a leaf costs at most :func:`max_leaf_gradients`).
"""

from __future__ import annotations

import math

from ..jit import jit
from .integrators import leapfrog
from .metric import kinetic_energy

LEAF_OK, LEAF_IRREVERSIBLE, LEAF_DIVERGED = 0, 1, 2


@jit
def max_leaf_gradients(max_halvings: int) -> int:
    """The most gradients one leaf can cost: every attempt (1 + 2 + ... + 2^K) and the
    reversibility checks of the last (1 + ... + 2^(K-1))."""
    return (1 << (max_halvings + 1)) - 1 + (1 << max_halvings) - 1


@jit(nrt=False)
def _copy3(q, p, g, q_to, p_to, g_to):
    for i in range(q.size):
        q_to[i] = q[i]
        p_to[i] = p[i]
        g_to[i] = g[i]


@jit(nrt=False)
def micro_steps(logp_grad, data, q, p, g, h_start, step, n, inv_mass, transform, max_error, stop_early):
    """``n`` leapfrog steps of size ``step / n`` in place on (q, p, g), from a state of energy
    ``h_start``. Returns (log p at the end, H at the end, within, finite, gradients):
    ``within`` when max H - min H over the steps (start included) stays <= ``max_error``.
    With ``stop_early`` it returns as soon as the answer is known to be no."""
    sub = step / n
    h_min = h_start
    h_max = h_start
    exceeded = False
    lp = math.nan
    h = h_start
    for j in range(n):
        lp = leapfrog(logp_grad, data, q, p, g, sub, inv_mass, transform)
        h = -lp + kinetic_energy(p, inv_mass)
        if not math.isfinite(h):
            return lp, math.inf, False, False, j + 1
        h_min = min(h_min, h)
        h_max = max(h_max, h)
        if h_max - h_min > max_error:
            exceeded = True
            if stop_early:
                return lp, h, False, True, j + 1
    return lp, h, not exceeded, True, n


@jit(nrt=False)
def walnuts_leaf(logp_grad, data, q, p, g, h_start, step, inv_mass, transform, max_error, max_halvings,
                 start_q, start_p, start_g, back_q, back_p, back_g):
    """One leaf (macro step of signed size ``step``) from (q, p, g) of energy ``h_start``, in
    place. ``start_*`` and ``back_*`` are scratch vectors. Returns (status, log p, H,
    H of the first attempt's end, gradients): status LEAF_OK, LEAF_IRREVERSIBLE or
    LEAF_DIVERGED (module docstring); a diverged leaf's log p is NaN if the density was NaN
    on the way, else -inf."""
    _copy3(q, p, g, start_q, start_p, start_g)
    grads = 0
    h_coarse = math.inf
    nan_seen = False  # a NaN density (a fault to name), not only a divergence
    for k in range(max_halvings + 1):
        n = 1 << k
        if k > 0:
            _copy3(start_q, start_p, start_g, q, p, g)
        # the first attempt runs to its end: dual averaging adapts to its energy error
        lp, h, within, finite, used = micro_steps(logp_grad, data, q, p, g, h_start, step, n, inv_mass, transform,
                                                  max_error, k > 0)
        grads += used
        nan_seen = nan_seen or math.isnan(lp)
        if k == 0:
            h_coarse = h if finite else math.inf
        if not within:
            continue
        # reversible only if no coarser count would have been chosen from the end backwards
        for j in range(k - 1, -1, -1):
            _copy3(q, p, g, back_q, back_p, back_g)
            _, _, back_within, _, used = micro_steps(logp_grad, data, back_q, back_p, back_g, h, -step, 1 << j,
                                                     inv_mass, transform, max_error, True)
            grads += used
            if back_within:
                return LEAF_IRREVERSIBLE, lp, h, h_coarse, grads
        return LEAF_OK, lp, h, h_coarse, grads
    return LEAF_DIVERGED, (math.nan if nan_seen else -math.inf), math.inf, h_coarse, grads
