"""workbench/metrics/marginals.py: total variation of marginals against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.approximations import GaussianMixture


def test_marginal_accuracy_against_closed_form_total_variation():
    from scipy import stats

    from workbench.metrics.marginals import marginal_accuracy

    t = wb.targets.gaussian(3)
    shift = np.array([0.5, 0.0, 1.0])
    q = GaussianMixture([1.0], shift[None], np.ones((1, 3)))
    draws = q.sample(4000, np.random.default_rng(0))[None]
    fake = wb.Result(method="fake", target=t.name, draws=draws, cost=wb.Cost(0, 0, 0.0), param_names=t.param_names,
                     approximation=q)
    out = marginal_accuracy(fake, t)
    # TV between N(delta, 1) and N(0, 1) is 2 Phi(delta / 2) - 1; the grid covers 99% of the truth
    exact = np.mean(2 * stats.norm.cdf(shift / 2) - 1)
    assert out["tv_analytic"] == pytest.approx(exact, abs=0.01)
    assert abs(out["tv_kde"] - exact) < 0.05  # a KDE of 4,000 draws adds smoothing and noise
    assert out["_arrays"]["pdf_analytic"].shape == (3, out["_arrays"]["grid"].shape[1])


