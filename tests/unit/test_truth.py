"""workbench/truth.py: what a Truth derives from what it is given."""

import numpy as np
import pytest

import workbench as wb


def test_sd_and_cov_derive_from_each_other_and_samples_follow_them():
    t = wb.targets.gaussian(3, correlation=0.5, scales=[1.0, 2.0, 3.0])
    truth = t.truth
    np.testing.assert_allclose(np.sqrt(np.diag(truth.cov)), truth.sd)
    x = truth.sample(100_000, 0)
    np.testing.assert_allclose(np.cov(x.T), truth.cov, atol=0.05 * truth.cov.max())


def test_marginals_need_a_coordinate_in_range():
    truth = wb.targets.gaussian(2).truth
    assert truth.marginal_pdf(0, np.array([0.0]))[0] == pytest.approx(1 / np.sqrt(2 * np.pi))
    with pytest.raises((ValueError, IndexError), match="coordinate"):
        truth.marginal_pdf(5, np.array([0.0]))
