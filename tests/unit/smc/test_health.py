"""workbench/smc/health.py: an SMC run's own health signals (few particles, runs that disagree
beyond their errors, moves that leave the particles where they were)."""

import numpy as np

from workbench.smc.health import (
    RUNS_DISAGREE,
    disagreement_message,
    few_particles_message,
    particles_needed,
    runs_disagreement,
    stuck_moves_message,
)


def test_the_particles_a_run_needs_grow_with_the_dimension_from_a_floor():
    assert particles_needed(2) == 100 and particles_needed(11) == 220
    assert few_particles_message(220, 11) == []
    (message,) = few_particles_message(50, 11)
    assert message.startswith("few particles: 50 particles a run at d = 11, fewer than the 220")


def test_runs_that_disagree_beyond_their_errors_are_flagged():
    """Four runs in one peak each of a 3-peak mixture: their means differ by many standard errors."""
    rng = np.random.default_rng(0)
    same = [rng.normal(size=(500, 2)) for _ in range(4)]
    flat = [np.zeros(500)] * 4
    chi = runs_disagreement(same, flat)
    assert chi.shape == (2,) and chi.max() < 3.0  # chi-square per degree of freedom, about 1
    assert disagreement_message(chi, ("a", "b")) == []
    apart = [x + shift for x, shift in zip(same, ([0, 0], [5, 0], [0, 5], [0, 0]))]
    (message,) = disagreement_message(runs_disagreement(apart, flat), ("a", "b"))
    assert message.startswith("runs disagree: the independent runs' means of")


def test_the_standard_errors_come_from_the_weights_ess():
    """A shift that equal weights would call significant is within the errors of runs whose
    weights sit on a few particles (an ESS of about 10, not 500)."""
    rng = np.random.default_rng(1)
    runs = [rng.normal(size=(500, 1)) + shift for shift in (0.0, 0.3)]
    flat = [np.zeros(500)] * 2
    peaked = [np.where(np.arange(500) < 10, 0.0, -50.0)] * 2
    assert runs_disagreement(runs, flat)[0] > RUNS_DISAGREE
    assert runs_disagreement(runs, peaked)[0] < runs_disagreement(runs, flat)[0] / 20
    assert runs_disagreement(runs[:1], flat[:1]).size == 0  # one run: nothing to compare


def test_moves_that_leave_the_particles_where_they_started_are_flagged():
    def output(last):
        return {"stages": {"correlation": [0.9, 0.5, last]}}

    assert stuck_moves_message([output(0.05), output(0.1)]) == []
    (message,) = stuck_moves_message([output(0.05), output(0.45)])
    assert message.startswith("moves stuck: at the last temperature of 1 of 2 runs") and "0.45" in message
