"""workbench/mcmc/termination.py: the no-U-turn checks, leaf by leaf and merged."""

import numpy as np


def _persists(inv_mass, p_a, p_b, rho):
    return (inv_mass * p_a) @ rho > 0 and (inv_mass * p_b) @ rho > 0


def _block_ok(ps, inv_mass, start, size):
    """A block's own criterion and, for size >= 4, the two merge checks of its halves (Stan)."""
    end, half = start + size - 1, size // 2
    ok = _persists(inv_mass, ps[start], ps[end], ps[start : end + 1].sum(0))
    if size >= 4:
        mid = start + half
        ok = ok and _persists(inv_mass, ps[start], ps[mid], ps[start:mid].sum(0) + ps[mid])
        ok = ok and _persists(inv_mass, ps[mid - 1], ps[end], ps[mid - 1] + ps[mid : end + 1].sum(0))
    return ok


def _first_turn_by_recursion(ps, inv_mass):
    """The leaf at which a recursive builder (post-order over the blocks) first sees a U-turn,
    and whether only a merge check caught it there.

    Post-order visits blocks by increasing end leaf, so that is the smallest end leaf of any
    block that turns; None if none does."""
    n = len(ps)
    failing = [(start + size - 1, start, size) for size in (2**k for k in range(1, n.bit_length()))
               for start in range(0, n, size) if not _block_ok(ps, inv_mass, start, size)]
    if not failing:
        return None, False
    end, start, size = min(failing)
    own = _persists(inv_mass, ps[start], ps[end], ps[start : end + 1].sum(0))
    return end, own


def _momenta(rng, n, d):
    """Momenta that rotate (so some blocks turn back), plus noise."""
    omega = rng.uniform(0.05, 1.5)
    t = np.arange(n)
    ps = np.zeros((n, d))
    ps[:, 0] = np.cos(omega * t)
    ps[:, 1] = np.sin(omega * t)
    return ps + 0.3 * rng.standard_normal((n, d)) + rng.uniform(-0.5, 0.5, d)


def test_leaf_by_leaf_checks_equal_the_recursive_no_u_turn_checks():
    from workbench.mcmc.termination import add_leaf, checkpoints

    rng = np.random.default_rng(0)
    blocks, merge_only = set(), 0
    for case in range(400):
        depth, d = int(rng.integers(1, 7)), int(rng.integers(2, 5))
        ps = _momenta(rng, 2**depth, d)
        inv_mass = rng.uniform(0.5, 2.0, d)
        expected, own_criterion_held = _first_turn_by_recursion(ps, inv_mass)
        ckpt, psum, got = checkpoints(depth, d), np.zeros(d), None
        for n, p in enumerate(ps):
            psum += p
            if not add_leaf(n, p, psum, inv_mass, ckpt):
                got = n
                break
        assert got == expected, (case, depth, got, expected)
        # the size of the block that turned: 2^(trailing one bits of its last leaf)
        blocks.add(None if expected is None else len(bin(expected + 1)) - len(bin(expected + 1).rstrip("0")))
        merge_only += expected is not None and own_criterion_held
    assert {None, 1, 2, 3} <= blocks  # no turn, and turns in blocks of 2, 4 and 8 leaves
    assert merge_only > 5  # turns that only the checks across merged halves catch


def test_merge_checks_of_a_new_subtree_with_the_trajectory():
    from workbench.mcmc.termination import merged_trajectory_persists

    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(300):
        d, size = 3, 2 ** int(rng.integers(0, 5))
        ps = _momenta(rng, 2 * size, d)  # time order: old trajectory, then the new subtree
        inv_mass = rng.uniform(0.5, 2.0, d)
        old, new = ps[:size], ps[size:]
        expected = _block_ok(ps, inv_mass, 0, 2 * size) if size >= 2 else _persists(
            inv_mass, ps[0], ps[1], ps.sum(0))
        rho = old.sum(0)
        got = merged_trajectory_persists(old[0], old[-1], rho, new[0], new[-1], new.sum(0), inv_mass)
        assert got == expected
        np.testing.assert_allclose(rho, ps.sum(0))  # the trajectory's new momentum sum
        seen.add(got)
    assert seen == {True, False}


def test_u_turn_checks_in_a_low_rank_maps_coordinates_are_the_metric_s_criterion():
    """Under a dense or low-rank metric the trajectory runs on y = A^-1 x with momenta
    p_y = A^T p_x and inv_mass = 1; its criterion p_y . rho_y is then the metric's
    (M^-1 p_x) . rho_x with M^-1 = A A^T, for every check, including sign flips."""
    from workbench.mcmc.metric import inverse_metric, metric_transform
    from workbench.mcmc.termination import merged_trajectory_persists

    rng = np.random.default_rng(11)
    d, k = 6, 2
    t = metric_transform(d, k)
    t.sigma[:] = rng.uniform(0.3, 3.0, d)
    t.vecs[:k] = np.linalg.qr(rng.standard_normal((d, k)))[0].T
    vals = np.array([40.0, 0.05])
    t.sqrt_vals[:k] = np.sqrt(vals)
    t.rank[0] = k
    a = np.column_stack([_apply(t, e) for e in np.eye(d)])
    m_inv = inverse_metric(t.sigma, t.vecs[:k], vals)
    agree = 0
    for _ in range(300):
        p_far, p_near, p_first, p_last, rho_new = rng.standard_normal((5, d))
        rho_old = rng.standard_normal(d) * 3
        dense = (p_far @ m_inv @ (rho_old + rho_new) > 0 and p_last @ m_inv @ (rho_old + rho_new) > 0
                 and p_far @ m_inv @ (rho_old + p_first) > 0 and p_first @ m_inv @ (rho_old + p_first) > 0
                 and p_near @ m_inv @ (p_near + rho_new) > 0 and p_last @ m_inv @ (p_near + rho_new) > 0)
        y = [np.ascontiguousarray(a.T @ v) for v in (p_far, p_near, rho_old, p_first, p_last, rho_new)]
        assert merged_trajectory_persists(*y, np.ones(d)) == dense
        agree += dense
    assert 0 < agree < 300  # both outcomes occurred


def _apply(t, v):
    from workbench.mcmc.metric import to_position

    out = np.empty(v.size)
    to_position(t, np.ascontiguousarray(v), out)
    return out
