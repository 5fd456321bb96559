"""workbench/methods/metropolis.py: random-walk and independence Metropolis."""

import numpy as np
import pytest
from scipy import stats

import workbench as wb
from tests.statistical.test_samplers import assert_moments_within_mcse

DIAGONAL = wb.targets.gaussian(10, scales="logspace")


class _DroppedHastings:
    """A proposal whose logpdf lies (constant): IMH then ignores q, which must go wrong."""

    def __init__(self, q):
        self.q = q

    def sample(self, n, rng):
        return self.q.rvs(size=n, random_state=rng).reshape(n, -1)

    def logpdf(self, x):
        return np.zeros(len(x))



def test_random_walk_adapts_toward_0234():
    res = wb.methods.RandomWalkMH(chains=2, warmup=3000, draws=4000).run(DIAGONAL, seed=5)
    assert res.stats["accept_prob"].mean() == pytest.approx(0.234, abs=0.05)


def test_independence_mh_with_an_asymmetric_proposal_is_corrected_by_hastings():
    t = wb.targets.gaussian(1)
    q = stats.norm(1.0, 1.5)  # shifted and wider: asymmetric with respect to the target
    good = wb.methods.IndependenceMH(proposal=q, chains=4, draws=5000).run(t, seed=4)
    assert_moments_within_mcse(good, t)
    bad = wb.methods.IndependenceMH(proposal=_DroppedHastings(q), chains=4, draws=5000).run(t, seed=4)
    with pytest.raises(AssertionError):
        assert_moments_within_mcse(bad, t)
