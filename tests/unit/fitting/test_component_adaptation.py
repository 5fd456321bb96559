"""workbench/methods/component_adaptation.py: components moved to missed peaks, removed ones stay removed."""

import numpy as np
import pytest

import workbench as wb


def test_component_adaptation_moves_a_spare_component_to_a_missed_peak():
    """The search is cut to its first run, which finds only the heavier peak; the duplicates
    there are freed, one moves to the peak found by ascent from the worst-covered candidate, the
    other is removed. Without adaptation the light peak stays missed (in 2-d a spare component
    also wanders there on its own)."""
    m = wb.targets.gaussian_mixture(5, weights=[0.3, 0.7], means=[-2.5, 2.5], scales=1.0)
    common = dict(n_components=3, search_starts=0, progress=False)
    on = wb.methods.NN4Post(**common).run(m, seed=0, grad_budget=60_000)
    off = wb.methods.NN4Post(adapt_components=False, **common).run(m, seed=0, grad_budget=60_000)
    assert on.info["mode_search"]["modes"] == 1
    assert wb.metrics.evaluate(on, m)["mode_weight_err_max"] < 0.02
    assert wb.metrics.evaluate(off, m)["mode_weight_err_max"] > 0.25
    kinds = [move["kind"] for move in on.info["component_moves"]]
    assert kinds.count("moved") == 1 and on.stats["component_moves"].sum() == 1
    assert on.cost.grad_evals <= 60_000 and "component_moves" not in off.info


def test_removed_components_stay_removed_and_their_weight_goes_to_a_live_twin():
    """On a unimodal target the spare components duplicate the first; each removal hands its
    weight to a live twin, and a removed component never regains weight (sharing a peak is a
    flat direction of the loss, so a frozen-but-weighted component would drift back)."""
    t = wb.targets.gaussian(10, scales="logspace")
    res = wb.methods.NN4Post(progress=False).run(t, seed=0, grad_budget=100_000)
    moves = res.info["component_moves"]
    removed = {m["component"] for m in moves if m["kind"] == "removed"}
    assert removed
    weights = res.approximation.weights
    assert np.all(weights[list(removed)] < 1e-9)
    assert weights.sum() == pytest.approx(1.0) and len(removed) < len(weights)
    assert wb.metrics.evaluate(res, t)["mean_err_max"] < 0.1


def test_spare_components_start_at_the_heaviest_mode_with_a_negligible_weight():
    from workbench import modes as M
    from workbench.fitting.component_adaptation import components_from_modes

    t = wb.targets.gaussian_mixture(2, weights=[0.2, 0.8], means=[-4.0, 4.0], scales=[1.0, 0.5])
    search = M.find_modes(t, np.random.default_rng(0), starts=50)
    a, mu, sd = components_from_modes(search, 4, np.random.default_rng(0), spare_weight=1e-4)
    w = np.exp(a) / np.exp(a).sum()
    np.testing.assert_allclose(w[:2] / w[:2].sum(), [0.8, 0.2], atol=1e-6)  # the modes' Laplace shares
    np.testing.assert_allclose(w[2:] / w[0], 1e-4 / 0.8)
    # one local sd (Mahalanobis) from the heaviest mode, at its scales
    np.testing.assert_allclose(np.sum(((mu[2:] - mu[0]) / sd[0]) ** 2, axis=1), 1.0)
    np.testing.assert_allclose(sd[2:], sd[[0, 0]])
