"""Hamiltonian trajectories: the NUTS transition and the static (fixed-length) HMC transition.

NUTS (Hoffman & Gelman 2014) in the multinomial form of Betancourt (2017, "A conceptual
introduction to Hamiltonian Monte Carlo", appendix A), with Stan's choices:

- the trajectory doubles, in a random direction each time, by a subtree of 2^depth leapfrog
  steps from the end it grows from;
- within a subtree the proposal is drawn multinomially, each state weighted by exp(-H);
  between the old trajectory and the new subtree the draw is *biased progressive*: the
  subtree's proposal replaces the sample with probability min(1, w_new / w_old), favouring
  states far from the start;
- the generalised no-U-turn criterion is checked on every subtree and across every merge
  of two halves (``termination.py``);
- a leaf whose energy error H - H0 exceeds ``max_energy_error`` (1000 by default), or is
  NaN or infinite, is a divergence: the subtree is invalid and the transition ends.

The subtree is built leaf by leaf rather than recursively (as NumPyro's iterative NUTS):
the same trajectory, the same checks, the same distribution of the proposal, without the
recursion's copies of every state. Within a subtree the multinomial draw is made
progressively: leaf n replaces the subtree's proposal with probability w_n / (w_0 + ... + w_n),
which draws leaf n with probability w_n / W like the recursive merges do. Only the position
and gradient of a proposal are kept (its momentum only enters through its energy).

Every vector lives in preallocated workspaces, ``vecs`` (N_VECS, d) for the transition and
``ckpt`` (``termination.checkpoints``) for the subtree checks: a transition allocates nothing.
"""

from __future__ import annotations

import math

from ..jit import jit
from .integrators import integrate, leapfrog_leaf
from .metric import kinetic_energy, sample_momentum
from .termination import NAN_COUNT, START_P, add_leaf, merged_trajectory_persists
from .walnuts import LEAF_DIVERGED, LEAF_IRREVERSIBLE, walnuts_leaf

# rows of the transition workspace ``vecs``; the proposal buffers come in two (position,
# gradient) pairs whose roles, "sample" and "proposal", swap instead of copying
(P0, FWD_Q, FWD_P, FWD_G, BCK_Q, BCK_P, BCK_G, RHO, SUBTREE_SUM, P_NEAR, PAIR_Q, PAIR_G) = range(12)
# rows 10-13: PAIR_Q + 2 k and PAIR_G + 2 k for pair k = 0, 1; then WALNUTS's scratch (walnuts.py)
W_START_Q, W_START_P, W_START_G, W_BACK_Q, W_BACK_P, W_BACK_G = range(14, 20)
N_VECS = 20


@jit(nrt=False)
def _copy(src, dst):
    for i in range(src.size):
        dst[i] = src[i]


