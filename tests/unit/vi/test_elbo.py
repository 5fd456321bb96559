"""workbench/vi/elbo.py: the nn4post loss's hand-derived gradient (paper eq. 6-20) against finite differences of the
same Monte Carlo loss."""

import numpy as np
import pytest

import workbench as wb
from workbench.vi import elbo as E


def _loss_and_grads(t, a, mu, zeta, eta, r, gauge, exact):
    w = E.workspace(*mu.shape)
    loss, _, _ = E.loss_and_gradient(
        t.logp_grad, t.data, a, mu, zeta, eta, r, gauge, 0.0, exact, w["work"], w["comp"], w["shape"],
        w["grad_a"], w["grad_mu"], w["grad_zeta"],
    )
    return loss, (w["grad_a"].copy(), w["grad_mu"].copy(), w["grad_zeta"].copy())



@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("d", [1, 5])
@pytest.mark.parametrize(
    "gauge, r, exact",
    [(E.GAUGE_FIX_C, 1.0, True), (E.GAUGE_NONE, 1.0, True), (E.GAUGE_FIX_C, 0.6, True), (E.GAUGE_FIX_C, 1.0, False)],
    ids=["fix_c", "no_gauge", "r=0.6", "lower_bound"],
)
def test_hand_derived_gradient_matches_finite_differences_of_the_mc_loss(k, d, gauge, r, exact):
    """Common random numbers: the same eta in every evaluation, so the loss is a smooth function."""
    t = wb.targets.gaussian_mixture(d, n_components=2, seed=1)
    rng = np.random.default_rng(k * 10 + d)
    a, mu, zeta = rng.normal(size=k), rng.normal(size=(k, d)), 0.3 * rng.normal(size=(k, d))
    eta = rng.normal(size=(k, 4, d))
    _, grads = _loss_and_grads(t, a, mu, zeta, eta, r, gauge, exact)
    h = 1e-6
    for arr, g in zip((a, mu, zeta), grads):
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + h
            up = _loss_and_grads(t, a, mu, zeta, eta, r, gauge, exact)[0]
            arr[idx] = old - h
            down = _loss_and_grads(t, a, mu, zeta, eta, r, gauge, exact)[0]
            arr[idx] = old
            fd = (up - down) / (2 * h)
            assert abs(fd - g[idx]) < 1e-6 * max(1.0, abs(fd)), (idx, fd, g[idx])
