"""workbench/running/clock.py: compile time is timed apart from the run's wall time, which
stops when the run's output is made."""

from workbench.running.clock import PhasedClock, RunClock


def test_compiling_is_timed_apart_and_stop_freezes_the_wall_time():
    clock = RunClock()
    with clock.compiling():
        sum(range(10_000))
    clock.stop()
    wall = clock.wall_seconds
    assert clock.compile_seconds > 0 and wall >= 0 and clock.wall_seconds == wall  # frozen by stop()


def test_a_phased_runs_wall_time_is_its_total_less_its_compile_time():
    clock = PhasedClock(10.0, 3.0)
    assert clock.wall_seconds == 7.0 and clock.compile_seconds == 3.0
    assert PhasedClock(1.0, 3.0).wall_seconds == 0.0  # never negative


def test_time_spent_for_the_run_before_its_clock_started_is_counted():
    clock = RunClock()
    clock.include(wall_seconds=5.0, compile_seconds=2.0)
    clock.stop()
    assert clock.compile_seconds == 2.0 and 5.0 <= clock.wall_seconds < 6.0
