"""workbench/methods/base.py and sampling.py: a new method is one small class. The toy method of
docs/architecture.md, taken from the page as written, runs through evaluate and a study."""

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.methods.base import RunClock, check_positive, per_task_budget
from workbench.result import Budget
from workbench.study import Cell, Study, run_study

DOC = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"


@pytest.fixture(scope="module")
def toy_module(tmp_path_factory):
    """The doc's toy_mala.py written to a folder on sys.path (cache=True needs a real file)."""
    code = re.search(r"```python\n(import math\n.*?)```", DOC.read_text(), flags=re.S).group(1)
    body = [line for line in code.splitlines() if line.strip() and not line.startswith(("import ", "from "))]
    assert len(body) < 40, "the page promises a method in under 40 lines"
    assert max(len(line) for line in code.splitlines()) <= 100  # the project's line length
    folder = tmp_path_factory.mktemp("toy")
    (folder / "toy_mala.py").write_text(code)
    sys.path.insert(0, str(folder))
    try:
        import toy_mala

        yield toy_mala
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("toy_mala", None)


def test_the_toy_method_samples_a_gaussian_within_monte_carlo_error(toy_module):
    t = wb.targets.gaussian(dim=3)
    res = toy_module.MALA(step_size=1.0, progress=False).run(t, seed=1)
    assert res.method == "MALA" and res.draws.shape == (4, 1000, 3) and res.seed == 1
    # gradients counted by the kernel (one at the start and one per proposal, warmup apart), and
    # the mode search and the check of each chain's starting point before it (part of warmup's cost)
    search = res.info["peaks"]["grad_evals"]
    assert search > 0 and res.info["peaks"]["found"] == 1
    assert res.cost.grad_evals == 4 * (1 + 2000) + 4 + search
    assert res.cost.warmup_grad_evals == 4 * (1 + 1000) + 4 + search
    assert res.cost.compile_seconds >= 0 and res.warmup_draws.shape == (4, 1000, 3)
    row = wb.metrics.evaluate(res, t)
    mcse = 1 / math.sqrt(row["ess_bulk_min"])  # in sd units
    assert row["mean_err_max"] < 4 * mcse and row["sd_err_max"] < 8 * mcse and res.messages == []
    assert "diagnostics" in res.info and res.to_arviz().posterior["theta"].shape == (4, 1000, 3)


def test_the_toy_method_honours_a_gradient_budget_and_a_too_small_step_is_unhealthy(toy_module):
    t = wb.targets.gaussian(dim=3)
    res = toy_module.MALA(step_size=1.0, progress=False).run(t, seed=1, grad_budget=2000)
    assert res.cost.grad_evals <= 2000 and any(m.startswith("gradient budget 2000 spent") for m in res.messages)
    slow = toy_module.MALA(step_size=0.01, warmup=100, draws=300, progress=False).run(t, seed=1)
    assert any(m.startswith(("R-hat", "low ESS")) for m in slow.messages)
    with pytest.raises(ValueError, match="step_size"):
        toy_module.MALA(step_size=-1.0)


def test_the_toy_method_runs_in_a_study_named_by_its_import_path(toy_module, tmp_path):
    target = {"factory": "gaussian", "dim": 2}
    study = Study(name="toy_study", title="toy", grid=lambda quick: [
        Cell(target, {"method": "toy_mala:MALA", "step_size": 0.8, "chains": 2, "warmup": 300, "draws": 500,
                       "progress": False}, seed, 4000,
             labels={"method": "MALA"}, extra="chain_scaling")
        for seed in (0, 1)])
    run = run_study(study, out=tmp_path, executor="serial", progress=False)
    assert list(run.table["status"]) == ["ok", "ok"]
    assert (run.table["grad_evals"] <= 4000 + 4).all() and (run.table["acceptance"] > 0.5).all()
    with pytest.raises(ValueError, match="toy_mala:Nope"):
        wb.methods.build_method({"method": "toy_mala:Nope"})


def test_methods_are_found_by_name_and_bad_names_say_which_exist():
    assert isinstance(wb.methods.build_method({"method": "NUTS", "chains": 2}), wb.methods.NUTS)
    with pytest.raises(ValueError, match="unknown method 'NUTZ'.*NUTS"):
        wb.methods.build_method({"method": "NUTZ"})
    assert {"NUTS", "NN4Post", "Laplace"} <= set(wb.methods.available())


