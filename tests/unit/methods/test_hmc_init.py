"""HMC and NUTS started by Pathfinder: where the chains start, the metric they start with,
and what it costs."""

import numpy as np
import pytest

import workbench as wb


def test_nuts_starts_from_pathfinder_draws_and_variances():
    target = wb.targets.gaussian(dim=5, correlation=0.5, scales=np.array([0.1, 0.5, 1.0, 2.0, 4.0]))
    fit = wb.methods.Pathfinder(draws=3, progress=False)
    result = wb.methods.NUTS(init="pathfinder", chains=3, warmup=0, draws=50, step_size=0.05,
                             progress=False).run(target, seed=2)
    spent = result.info["pathfinder_grad_evals"]
    assert spent > 0
    assert result.cost.warmup_grad_evals == spent  # no warmup iterations: only Pathfinder's
    assert result.cost.grad_evals > spent
    assert "Pathfinder" in result.messages[0]
    # with no warmup the metric stays the Pathfinder Gaussian's variances
    reference = fit.run(target, seed=int(np.random.SeedSequence([2, 0x9A7F]).generate_state(1)[0]))
    np.testing.assert_allclose(result.info["inv_mass"], np.tile(reference.approximation.sd ** 2, (3, 1)))
    assert reference.cost.grad_evals == spent


def test_pathfinder_start_under_a_budget():
    target = wb.targets.logistic_regression(dataset="breast_cancer")
    result = wb.methods.HMC(init="pathfinder", progress=False).run(target, seed=0, grad_budget=3000)
    # Pathfinder may spend a tenth; the chains the rest, each finishing the transition (at most
    # 8 leapfrog steps jittered by 30%) it was in when its share ran out (mcmc/chains.py)
    assert result.info["pathfinder_grad_evals"] <= 300
    assert result.cost.grad_evals <= 3000 + 4 * 11


def test_init_pathfinder_is_only_for_hamiltonian_samplers():
    with pytest.raises(ValueError, match="init='pathfinder' is for HMC and NUTS"):
        wb.methods.RandomWalkMH(init="pathfinder", progress=False).run(wb.targets.gaussian(dim=2), seed=0)
    with pytest.raises(ValueError, match="init='other' is not a starting point"):
        wb.methods.NUTS(init="other", progress=False).run(wb.targets.gaussian(dim=2), seed=0)
