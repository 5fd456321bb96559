"""workbench/mcmc/flow.py: the flow's maps and the transformed density's score, against finite
differences and round trips."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc.flow import Coupling, Flow, finite_rows, flow_density, gradients, gradients_at, pack_with_target


def _layer(rng, b_idx, parents):
    layer = Coupling.identity(b_idx, parents)
    return layer.with_params(0.3 * rng.standard_normal(layer.params().size))


@pytest.fixture
def flow():
    rng = np.random.default_rng(0)
    layers = (_layer(rng, [1, 3, 4], [[0, 2], [2, 5], [0, -1]]), _layer(rng, [0, 2, 5], [[1, -1], [3, 4], [4, 1]]),
              _layer(rng, np.arange(6), np.full((6, 1), -1)))
    return Flow(rng.standard_normal(6), np.exp(0.3 * rng.standard_normal(6)), layers)


def test_the_inverse_undoes_the_forward_map(flow):
    z = np.random.default_rng(1).standard_normal((20, 6))
    np.testing.assert_allclose(flow.inverse(flow.forward(z)), z, atol=1e-12)
    assert flow.forward(z.reshape(4, 5, 6)).shape == (4, 5, 6)


def test_the_transformed_densitys_score_and_log_determinant_are_right(flow):
    """log q(z) = log p(T(z)) + log |det dT/dz|: its gradient against central differences, and the
    log-determinant against the Jacobian's, by differences of T."""
    t = wb.targets.gaussian(dim=6, correlation=0.3)
    density = flow_density(t.kernel_logp_grad)
    data = pack_with_target(flow, *t.kernel_data)
    rng = np.random.default_rng(2)
    for z in rng.standard_normal((3, 6)):
        grad = np.empty(6)
        value = density(z, grad, data)
        h = 1e-6
        numeric = [(density(z + e, np.empty(6), data) - density(z - e, np.empty(6), data)) / (2 * h)
                   for e in h * np.eye(6)]
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)
        jac = np.column_stack([(flow.forward(z + e) - flow.forward(z - e)) / (2 * h) for e in h * np.eye(6)])
        assert value == pytest.approx(t.logp(flow.forward(z)) + np.linalg.slogdet(jac)[1], abs=1e-6)


def test_where_the_flow_overflows_the_density_is_minus_infinity_not_nan(flow):
    """Far out in z a coupling's exp(scale) overflows and T(z) is inf: the latent density there
    is -inf (a rejected proposal), never NaN (which would read as a fault of the target)."""
    t = wb.targets.gaussian(dim=6, correlation=0.3)
    density = flow_density(t.kernel_logp_grad)
    data = pack_with_target(flow, *t.kernel_data)
    grad = np.full(6, np.nan)
    with np.errstate(all="ignore"):
        value = density(np.full(6, 1e300), grad, data)
    assert value == -np.inf and np.all(grad == 0.0)
    assert np.isfinite(density(np.zeros(6), grad, data))


def test_a_compacted_layer_is_the_same_map():
    rng = np.random.default_rng(3)
    layer = _layer(rng, [1, 2], [[0, 3], [3, 0]])
    layer = layer._replace(W=layer.W * [[1, 0], [0, 1]], U=layer.U * 0, Q=layer.Q * 0, V=layer.V * [[1, 0], [0, 0]],
                           R=layer.R * 0)
    compact = layer.compact()
    assert compact.parents.tolist() == [[0], [0]]  # the second row keeps its second parent only
    z = rng.standard_normal((5, 4))
    np.testing.assert_allclose(Flow(np.zeros(4), np.ones(4), (compact,)).forward(z),
                               Flow(np.zeros(4), np.ones(4), (layer,)).forward(z), atol=1e-14)


def test_gradients_at_many_points_are_the_targets():
    t = wb.targets.banana()
    x = np.random.default_rng(4).standard_normal((7, 2))
    logps, grads = np.empty(7), np.empty((7, 2))
    gradients_at.for_target(t)(t.kernel_logp_grad, t.kernel_data, x, logps, grads)
    for i in range(7):
        lp, g = t.logp_and_grad(x[i])
        assert logps[i] == pytest.approx(lp) and np.allclose(grads[i], g)


def test_gradients_at_many_points_and_the_rows_a_fit_may_learn_from():
    """One compiled call: N(0, diag(4, 1)) has log p = -x^T S^-1 x / 2 + const, gradient -S^-1 x; a
    row whose gradient is not finite is dropped with its draw."""
    target = wb.targets.gaussian(2, scales=np.array([2.0, 1.0]))
    x = np.array([[0.0, 0.0], [2.0, 1.0], [np.nan, 0.0]])
    logp, g = gradients(target, x)
    np.testing.assert_allclose(g[:2], -x[:2] / np.array([4.0, 1.0]))
    assert logp[0] - logp[1] == pytest.approx(0.5 * (1.0 + 1.0))
    kept_x, kept_g = finite_rows(x, g)
    np.testing.assert_array_equal(kept_x, x[:2])
    np.testing.assert_array_equal(kept_g, g[:2])

