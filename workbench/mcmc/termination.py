"""The generalised no-U-turn criterion of NUTS, checked leaf by leaf.

A stretch of trajectory with velocities p#_- = M^-1 p at its backward end and p#_+ at its
forward end, and rho = the sum of the momenta of its states, has not turned back on itself
while p#_- . rho > 0 and p#_+ . rho > 0 (Betancourt 2017, "A conceptual introduction to
Hamiltonian Monte Carlo", appendix A.4.2). NUTS checks this on every balanced subtree of its
doubling tree and, as Stan does since 2.26, across every merge of two halves: the left half
extended by the first state of the right half, and the last state of the left half with the
right half (U-turns that fall between two subtrees are otherwise missed).

The checks here are the ones a recursive tree builder makes as its recursion unwinds, made
instead as each leaf is added, in the order the leaves are built (NumPyro's iterative NUTS,
extended with the merge checks). Leaf n of a subtree (0-based, in build order) completes the
blocks of 2^k leaves that end there, k = 1..T with T the number of trailing one bits of n.
A block check needs the first state of the block and the two states where its halves meet;
a small stack of checkpoints keeps them, O(max_depth x d) memory:

- at an even leaf n: its momentum and the running sum C_n of momenta (through leaf n), in
  the start slot popcount(n >> 1), shared by every block that starts at n;
- at an odd leaf n: its momentum and C_n in the end slot idx_min = idx_max - T + 1
  (idx_max = popcount(n >> 1)): the largest block ending at n is the left half of the next
  larger block, which starts in that same slot.

The block of 2^k leaves ending at odd leaf n starts in slot s = idx_max - k + 1, and its
right half starts in slot s + 1. Checks are symmetric in the two ends, so the build
direction (forward or backward in time) does not matter.
"""

from __future__ import annotations

import numpy as np

from ..jit import jit

# rows of the checkpoint array (N_CHECKPOINT_ROWS, max_depth, d)
START_P, START_SUM, END_P, END_SUM = range(4)
# the transitions count there, in [NAN_COUNT, 0, 0], the leaves where the density was NaN (a
# fault to name, not the edge of the support that -inf is); the chain reads and resets it
NAN_COUNT = 4
N_CHECKPOINT_ROWS = 5


def checkpoints(max_depth: int, dim: int) -> np.ndarray:
    """Scratch space for :func:`add_leaf` (one per chain)."""
    return np.zeros((N_CHECKPOINT_ROWS, max(max_depth, 1), dim))


@jit
def popcount(n):
    """The number of one bits of n >= 0."""
    count = 0
    while n:
        count += n & 1
        n >>= 1
    return count


@jit
def trailing_ones(n):
    """The number of trailing one bits of n >= 0: how many blocks end at leaf n."""
    count = 0
    while n & 1:
        count += 1
        n >>= 1
    return count


@jit(nrt=False)
def _store(p, psum, p_out, psum_out):
    for i in range(p.size):
        p_out[i] = p[i]
        psum_out[i] = psum[i]


@jit(fastmath=True, nrt=False)
def _block_persists(k, slot, p, psum, inv_mass, ckpt):
    """The block of 2^k leaves ending at the current leaf (momentum p, running sum psum):
    its own criterion, and for k >= 2 the two merge checks of its halves."""
    p_start = ckpt[START_P, slot]
    sum_start = ckpt[START_SUM, slot]
    minus = 0.0
    plus = 0.0
    if k == 1:  # two leaves: the merge checks coincide with the block's own
        for i in range(p.size):
            rho = psum[i] - sum_start[i] + p_start[i]
            minus += inv_mass[i] * p_start[i] * rho
            plus += inv_mass[i] * p[i] * rho
        return minus > 0.0 and plus > 0.0
    p_mid_right = ckpt[START_P, slot + 1]  # first leaf of the right half
    p_mid_left = ckpt[END_P, slot]  # last leaf of the left half
    sum_mid_left = ckpt[END_SUM, slot]
    left_minus = 0.0
    left_plus = 0.0
    right_minus = 0.0
    right_plus = 0.0
    for i in range(p.size):
        before = sum_start[i] - p_start[i]  # running sum before the block
        rho = psum[i] - before
        minus += inv_mass[i] * p_start[i] * rho
        plus += inv_mass[i] * p[i] * rho
        rho_left = sum_mid_left[i] - before + p_mid_right[i]  # left half + first of right
        left_minus += inv_mass[i] * p_start[i] * rho_left
        left_plus += inv_mass[i] * p_mid_right[i] * rho_left
        rho_right = p_mid_left[i] + psum[i] - sum_mid_left[i]  # last of left + right half
        right_minus += inv_mass[i] * p_mid_left[i] * rho_right
        right_plus += inv_mass[i] * p[i] * rho_right
    return (minus > 0.0 and plus > 0.0 and left_minus > 0.0 and left_plus > 0.0
            and right_minus > 0.0 and right_plus > 0.0)


@jit(nrt=False)
def add_leaf(n, p, psum, inv_mass, ckpt):
    """Records leaf n of a subtree (momentum p, running momentum sum psum through it) and
    checks every block that ends there. Returns False when one has turned (the subtree is
    then invalid, as in the recursive builder), True otherwise."""
    if n & 1 == 0:
        slot = popcount(n >> 1)
        _store(p, psum, ckpt[START_P, slot], ckpt[START_SUM, slot])
        return True
    idx_max = popcount(n >> 1)
    n_blocks = trailing_ones(n)
    for k in range(1, n_blocks + 1):  # smallest block first, as the recursion unwinds
        if not _block_persists(k, idx_max - k + 1, p, psum, inv_mass, ckpt):
            return False
    idx_min = idx_max - n_blocks + 1
    _store(p, psum, ckpt[END_P, idx_min], ckpt[END_SUM, idx_min])
    return True


@jit(fastmath=True, nrt=False)
def merged_trajectory_persists(p_far, p_near, rho_old, p_first, p_last, rho_new, inv_mass):
    """After a new subtree joins the trajectory: the whole trajectory's criterion and the two
    merge checks. The old trajectory has momentum p_far at its far end, p_near at the end the
    subtree grew from, momentum sum rho_old; the subtree has p_first (its first leaf),
    p_last (its last, now the trajectory's end) and sum rho_new. Writes the new total sum
    into rho_old."""
    minus = 0.0
    plus = 0.0
    a_minus = 0.0
    a_plus = 0.0
    b_minus = 0.0
    b_plus = 0.0
    for i in range(p_far.size):
        rho = rho_old[i] + rho_new[i]
        minus += inv_mass[i] * p_far[i] * rho
        plus += inv_mass[i] * p_last[i] * rho
        rho_a = rho_old[i] + p_first[i]
        a_minus += inv_mass[i] * p_far[i] * rho_a
        a_plus += inv_mass[i] * p_first[i] * rho_a
        rho_b = p_near[i] + rho_new[i]
        b_minus += inv_mass[i] * p_near[i] * rho_b
        b_plus += inv_mass[i] * p_last[i] * rho_b
        rho_old[i] = rho
    return minus > 0.0 and plus > 0.0 and a_minus > 0.0 and a_plus > 0.0 and b_minus > 0.0 and b_plus > 0.0
