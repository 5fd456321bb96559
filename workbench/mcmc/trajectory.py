"""Hamiltonian trajectories: the NUTS tree and the static (fixed-length) HMC trajectory.

NUTS (Hoffman & Gelman 2014) in the multinomial form of Betancourt (2017, "A conceptual
introduction to Hamiltonian Monte Carlo", appendix A), as Stan implements it:

- the trajectory doubles, in a random direction each time, by building a balanced binary
  subtree of 2^depth leapfrog steps (``build_tree``, recursive);
- within a subtree the proposal is drawn multinomially, each state weighted by
  exp(-H); between the old trajectory and the new subtree the draw is *biased
  progressive*: the new subtree's proposal replaces the sample with probability
  min(1, w_new / w_old), favouring states far from the start;
- the generalised no-U-turn criterion p#_minus . rho > 0 and p#_plus . rho > 0 (p# = M^-1 p,
  rho = sum of momenta) is checked on every subtree *and across* the two halves being
  merged (with each half extended by the neighbouring state of the other), which catches
  U-turns that fall between subtrees;
- a leaf whose energy error H - H0 exceeds ``max_energy_error`` (1000 by default), or is
  NaN or infinite, is a divergence: the subtree is invalid and tree building stops.

All vectors live in preallocated workspaces: ``vecs`` (N_VECS, d) for the transition and
``tree`` (N_TREE, max_depth + 1, d), where each recursion level uses its own row, so a
transition allocates nothing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..jit import NO_NRT
from ..numerics import REASSOC

from .integrators import leapfrog
from .metric import kinetic_energy, sample_momentum, velocity

# rows of the transition workspace ``vecs``
(P0, FWD_Q, FWD_P, FWD_G, BCK_Q, BCK_P, BCK_G, SAMPLE_Q, SAMPLE_P, SAMPLE_G, PROP_Q, PROP_P,
 PROP_G, SHARP_FWD_FWD, SHARP_FWD_BCK, SHARP_BCK_FWD, SHARP_BCK_BCK, P_FWD_FWD, P_FWD_BCK,
 P_BCK_FWD, P_BCK_BCK, RHO, RHO_FWD, RHO_BCK) = range(24)
N_VECS = 24
# rows of the per-depth tree workspace ``tree``
(T_SHARP_END_LEFT, T_END_LEFT, T_RHO_LEFT, T_RHO_RIGHT, T_SHARP_BEG_RIGHT, T_BEG_RIGHT,
 T_PROP_Q, T_PROP_P, T_PROP_G) = range(9)
N_TREE = 9


def nuts_workspace(dim: int, max_depth: int):
    """(vecs, tree, tree_lp) scratch arrays for one chain."""
    return (
        np.zeros((N_VECS, dim)),
        np.zeros((N_TREE, max_depth + 1, dim)),
    )


@njit(cache=True, **NO_NRT)
def _copy(src, dst):
    for i in range(src.size):
        dst[i] = src[i]


@njit(cache=True, fastmath=REASSOC, **NO_NRT)
def _no_u_turn(sharp_minus, sharp_plus, rho_a, rho_b):
    """Generalised criterion with rho = rho_a + rho_b: both ends still move apart."""
    minus = 0.0
    plus = 0.0
    for i in range(rho_a.size):
        r = rho_a[i] + rho_b[i]
        minus += sharp_minus[i] * r
        plus += sharp_plus[i] * r
    return minus > 0.0 and plus > 0.0


@njit(cache=True, **NO_NRT)
def _logaddexp(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


@njit(cache=True, **NO_NRT)
def build_tree(
    logp_grad, data, depth, step, inv_mass, h0, max_energy_error, rng,
    z_q, z_p, z_g, prop_q, prop_p, prop_g, sharp_beg, sharp_end, p_beg, p_end, rho, tree,
):
    """Extend the trajectory end (z_q, z_p, z_g) by 2^depth steps of signed size ``step``.

    Writes the subtree's multinomial sample into prop_*, the velocities and momenta at its
    two ends into sharp_beg/sharp_end and p_beg/p_end, and adds its momenta to ``rho``.
    Returns (valid, log_sum_weight, n_leapfrog, sum_accept_prob, diverging, prop_logp):
    ``valid`` is False after a divergence or a U-turn inside the subtree.
    """
    if depth == 0:
        lp = leapfrog(logp_grad, data, z_q, z_p, z_g, step, inv_mass)
        h = -lp + kinetic_energy(z_p, inv_mass)
        if not math.isfinite(h):
            h = math.inf  # a NaN or infinite density: rejected, counted as a divergence
        energy_error = h - h0
        diverging = energy_error > max_energy_error
        accept = 1.0 if energy_error <= 0.0 else math.exp(-energy_error)
        _copy(z_q, prop_q)
        _copy(z_p, prop_p)
        _copy(z_g, prop_g)
        velocity(z_p, inv_mass, sharp_beg)
        _copy(sharp_beg, sharp_end)
        for i in range(z_p.size):
            rho[i] += z_p[i]
        _copy(z_p, p_beg)
        _copy(z_p, p_end)
        return (not diverging), -energy_error, 1, accept, diverging, lp

    j = depth
    rho_left = tree[T_RHO_LEFT, j]
    rho_left[:] = 0.0
    ok, lsw_left, n, acc, div, lp = build_tree(
        logp_grad, data, depth - 1, step, inv_mass, h0, max_energy_error, rng,
        z_q, z_p, z_g, prop_q, prop_p, prop_g,
        sharp_beg, tree[T_SHARP_END_LEFT, j], p_beg, tree[T_END_LEFT, j], rho_left, tree,
    )
    if not ok:
        return False, lsw_left, n, acc, div, lp
    rho_right = tree[T_RHO_RIGHT, j]
    rho_right[:] = 0.0
    ok, lsw_right, n_right, acc_right, div, lp_right = build_tree(
        logp_grad, data, depth - 1, step, inv_mass, h0, max_energy_error, rng,
        z_q, z_p, z_g, tree[T_PROP_Q, j], tree[T_PROP_P, j], tree[T_PROP_G, j],
        tree[T_SHARP_BEG_RIGHT, j], sharp_end, tree[T_BEG_RIGHT, j], p_end, rho_right, tree,
    )
    n += n_right
    acc += acc_right
    lsw = _logaddexp(lsw_left, lsw_right)
    if not ok:
        return False, lsw, n, acc, div, lp
    # multinomial sample within the subtree: the right half's proposal w.p. w_right / w
    if rng.random() < math.exp(lsw_right - lsw):
        _copy(tree[T_PROP_Q, j], prop_q)
        _copy(tree[T_PROP_P, j], prop_p)
        _copy(tree[T_PROP_G, j], prop_g)
        lp = lp_right
    # no-U-turn over the merged subtree, and across its halves (Betancourt's extra checks)
    persist = _no_u_turn(sharp_beg, sharp_end, rho_left, rho_right)
    persist = persist and _no_u_turn(sharp_beg, tree[T_SHARP_BEG_RIGHT, j], rho_left, tree[T_BEG_RIGHT, j])
    persist = persist and _no_u_turn(tree[T_SHARP_END_LEFT, j], sharp_end, rho_right, tree[T_END_LEFT, j])
    for i in range(rho.size):
        rho[i] += rho_left[i] + rho_right[i]
    return persist, lsw, n, acc, False, lp


@njit(cache=True, **NO_NRT)
def nuts_transition(logp_grad, data, q, g, logp, step, inv_mass, max_depth, max_energy_error, rng, vecs, tree):
    """One NUTS transition from (q, g, logp), updated in place.

    Returns (logp, accept_prob, n_leapfrog, tree_depth, diverging, energy, energy_error):
    ``accept_prob`` is the mean Metropolis acceptance over the trajectory (what dual
    averaging adapts), ``energy`` the Hamiltonian of the chosen state (for E-BFMI) and
    ``energy_error`` its difference from the start.
    """
    p0 = vecs[P0]
    sample_momentum(rng, inv_mass, p0)
    h0 = -logp + kinetic_energy(p0, inv_mass)
    for i in range(q.size):
        vecs[FWD_Q, i] = vecs[BCK_Q, i] = vecs[SAMPLE_Q, i] = q[i]
        vecs[FWD_G, i] = vecs[BCK_G, i] = vecs[SAMPLE_G, i] = g[i]
        vecs[FWD_P, i] = vecs[BCK_P, i] = vecs[SAMPLE_P, i] = p0[i]
        vecs[P_FWD_FWD, i] = vecs[P_FWD_BCK, i] = vecs[P_BCK_FWD, i] = vecs[P_BCK_BCK, i] = p0[i]
        vecs[RHO, i] = p0[i]
    velocity(p0, inv_mass, vecs[SHARP_FWD_FWD])
    _copy(vecs[SHARP_FWD_FWD], vecs[SHARP_FWD_BCK])
    _copy(vecs[SHARP_FWD_FWD], vecs[SHARP_BCK_FWD])
    _copy(vecs[SHARP_FWD_FWD], vecs[SHARP_BCK_BCK])
    sample_lp = logp
    log_sum_weight = 0.0  # the initial state, weight exp(-(H0 - H0))
    depth = 0
    n_leapfrog = 0
    sum_accept = 0.0
    diverging = False
    while depth < max_depth:
        vecs[RHO_FWD, :] = 0.0
        vecs[RHO_BCK, :] = 0.0
        if rng.random() > 0.5:  # extend forward: the old trajectory becomes the backward part
            _copy(vecs[RHO], vecs[RHO_BCK])
            _copy(vecs[P_FWD_FWD], vecs[P_BCK_FWD])
            _copy(vecs[SHARP_FWD_FWD], vecs[SHARP_BCK_FWD])
            ok, lsw_sub, n, acc, div, prop_lp = build_tree(
                logp_grad, data, depth, step, inv_mass, h0, max_energy_error, rng,
                vecs[FWD_Q], vecs[FWD_P], vecs[FWD_G], vecs[PROP_Q], vecs[PROP_P], vecs[PROP_G],
                vecs[SHARP_FWD_BCK], vecs[SHARP_FWD_FWD], vecs[P_FWD_BCK], vecs[P_FWD_FWD],
                vecs[RHO_FWD], tree,
            )
        else:  # extend backward: the old trajectory becomes the forward part
            _copy(vecs[RHO], vecs[RHO_FWD])
            _copy(vecs[P_BCK_BCK], vecs[P_FWD_BCK])
            _copy(vecs[SHARP_BCK_BCK], vecs[SHARP_FWD_BCK])
            ok, lsw_sub, n, acc, div, prop_lp = build_tree(
                logp_grad, data, depth, -step, inv_mass, h0, max_energy_error, rng,
                vecs[BCK_Q], vecs[BCK_P], vecs[BCK_G], vecs[PROP_Q], vecs[PROP_P], vecs[PROP_G],
                vecs[SHARP_BCK_FWD], vecs[SHARP_BCK_BCK], vecs[P_BCK_FWD], vecs[P_BCK_BCK],
                vecs[RHO_BCK], tree,
            )
        n_leapfrog += n
        sum_accept += acc
        diverging = diverging or div
        if not ok:
            break
        depth += 1
        # biased progressive sampling: the new subtree wins w.p. min(1, w_sub / w_old)
        if lsw_sub > log_sum_weight or rng.random() < math.exp(lsw_sub - log_sum_weight):
            _copy(vecs[PROP_Q], vecs[SAMPLE_Q])
            _copy(vecs[PROP_P], vecs[SAMPLE_P])
            _copy(vecs[PROP_G], vecs[SAMPLE_G])
            sample_lp = prop_lp
        log_sum_weight = _logaddexp(log_sum_weight, lsw_sub)
        for i in range(q.size):
            vecs[RHO, i] = vecs[RHO_BCK, i] + vecs[RHO_FWD, i]
        persist = _no_u_turn(vecs[SHARP_BCK_BCK], vecs[SHARP_FWD_FWD], vecs[RHO_BCK], vecs[RHO_FWD])
        persist = persist and _no_u_turn(vecs[SHARP_BCK_BCK], vecs[SHARP_FWD_BCK], vecs[RHO_BCK], vecs[P_FWD_BCK])
        persist = persist and _no_u_turn(vecs[SHARP_BCK_FWD], vecs[SHARP_FWD_FWD], vecs[RHO_FWD], vecs[P_BCK_FWD])
        if not persist:
            break
    _copy(vecs[SAMPLE_Q], q)
    _copy(vecs[SAMPLE_G], g)
    energy = -sample_lp + kinetic_energy(vecs[SAMPLE_P], inv_mass)
    return sample_lp, sum_accept / max(n_leapfrog, 1), n_leapfrog, depth, diverging, energy, energy - h0


@njit(cache=True, **NO_NRT)
def static_transition(logp_grad, data, q, g, logp, step, n_steps, inv_mass, max_energy_error, rng, vecs):
    """One HMC transition: ``n_steps`` leapfrog steps, then a Metropolis accept/reject.

    Returns (logp, accept_prob, n_leapfrog, diverging, energy, energy_error). A non-finite
    density along the way ends the trajectory: rejected and counted as a divergence.
    """
    p0 = vecs[P0]
    sample_momentum(rng, inv_mass, p0)
    h0 = -logp + kinetic_energy(p0, inv_mass)
    zq, zp, zg = vecs[PROP_Q], vecs[PROP_P], vecs[PROP_G]
    _copy(q, zq)
    _copy(p0, zp)
    _copy(g, zg)
    lp = logp
    n = 0
    for _ in range(n_steps):
        lp = leapfrog(logp_grad, data, zq, zp, zg, step, inv_mass)
        n += 1
        if not math.isfinite(lp):
            break
    h = -lp + kinetic_energy(zp, inv_mass)
    if not math.isfinite(h):
        h = math.inf
    energy_error = h - h0
    diverging = energy_error > max_energy_error
    accept_prob = 1.0 if energy_error <= 0.0 else math.exp(-energy_error)
    if rng.random() < accept_prob:
        _copy(zq, q)
        _copy(zg, g)
        return lp, accept_prob, n, diverging, h, energy_error
    return logp, accept_prob, n, diverging, h0, 0.0
