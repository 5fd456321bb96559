"""workbench/mcmc/flow_rows.py: a row takes the coefficients its draws need, and no others."""

import numpy as np

from workbench.mcmc.flow import Coupling
from workbench.mcmc.flow_rows import select_rows


def _draws(rng, n=600):
    """y_0, y_1 standard normal drivers; y_2 = exp(0.5 y_0) z (a funnel's row: a scale only);
    y_3 = z + 0.4 y_1^2 (a banana's row: a quadratic shift only), with their exact scores."""
    u = rng.standard_normal((n, 2))
    z = rng.standard_normal((n, 2))
    y = np.column_stack([u, np.exp(0.5 * u[:, 0]) * z[:, 0], z[:, 1] + 0.4 * u[:, 1] ** 2])
    h = np.column_stack([np.zeros(n), np.zeros(n), -y[:, 2] * np.exp(-u[:, 0]), -(y[:, 3] - 0.4 * u[:, 1] ** 2)])
    return y, h + 0.05 * rng.standard_normal(h.shape)  # scores a little off, as a finite fit's are


def test_each_row_takes_what_its_draws_need_and_nothing_else():
    y, h = _draws(np.random.default_rng(0))
    b_idx, parents = np.array([2, 3]), np.array([[0, 1], [0, 1]])
    layer = Coupling.identity(b_idx, parents)
    coef, use = layer.params(), np.zeros(layer.params().size)
    select_rows(y, h, np.ones(len(y)), b_idx, parents, coef, use)
    fitted = layer.with_params(coef)
    # the funnel's row: log-scale 0.5 on its first parent, no shift
    assert abs(fitted.W[0, 0] - 0.5) < 0.02 and fitted.W[0, 1] == 0.0
    assert not fitted.U[0].any() and not fitted.Q[0].any() and not fitted.V[0].any()
    # the banana's row: a quadratic shift of 0.4 on its second parent (before the scale: t = -0.4 u^2
    # undoes it), no scale dependence
    assert abs(abs(fitted.Q[1, 1]) - 0.4) < 0.02 and not fitted.W[1].any() and not fitted.Q[1, 0]
