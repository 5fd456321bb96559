"""workbench/targets/mixture.py: the nn4post benchmark layout and the default peaks."""

import itertools
import math

import numpy as np

import workbench as wb

T = wb.targets


def test_mixture_truth_for_the_nn4post_benchmark_layout():
    t = T.gaussian_mixture(5, weights=[0.05, 0.25, 0.70], means=[-3.0, 0.0, 3.0], scales=math.log(2))
    np.testing.assert_allclose(t.truth.extras["component_weights"], [0.05, 0.25, 0.70])
    np.testing.assert_allclose(t.truth.mean, np.full(5, 0.05 * -3 + 0.70 * 3))
    comps = t.truth.extras["assign_component"](t.truth.sample(20_000, 1))
    np.testing.assert_allclose(np.bincount(comps) / 20_000, [0.05, 0.25, 0.70], atol=0.01)


def test_default_mixture_peaks_are_separated_and_unequal():
    for dim in (1, 2, 10, 100):
        t = T.gaussian_mixture(dim, n_components=3, seed=dim)
        mu = t.truth.extras["component_means"]
        s = t.truth.extras["component_scales"]
        gaps = [np.linalg.norm(mu[i] - mu[j]) for i, j in itertools.combinations(range(3), 2)]
        assert min(gaps) >= 6 * s.max() - 1e-12
        assert len(set(np.round(t.truth.extras["component_weights"], 6))) == 3