@jit(nrt=False)
def _logaddexp(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


@jit(nrt=False)
def build_subtree(logp_grad, data, depth, step, inv_mass, transform, h0, max_energy_error, rng,
                  z_q, z_p, z_g, prop_q, prop_g, psum, ckpt, h_end, walnuts_error, walnuts_halvings, leaf_cost,
                  grad_cap, vecs):
    """Extends the trajectory end (z_q, z_p, z_g), of energy ``h_end``, in place, by 2^depth
    leaves: leapfrog steps of signed size ``step``, or with ``walnuts_halvings`` >= 0 WALNUTS
    macro steps (``walnuts.py``: at most ``leaf_cost`` gradients each, none begun that
    ``grad_cap`` cannot pay for).

    Writes the subtree's multinomial proposal into (prop_q, prop_g) and its momentum sum
    into ``psum``; ``ckpt[START_P, 0]`` holds its first leaf's momentum. Returns
    (valid, log_sum_weight, n_leaves, n_gradients, sum_accept_prob, sum_accept_sym, diverging,
    prop_logp, prop_energy, end_energy); ``valid`` is False after a divergence, a U-turn or an
    irreversible WALNUTS leaf inside the subtree, or at the gradient cap.
    ``sum_accept_sym`` sums the symmetric statistic 2 min(1, e^w) / (1 + e^w) of each leaf's
    log weight w = H0 - H: its expectation is the acceptance's, E min(1, e^w), whenever w
    has the distribution of a reversible integrator's energy errors, with less variance
    (nutpie adapts the step size to it). Under WALNUTS both are of the leaf's first attempt.
    """
    # the weights w_n = exp(H0 - H_n) sum to exp(w_max) w_sum: one exp per leaf, no overflow
    w_max = -math.inf
    e_max = 0.0  # exp(w_max), for the acceptance statistic
    w_sum = 0.0
    sum_accept = 0.0
    sum_sym = 0.0
    prop_lp = math.nan
    prop_h = math.nan
    n_leaves = 1 << depth
    n_grads = 0
    for n in range(n_leaves):
        if walnuts_halvings < 0:
            lp, kinetic = leapfrog_leaf(logp_grad, data, z_q, z_p, z_g, step, inv_mass, transform, psum, n == 0)
            n_grads += 1
            h = -lp + kinetic
            log_a = 0.0  # (the accept statistics use log_w)
        else:
            if n_grads + leaf_cost > grad_cap:  # the budget cannot pay for this leaf: the transition ends
                lsw = w_max + math.log(w_sum) if w_sum > 0.0 else -math.inf
                return False, lsw, n, n_grads, sum_accept, sum_sym, False, prop_lp, prop_h, h_end
            status, lp, h, h_first, used = walnuts_leaf(
                logp_grad, data, z_q, z_p, z_g, h_end, step, inv_mass, transform, walnuts_error, walnuts_halvings,
                vecs[W_START_Q], vecs[W_START_P], vecs[W_START_G], vecs[W_BACK_Q], vecs[W_BACK_P], vecs[W_BACK_G])
            n_grads += used
            if status == LEAF_IRREVERSIBLE:  # the subtree is discarded, as after a U-turn inside it
                lsw = w_max + math.log(w_sum) if w_sum > 0.0 else -math.inf
                return False, lsw, n + 1, n_grads, sum_accept, sum_sym, False, prop_lp, prop_h, h
            log_a = h0 - h_first if math.isfinite(h_first) else -math.inf  # the first attempt's
            if status == LEAF_DIVERGED:
                h = math.inf
            for i in range(z_p.size):
                psum[i] = z_p[i] if n == 0 else psum[i] + z_p[i]
            h_end = h
        if not math.isfinite(h):
            h = math.inf  # a NaN or infinite density: rejected, counted as a divergence
            if math.isnan(lp):
                ckpt[NAN_COUNT, 0, 0] += 1.0
        log_w = h0 - h
        if -log_w > max_energy_error:
            lsw = w_max + math.log(w_sum) if w_sum > 0.0 else -math.inf
            return False, lsw, n + 1, n_grads, sum_accept, sum_sym, True, prop_lp, prop_h, h_end
        if log_w > w_max:
            w_sum = w_sum * math.exp(w_max - log_w) + 1.0
            w_max = log_w
            e_max = math.exp(w_max)
            rel = 1.0
        else:
            rel = math.exp(log_w - w_max)
            w_sum += rel
        if walnuts_halvings >= 0:
            sum_accept += 1.0 if log_a >= 0.0 else math.exp(log_a)
            sum_sym += 2.0 / (1.0 + math.exp(log_a)) if log_a >= 0.0 else 2.0 / (math.exp(-log_a) + 1.0)
        elif log_w >= 0.0:
            sum_accept += 1.0
            sum_sym += 2.0 / (1.0 + math.exp(log_w))
        else:  # min(1, exp(-energy error)) = rel exp(w_max); directly if exp(w_max) overflowed
            sum_accept += rel * e_max if w_max < 700.0 else math.exp(log_w)
            sum_sym += 2.0 / (math.exp(-log_w) + 1.0)
        # progressive multinomial draw: leaf n with probability w_n / (w_0 + ... + w_n)
        if n == 0 or rng.random() * w_sum < rel:
            _copy(z_q, prop_q)
            _copy(z_g, prop_g)
            prop_lp = lp
            prop_h = h
        if not add_leaf(n, z_p, psum, inv_mass, ckpt):
            return False, w_max + math.log(w_sum), n + 1, n_grads, sum_accept, sum_sym, False, prop_lp, prop_h, h_end
    return True, w_max + math.log(w_sum), n_leaves, n_grads, sum_accept, sum_sym, False, prop_lp, prop_h, h_end


@jit(nrt=False)
def nuts_transition(logp_grad, data, q, g, logp, step, inv_mass, momentum_sd, transform, max_depth, max_energy_error,
                    rng, vecs, ckpt, walnuts_error=0.0, walnuts_halvings=-1, leaf_cost=1, max_grads=1 << 62):
    """One NUTS transition from (q, g, logp), updated in place; with ``walnuts_halvings`` >= 0,
    WALNUTS (``walnuts.py``: leaves of up to 2^walnuts_halvings micro steps, the energy held
    within ``walnuts_error``, at most ``leaf_cost`` gradients a leaf, ``max_grads`` in all).

    ``momentum_sd`` = 1 / sqrt(inv_mass), the sds of the momentum; ``transform`` the
    metric's linear map (``metric.py``; (q, g) are then in its coordinates). Returns (logp,
    accept_prob, accept_sym, n_leapfrog, tree_depth, diverging, energy, energy_error):
    ``accept_prob`` is the mean Metropolis acceptance over the trajectory, ``accept_sym`` the
    mean of its symmetric form (what dual averaging adapts: see :func:`build_subtree`),
    ``energy`` the Hamiltonian of the chosen state (for E-BFMI) and ``energy_error`` its
    difference from the start; ``n_leapfrog`` counts gradients (leaves, without WALNUTS).
    """
    p0 = vecs[P0]
    h0 = -logp + sample_momentum(rng, momentum_sd, p0)
    _copy(q, vecs[FWD_Q])
    _copy(q, vecs[BCK_Q])
    _copy(p0, vecs[FWD_P])
    _copy(p0, vecs[BCK_P])
    _copy(g, vecs[FWD_G])
    _copy(g, vecs[BCK_G])
    _copy(p0, vecs[RHO])
    sample_pair = -1  # the sample is still the initial state, (q, g) themselves
    prop_pair = 0
    sample_lp = logp
    sample_h = h0
    log_sum_weight = 0.0  # the initial state, weight exp(-(H0 - H0))
    depth = 0
    n_leapfrog = 0
    n_leaves = 0
    sum_accept = 0.0
    sum_sym = 0.0
    diverging = False
    h_fwd = h0  # the energies of the trajectory's two ends (WALNUTS starts each leaf from one)
    h_bck = h0
    while depth < max_depth:
        forward = rng.random() > 0.5
        if forward:  # extend forward in time
            end_q, end_p, end_g, far_p, eps, h_end = FWD_Q, FWD_P, FWD_G, BCK_P, step, h_fwd
        else:
            end_q, end_p, end_g, far_p, eps, h_end = BCK_Q, BCK_P, BCK_G, FWD_P, -step, h_bck
        _copy(vecs[end_p], vecs[P_NEAR])
        ok, lsw_sub, leaves, n, acc, sym, div, prop_lp, prop_h, h_end = build_subtree(
            logp_grad, data, depth, eps, inv_mass, transform, h0, max_energy_error, rng,
            vecs[end_q], vecs[end_p], vecs[end_g], vecs[PAIR_Q + 2 * prop_pair], vecs[PAIR_G + 2 * prop_pair],
            vecs[SUBTREE_SUM], ckpt, h_end, walnuts_error, walnuts_halvings, leaf_cost, max_grads - n_leapfrog, vecs,
        )
        if forward:
            h_fwd = h_end
        else:
            h_bck = h_end
        n_leapfrog += n
        n_leaves += leaves
        sum_accept += acc
        sum_sym += sym
        diverging = diverging or div
        if not ok:
            break
        depth += 1
        # biased progressive sampling: the new subtree wins w.p. min(1, w_sub / w_old)
        if lsw_sub > log_sum_weight or rng.random() < math.exp(lsw_sub - log_sum_weight):
            sample_pair, prop_pair = prop_pair, 1 - prop_pair
            sample_lp = prop_lp
            sample_h = prop_h
        log_sum_weight = _logaddexp(log_sum_weight, lsw_sub)
        if not merged_trajectory_persists(vecs[far_p], vecs[P_NEAR], vecs[RHO], ckpt[START_P, 0],
                                          vecs[end_p], vecs[SUBTREE_SUM], inv_mass):
            break
    if sample_pair >= 0:
        _copy(vecs[PAIR_Q + 2 * sample_pair], q)
        _copy(vecs[PAIR_G + 2 * sample_pair], g)
    n = max(n_leaves, 1)
    return sample_lp, sum_accept / n, sum_sym / n, n_leapfrog, depth, diverging, sample_h, sample_h - h0


@jit(nrt=False)
def static_transition(logp_grad, data, q, g, logp, step, n_steps, inv_mass, momentum_sd, transform, max_energy_error,
                      rng, vecs, ckpt):
    """One HMC transition: ``n_steps`` leapfrog steps, then a Metropolis accept/reject.

    Returns (logp, accept_prob, n_leapfrog, diverging, energy, energy_error). A non-finite
    density along the way ends the trajectory: rejected and counted as a divergence.
    """
    zq, zp, zg = vecs[PAIR_Q], vecs[P0], vecs[PAIR_G]
    h0 = -logp + sample_momentum(rng, momentum_sd, zp)
    _copy(q, zq)
    _copy(g, zg)
    lp, n = integrate(logp_grad, data, zq, zp, zg, step, inv_mass, transform, n_steps)
    h = -lp + kinetic_energy(zp, inv_mass)
    if not math.isfinite(h):
        h = math.inf
        if math.isnan(lp):
            ckpt[NAN_COUNT, 0, 0] += 1.0
    energy_error = h - h0
    diverging = energy_error > max_energy_error
    accept_prob = 1.0 if energy_error <= 0.0 else math.exp(-energy_error)
    if rng.random() < accept_prob:
        _copy(zq, q)
        _copy(zg, g)
        return lp, accept_prob, n, diverging, h, energy_error
    return logp, accept_prob, n, diverging, h0, 0.0
