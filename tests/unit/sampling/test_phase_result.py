"""workbench/sampling/phase_result.py: what one phase tells the next, and what the phases
before the last carry into the run's report."""

import numpy as np

import workbench as wb
from workbench.result import Budget
from workbench.sampling.chain_sampler import Start, start_chains
from workbench.sampling.phase_result import PhaseNotes, adapted, diverged, joined, named_phase

TARGET = wb.targets.gaussian(dim=2, scales=np.array([0.1, 10.0]))


def _run(seed=0):
    return wb.methods.NUTS(metric="diag", warmup=100, draws=50, progress=False).run(TARGET, seed=seed)


def test_a_phase_diverged_in_its_draws_or_in_its_warmup():
    t = wb.targets.gaussian(dim=2)
    res = wb.methods.NUTS(metric="diag", warmup=100, draws=50, progress=False).run(t, seed=0)
    assert not diverged(res)
    res.stats["diverging"][1, 3] = 1.0
    assert diverged(res)
    res.stats["diverging"][:] = 0.0
    res.info["target_accept_raised_to"] = [0.8, 0.95]
    assert diverged(res)


def test_a_phase_hands_over_its_metric_its_median_step_and_its_raised_target_only_when_asked():
    res = _run()
    start = adapted(res)
    np.testing.assert_array_equal(start["inv_metric"], res.info["inv_mass"])
    assert start["step_size"] == float(np.median(res.info["step_size"]))
    # the scales learnt: about 0.01 and 100, not the identity's 1 and 1
    ratio = np.median(start["inv_metric"], axis=0) / np.array([0.01, 100.0])
    assert np.all((ratio > 1 / 3) & (ratio < 3))
    assert "target_accept" not in start
    res.info["target_accept_raised_to"] = [0.8, 0.95, 0.8, 0.8]
    assert "target_accept" not in adapted(res)
    assert adapted(res, keep_target=True)["target_accept"] == 0.95
    # a metric that is not finite and positive is not handed over
    res.info["inv_mass"] = np.full((4, 2), np.nan)
    assert "inv_metric" not in adapted(res)


def test_phases_draws_join_one_after_another_unless_their_chains_differ():
    a, b = np.zeros((4, 3, 2)), np.ones((4, 5, 2))
    both = joined([a, None, b])
    assert both.shape == (4, 8, 2) and np.all(both[:, 3:] == 1)
    assert joined([a, np.ones((2, 5, 2))]) is None and joined([None]) is None


def test_the_notes_keep_a_phases_faults_with_the_phase_they_came_from():
    res = _run()
    res.messages.extend(["NaN density at 3 points", "an unrelated message"])
    method = wb.methods.NUTS(metric="flow", chains=2, progress=False)
    plain = start_chains(method, None, TARGET, 0, Budget())
    notes = PhaseNotes.of_first(res, plain)
    assert notes.faults == ["warmup phase 1: NaN density at 3 points"]
    assert notes.first == [] and notes.info == {}
    # a start the method found itself is the run's first message, and its info the run's
    found = Start(np.zeros((2, 2)), None, 7, "started from somewhere", {"somewhere_grad_evals": 7})
    notes = PhaseNotes.of_first(res, start_chains(method, None, TARGET, 0, Budget(), found))
    assert notes.first == ["started from somewhere"] and notes.info == {"somewhere_grad_evals": 7}


def test_a_phases_warning_names_the_warmup_phase_it_came_from():
    """A warning raised inside a warmup phase says which, as the run's messages do; the last
    phase's own, and text the messages do not hold, stay as they are."""
    fault = "3 of 44 low_rank metric estimates were not finite or not positive definite"
    messages = ["metric='auto': the low-rank metric", f"warmup phase 1: {fault}", "R-hat 1.04 > 1.01"]
    assert named_phase(f"NUTS on sp500: {fault}", messages) == f"NUTS on sp500 (warmup phase 1): {fault}"
    assert named_phase("NUTS on sp500: R-hat 1.04 > 1.01", messages) == "NUTS on sp500: R-hat 1.04 > 1.01"
    assert named_phase("a warning without a colon", messages) == "a warning without a colon"
