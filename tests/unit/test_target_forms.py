"""workbench/target_forms.py: a target's identified quantities keep the shape of the draws they
are computed from, and a BNN's are its outputs, unchanged by relabelling its hidden units."""

import numpy as np

import workbench as wb
from workbench.target_forms import Identified


def test_identified_quantities_keep_the_leading_shape():
    q = Identified(("sum", "first"), lambda x: np.column_stack([x.sum(axis=1), x[:, 0]]))
    draws = np.arange(24.0).reshape(2, 3, 4)
    out = q(draws)
    assert out.shape == (2, 3, 2)
    np.testing.assert_array_equal(out[1, 2], [draws[1, 2].sum(), draws[1, 2, 0]])


def test_a_bnns_outputs_do_not_see_a_permutation_of_its_hidden_units():
    t = wb.targets.bnn(n_data=20, widths=[3])
    theta = np.random.default_rng(0).standard_normal(t.dim)
    # layout: W0 (1 x 3), b0 (3), W1 (3 x 1), b1 (1); swap hidden units 0 and 2, flip unit 1's signs
    perm = theta.copy()
    w0, b0, w1 = theta[0:3], theta[3:6], theta[6:9]
    perm[0:3], perm[3:6], perm[6:9] = w0[[2, 1, 0]] * [1, -1, 1], b0[[2, 1, 0]] * [1, -1, 1], w1[[2, 1, 0]] * [1, -1, 1]
    assert abs(t.logp(perm) - t.logp(theta)) < 1e-9
    np.testing.assert_allclose(t.identified(perm), t.identified(theta), atol=1e-12)
    assert len(t.identified.names) == 50 and t.identified.held_out_log_density(theta[None]) < 0
