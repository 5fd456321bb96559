"""workbench/vi/pathfinder.py: the L-BFGS inverse Hessian against the BFGS recursion."""

import numpy as np

from workbench.vi import pathfinder as P


def test_compact_inverse_hessian_equals_the_bfgs_recursion():
    """Byrd-Nocedal-Schnabel's compact form (the paper's eq. II.2) is the BFGS update of
    diag(alpha) by the history pairs, applied one after the other."""
    rng = np.random.default_rng(1)
    d, m = 8, 4
    a = rng.standard_normal((d, d))
    hess = a @ a.T + d * np.eye(d)
    s = rng.standard_normal((d, m))
    z = hess @ s
    alpha = rng.uniform(0.05, 0.2, d)
    h = np.diag(alpha)
    for i in range(m):
        rho = 1.0 / (z[:, i] @ s[:, i])
        v = np.eye(d) - rho * np.outer(z[:, i], s[:, i])
        h = v.T @ h @ v + rho * np.outer(s[:, i], s[:, i])
    beta, gamma = P.inverse_hessian_factors(alpha, s, z)
    np.testing.assert_allclose(np.diag(alpha) + beta @ gamma @ beta.T, h, atol=1e-12)


def test_diagonal_update_keeps_the_exact_inverse_hessian():
    """Algorithm 3's update has the true inverse Hessian of a diagonal quadratic as a fixed point."""
    hess = np.array([1.0, 4.0, 100.0])
    s = np.array([0.3, -1.0, 0.2])
    np.testing.assert_allclose(P.update_diagonal(1.0 / hess, s, hess * s), 1.0 / hess)


def test_a_pair_without_positive_curvature_is_not_used():
    gaussians = P.PathGaussians(2, history_size=3)
    assert gaussians.add(np.zeros(2), np.zeros(2)) is None  # the start: no pair yet
    # the gradient of log p grows along the step: negative curvature of -log p
    assert gaussians.add(np.array([1.0, 0.0]), np.array([1.0, 0.0])) is None
    assert gaussians.rejected_pairs == 1 and not gaussians.s
    q = gaussians.add(np.array([2.0, 0.0]), np.array([0.5, 0.0]))
    assert q is not None and len(gaussians.s) == 1
