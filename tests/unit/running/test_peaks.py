"""peaks.py: chains start apart where the mode search finds several peaks, so that a run
stuck in one peak is flagged, and a peak no chain visited is named."""

import numpy as np
import pytest

import workbench as wb
from workbench.diagnostics import health_flags
from workbench.modes import Mode, ModeSearch
from workbench.running.peaks import unvisited_message

TWO_PEAKS = wb.targets.gaussian_mixture(dim=2, n_components=2, seed=0)  # peaks 22 sds apart


@pytest.mark.parametrize("method", [wb.methods.NUTS(), wb.methods.HMC(), wb.methods.MAMS(),
                                    wb.methods.RandomWalkMH()], ids=lambda m: m.name)
def test_a_sampler_stuck_in_one_of_two_peaks_is_flagged(method):
    """From the initial point every chain found the nearer peak and R-hat saw nothing (NUTS's
    mean 1.4 sds off with its health "ok"); started at the two peaks the search finds, the
    chains disagree and R-hat says so."""
    res = method.run(TWO_PEAKS, seed=0)
    centres = TWO_PEAKS.truth.extras["component_means"]
    near = [int(np.argmin(np.linalg.norm(centres - c.mean(axis=0), axis=1))) for c in res.draws]
    assert set(near) == {0, 1}  # the chains sit in both peaks
    assert "R-hat" in health_flags(res.messages).split(", ")


def test_a_one_peak_posterior_starts_where_it_did_and_pays_for_the_search():
    t = wb.targets.gaussian(dim=3)
    res = wb.methods.NUTS(metric="diag", chains=4).run(t, seed=1)
    assert res.info["peaks"]["found"] == 1 and res.info["peaks"]["grad_evals"] > 0
    assert health_flags(res.messages) == "ok"


def test_a_peak_no_draw_came_near_is_named():
    peaks = ModeSearch([Mode(np.array([0.0, 0.0]), 0.0, np.ones(2), 0.0, 1),
                        Mode(np.array([20.0, 0.0]), 0.0, np.ones(2), -0.5, 1),
                        Mode(np.array([0.0, 20.0]), 0.0, np.ones(2), -12.0, 1)], 100, 3, 0, 0, 0)
    draws = np.random.default_rng(0).normal(size=(2, 500, 2))  # all in the first peak
    (message,) = unvisited_message(peaks, draws)
    # the second peak (weight 0.38) is named; the third (weight 4e-6) is too light to ask for
    assert message.startswith("peaks unvisited") and "no draw came near 1 of them (Laplace weights 0.38)" in message
    draws[1] += [20.0, 0.0]
    assert unvisited_message(peaks, draws) == []


def test_a_fit_whose_budget_leaves_no_room_for_the_peak_search_says_so():
    from workbench.running.peaks import approximation_peaks

    t = wb.targets.gaussian_mixture(dim=2, n_components=3, seed=0)
    draws = np.zeros((1, 10, 2))
    messages, spent = approximation_peaks(t, draws, 0, None)
    assert spent == 0 and health_flags(messages) == "search cut short"
    messages, spent = approximation_peaks(t, draws, 0, 5_000)
    assert spent > 0 and health_flags(messages) == "peaks unvisited"  # every draw at the origin: its peaks unvisited