def test_budget_split_clock_and_positive_checks():
    assert per_task_budget(Budget(), 4) == -1 and per_task_budget(Budget(grad_evals=10), 4) == 2
    assert per_task_budget(Budget(grad_evals=3), 4) == 1  # every chain may at least start
    clock = RunClock()
    with clock.compiling():
        sum(range(10_000))
    clock.stop()
    wall = clock.wall_seconds
    assert clock.compile_seconds > 0 and wall >= 0 and clock.wall_seconds == wall  # frozen by stop()
    for bad in (0, -1.0, math.nan, math.inf, "1", True):
        with pytest.raises(ValueError, match="step"):
            check_positive("step", bad)
    check_positive("step", None, allow_none=True)


def test_settings_are_plain_data():
    q = wb.approximations.StudentT(np.zeros(2), np.eye(2), df=5)
    s = wb.methods.IndependenceMH(proposal=q).settings()
    assert s["proposal"].startswith("StudentT#") and s["chains"] == 4
    assert wb.methods.NUTS(init=np.zeros(2)).settings()["init"] == [0.0, 0.0]


def test_a_run_that_cannot_fit_in_memory_is_refused_before_it_starts(monkeypatch):
    import workbench.methods.base as B

    monkeypatch.setattr(B, "available_memory", lambda: 10**9)  # a machine with 1 GB free
    t = wb.targets.gaussian(dim=20_000)
    with pytest.raises(B.TooLargeError, match=r"NUTS on 'gaussian_isotropic' \(d = 20,000\) would need about 1.92 GB "
                                              r"\(chain draws 0.96 GB, kept draws 0.96 GB\); 1 GB are available"):
        wb.methods.NUTS(chains=3, warmup=1000, draws=1000).run(t, seed=0)
    with pytest.raises(B.TooLargeError, match=r"FullRankVI .*\(fit \(d\^2 parameters\) 35.2 GB"):
        wb.methods.FullRankVI().run(t, seed=0)
    with pytest.raises(B.TooLargeError, match=r"BatchAndMatch .*\(update \(d x d matrices\) 32 GB"):
        wb.methods.BatchAndMatch().run(t, seed=0)
    # what fits is not refused: Exact's 2 x 100 draws are 32 MB
    assert wb.methods.Exact(chains=2, draws=100).run(t, seed=0).draws.shape == (2, 100, 20_000)


def test_settings_record_an_object_by_its_content_not_its_type_alone():
    """Two proposals of one type must not share a cache key."""
    a = wb.methods.IndependenceMH(proposal=wb.approximations.Gaussian(np.zeros(2), np.eye(2)))
    b = wb.methods.IndependenceMH(proposal=wb.approximations.Gaussian(np.zeros(2), 2.0 * np.eye(2)))
    again = wb.methods.IndependenceMH(proposal=wb.approximations.Gaussian(np.zeros(2), np.eye(2)))
    assert a.settings()["proposal"].startswith("Gaussian#")
    assert a.settings()["proposal"] != b.settings()["proposal"]
    assert a.settings()["proposal"] == again.settings()["proposal"]


def test_the_duration_estimate_is_the_pace_of_the_done_iterations():
    from workbench.methods.base import LONG_RUN_SECONDS, duration_estimate, long_run_message

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
    from workbench.methods import base

    monkeypatch.setattr(base, "PACE_SECONDS", 0.0)
    monkeypatch.setattr(base, "LONG_RUN_SECONDS", 0.0)
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
        outputs, interrupted = base.run_in_threads(run_one, controls, 10, progress=False, description="Slow on t")
        warned.set()
    assert outputs == [True, True] and not interrupted
    long_runs = [w for w in caught if issubclass(w.category, wb.LongRunWarning)]
    assert len(long_runs) == 1 and "Slow on t" in str(long_runs[0].message)


def test_tasks_whose_progress_is_not_their_time_give_no_estimate(monkeypatch):
    """SMC's progress is its temperature, which grows faster as it goes: a pace from it would be
    wrong (17 min said for a 30 s run), so it asks for none (with every threshold at 0, nothing).
    Pathfinder does the same for its iteration cap; its runs here end before a pace is taken."""
    import warnings

    from workbench.methods import base

    monkeypatch.setattr(base, "PACE_SECONDS", 0.0)
    monkeypatch.setattr(base, "LONG_RUN_SECONDS", 0.0)
    t = wb.targets.gaussian(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wb.methods.SMC(particles=200, runs=2, progress=False).run(t, seed=0)
    assert not [w for w in caught if issubclass(w.category, wb.LongRunWarning)]
