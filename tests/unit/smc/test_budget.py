"""workbench/smc/budget.py: the pilot's size, and the runs sized from its cost per particle."""

import pytest

from workbench.smc import budget as B


def _pilot(cost_per_particle, jumped=False):
    """A stand-in for a pilot run whose ladder costs ``cost_per_particle`` a particle."""
    calls = []

    def run_pilot(n, cap):
        calls.append((n, cap))
        return {"grad_evals": min(cap, n * cost_per_particle), "jumped": jumped, "stages": {"beta": [0.1, 0.5, 1.0]}}

    return run_pilot, calls


def test_the_pilot_is_an_eighth_of_a_run_within_its_share_of_the_budget():
    assert B.pilot_particles(2000) == B.PILOT_MAX
    assert B.pilot_particles(200) == 25
    assert B.pilot_particles(20) == B.PILOT_MIN
    assert B.pilot_particles(2000, available=100_000) == 25  # a quarter of it at 1,000 a particle


def test_runs_that_fit_keep_their_particles_and_others_are_cut_to_fit():
    run_pilot, calls = _pilot(500)
    sizing = B.size_for_budget(run_pilot, particles=100, runs=4, available=10_000_000, what="SMC")
    assert sizing == (100, 12 * 500, None) and calls == [(12, 2_500_000)]
    run_pilot, _ = _pilot(500)
    sizing = B.size_for_budget(run_pilot, particles=2000, runs=4, available=1_000_000, what="SMC")
    pilot = 64 * 500
    assert sizing.pilot_grad_evals == pilot
    assert sizing.particles == int((1_000_000 - pilot) / (4 * 500 * B.MARGIN))
    assert pilot + 4 * sizing.particles * 500 * B.MARGIN <= 1_000_000 + 1e-6
    assert sizing.message.startswith(f"budget: {sizing.particles} particles per run, not 2000")


def test_budgets_that_cannot_pay_for_a_finished_ladder_are_refused():
    run_pilot, _ = _pilot(500, jumped=True)
    with pytest.raises(ValueError, match="did not finish its tempering ladder .* it reached b = 0.5 of 1"):
        B.size_for_budget(run_pilot, particles=2000, runs=4, available=1_000_000, what="SMC on x")
    run_pilot, _ = _pilot(1000)  # a pilot of 9 particles fits in a quarter of 36,000; 4 runs of 8 do not
    with pytest.raises(ValueError, match="4 run\\(s\\) of at least 8 particles need about 57,000"):
        B.size_for_budget(run_pilot, particles=2000, runs=4, available=36_000, what="SMC on x")
