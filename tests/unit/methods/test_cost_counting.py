"""Every method's cost counts every call it makes of the target's density: a target that
counts its own calls (``counted``, conftest.py: an atomic counter, the chains run on threads)
is run by every method, with and without a gradient budget, and no method passes a budget by
more than 2%."""

import warnings

import numpy as np
import pytest

import workbench as wb

PROPOSAL = wb.approximations.Gaussian(np.zeros(3), 4.0 * np.eye(3))
QUIET = {"progress": False}
METHODS = {  # name -> (method, a budget that binds)
    "Exact": (lambda: wb.methods.Exact(chains=2, draws=100), None),
    "RandomWalkMH": (lambda: wb.methods.RandomWalkMH(chains=2, warmup=500, draws=2000, **QUIET), 2000),
    "IndependenceMH": (lambda: wb.methods.IndependenceMH(proposal=PROPOSAL, chains=2, warmup=500, draws=2000), 2000),
    "HMC": (lambda: wb.methods.HMC(chains=2, warmup=200, draws=1000, **QUIET), 3000),
    "NUTS": (lambda: wb.methods.NUTS(chains=2, warmup=200, draws=1000, **QUIET), 3000),
    "MAMS": (lambda: wb.methods.MAMS(chains=2, warmup=200, draws=1000, **QUIET), 3000),
    "MCLMC": (lambda: wb.methods.MCLMC(chains=2, warmup=300, draws=2000, **QUIET), 3000),
    "ImportanceSampling": (lambda: wb.methods.ImportanceSampling(proposal=PROPOSAL, n=5000, **QUIET), 2000),
    "RejectionSampling": (lambda: wb.methods.RejectionSampling(proposal=PROPOSAL, n=3000), 2000),
    "Laplace": (lambda: wb.methods.Laplace(), None),
    "MeanFieldVI": (lambda: wb.methods.MeanFieldVI(steps=2000, draws=300, **QUIET), 3000),
    "NN4Post": (lambda: wb.methods.NN4Post(n_components=2, steps=2000, draws=300, **QUIET), 3000),
    "FullRankVI": (lambda: wb.methods.FullRankVI(steps=2000, draws=300, **QUIET), 3000),
    "DADVI": (lambda: wb.methods.DADVI(draws=300), 600),
    "BatchAndMatch": (lambda: wb.methods.BatchAndMatch(draws=300, **QUIET), 600),
    "GMMVI": (lambda: wb.methods.GMMVI(steps=100, draws=300, **QUIET), 3000),
    "Pathfinder": (lambda: wb.methods.Pathfinder(paths=2, draws=200, **QUIET), 1000),
    "SMC": (lambda: wb.methods.SMC(particles=100, **QUIET), 200_000),
}


def test_every_method_is_in_the_table():
    assert set(METHODS) == set(wb.methods.available())


@pytest.mark.parametrize("name", sorted(METHODS))
@pytest.mark.parametrize("with_budget", [False, True], ids=["no budget", "budget"])
def test_the_cost_is_every_call_of_the_density(counted, name, with_budget):
    target, counter = counted
    make, budget = METHODS[name]
    if with_budget and budget is None:
        pytest.skip(f"{name} takes no gradient budget")
    before = int(counter[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the methods' health warnings are not the point here
        res = make().run(target, seed=0, grad_budget=budget if with_budget else None)
    calls = int(counter[0]) - before
    assert res.cost.grad_evals == calls and res.cost.logp_evals == calls
    if with_budget:
        assert calls <= 1.02 * budget
