"""workbench/running/threads.py: the share of a budget each parallel task may spend, and the early
warning of a run on course to take long (from its own pace), but not from a pace that is not
its time."""

import numpy as np
import pytest

import workbench as wb
from workbench.result import Budget
from workbench.running import threads
from workbench.running.threads import per_task_budget


def test_a_budget_is_shared_between_the_tasks_and_each_may_start():
    assert per_task_budget(Budget(), 4) == -1 and per_task_budget(Budget(grad_evals=10), 4) == 2
    assert per_task_budget(Budget(grad_evals=3), 4) == 1  # every chain may at least start


def test_the_duration_estimate_is_the_pace_of_the_done_iterations():
    from workbench.running.threads import LONG_RUN_SECONDS, duration_estimate, long_run_message

    assert duration_estimate(2.0, 0, 100) is None  # no pace before the first iteration
    assert duration_estimate(2.0, 10, 100) == pytest.approx(20.0)
    assert long_run_message("NN4Post on t", 2.0, 10, 100) is None  # 20 s: not long
    slow = long_run_message("NN4Post on t", 6.0, 2, 2000)  # 6,000 s
    assert LONG_RUN_SECONDS < 6000.0
    assert "NN4Post on t: 2 of 2,000 iterations in 6.0 s, so all 2,000 would take about 100 min" in slow
    assert "Ctrl-C" in slow


def test_a_run_on_course_to_take_long_says_so_while_it_runs(monkeypatch):
    """The warning comes from the polling loop while the tasks run (made immediate here by
    setting the thresholds to 0): each task waits until the warning has been given."""
    import threading
    import warnings

    from workbench.jit import C_PROGRESS
    monkeypatch.setattr(threads, "PACE_SECONDS", 0.0)
    monkeypatch.setattr(threads, "LONG_RUN_SECONDS", 0.0)
    controls = np.zeros((2, 2), dtype=np.int64)
    warned = threading.Event()

    def run_one(i):
        controls[i, C_PROGRESS] = 1
        return warned.wait(timeout=30.0)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        def watch():
            while not warned.is_set():
                if any(issubclass(w.category, wb.LongRunWarning) for w in caught):
                    warned.set()
                threading.Event().wait(0.01)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        outputs, interrupted = threads.run_in_threads(run_one, controls, 10, progress=False, description="Slow on t")
        warned.set()
    assert outputs == [True, True] and not interrupted
    long_runs = [w for w in caught if issubclass(w.category, wb.LongRunWarning)]
    assert len(long_runs) == 1 and "Slow on t" in str(long_runs[0].message)


def test_tasks_whose_progress_is_not_their_time_give_no_estimate(monkeypatch):
    """SMC's progress is its temperature, which grows faster as it goes: a pace from it would be
    wrong (17 min said for a 30 s run), so it asks for none (with every threshold at 0, nothing).
    Pathfinder does the same for its iteration cap; its runs here end before a pace is taken."""
    import warnings

    monkeypatch.setattr(threads, "PACE_SECONDS", 0.0)
    monkeypatch.setattr(threads, "LONG_RUN_SECONDS", 0.0)
    t = wb.targets.gaussian(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wb.methods.SMC(particles=200, runs=2, progress=False).run(t, seed=0)
    assert not [w for w in caught if issubclass(w.category, wb.LongRunWarning)]
