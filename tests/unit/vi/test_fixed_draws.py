"""workbench/vi/fixed_draws.py: DADVI's fixed-draw objective and its gradient."""

import numpy as np

import workbench as wb
from workbench.vi import fixed_draws as FD


def test_the_objective_and_its_gradient_agree_with_central_differences():
    t = wb.targets.gaussian(4, correlation=0.5)
    rng = np.random.default_rng(0)
    eta = rng.standard_normal((7, 4))
    for full_rank in (False, True):
        objective = FD.FixedDrawsObjective(FD.fixed_draws_objective.for_target(t), t, eta, full_rank)
        lam = 0.3 * rng.standard_normal(FD.n_params(4, full_rank))
        f, grad = objective.value_and_grad(lam)
        numeric = np.empty_like(lam)
        for k in range(lam.size):
            e = np.zeros_like(lam)
            e[k] = 1e-6
            numeric[k] = (objective.value_and_grad(lam + e)[0] - objective.value_and_grad(lam - e)[0]) / 2e-6
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)
        assert objective.grad_evals == 7 * (1 + 2 * lam.size)  # every draw of every call counted
        # the per-draw terms average to the gradient
        np.testing.assert_allclose(objective.per_draw_gradients(lam).mean(axis=0), grad, atol=1e-12)
