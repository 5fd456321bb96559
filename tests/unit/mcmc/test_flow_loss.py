"""workbench/mcmc/flow_loss.py: a layer's Fisher loss and its gradient against finite
differences, and the layer applied to draws against the flow's own inverse."""

import numpy as np
import pytest

from workbench.mcmc.flow import Coupling, Flow
from workbench.mcmc.flow_loss import draw_losses, fisher_loss, layer_apply, layer_loss


@pytest.fixture
def case():
    rng = np.random.default_rng(0)
    y, h = rng.standard_normal((40, 6)), rng.standard_normal((40, 6))
    b_idx, parents = np.array([1, 3, 4]), np.array([[0, 2], [2, 5], [0, -1]])
    coef = 0.3 * rng.standard_normal(Coupling.identity(b_idx, parents).params().size)
    return y, h, b_idx, parents, coef


@pytest.mark.parametrize("delta", [1e300, 3.0])  # the plain loss, and Huber's
def test_the_loss_gradient_matches_finite_differences(case, delta):
    y, h, b_idx, parents, coef = case
    grad, scratch = np.empty(coef.size), np.empty(coef.size)
    layer_loss(y, h, b_idx, parents, coef, 0.01, delta, grad)
    step = 1e-6
    numeric = np.array([(layer_loss(y, h, b_idx, parents, coef + e, 0.01, delta, scratch)
                         - layer_loss(y, h, b_idx, parents, coef - e, 0.01, delta, scratch)) / (2 * step)
                        for e in step * np.eye(coef.size)])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


def test_applying_a_layer_is_the_flows_inverse_and_its_loss_the_layers(case):
    y, h, b_idx, parents, coef = case
    z, hz = np.empty_like(y), np.empty_like(h)
    layer_apply(y, h, b_idx, parents, coef, z, hz)
    layer = Coupling.identity(b_idx, parents).with_params(coef)
    np.testing.assert_allclose(Flow(np.zeros(6), np.ones(6), (layer,)).inverse(y), z, atol=1e-12)
    assert fisher_loss(z, hz) == pytest.approx(layer_loss(y, h, b_idx, parents, coef, 0.0, 1e300, np.empty(coef.size)))
    huber = draw_losses(z, hz, 2.0)
    plain = draw_losses(z, hz)
    assert np.all(huber <= plain + 1e-12) and np.all((huber == plain) | (plain > 4.0))
