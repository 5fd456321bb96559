"""workbench/study/runner.py: executors (serial, local pool, a real Dask LocalCluster), the cache, resuming, failing
cells, references."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import workbench.study.runner as runner_module
from tests.study_fixtures import STUDY_FILE, TINY
from workbench.study import Cell, Study, run_study

REPO = Path(__file__).resolve().parents[3]
# columns that depend only on the seeds (not on timing)
DETERMINISTIC = ["method", "seed", "status", "grad_evals", "n_draws", "mean_err_max", "sd_err_max", "w1_mean", "sliced_w1"]


def _same_numbers(a: pd.DataFrame, b: pd.DataFrame):
    pd.testing.assert_frame_equal(a[DETERMINISTIC].reset_index(drop=True), b[DETERMINISTIC].reset_index(drop=True))


def test_serial_local_and_dask_give_the_same_table(tmp_path):
    serial = run_study(TINY, quick=True, executor="serial", out=tmp_path / "s", progress=False)
    assert serial.computed == 6 and serial.failed == 0
    assert (serial.table["status"] == "ok").all() and (serial.table["truth"] == "exact").all()
    local = run_study(TINY, quick=True, executor="local", workers=2, out=tmp_path / "l", progress=False)
    _same_numbers(serial.table, local.table)
    dask = run_study(TINY, quick=True, executor="dask", workers=2, out=tmp_path / "d", progress=False)
    assert dask.executor.startswith("Dask LocalCluster")
    _same_numbers(serial.table, dask.table)
    # the table on disk is the table returned
    _same_numbers(serial.table, pd.read_csv(tmp_path / "s" / "quick" / "tiny" / "table.csv"))


def test_a_running_dask_cluster_given_by_its_scheduler_address(tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        run = run_study(TINY, quick=True, scheduler=cluster.scheduler_address, out=tmp_path, progress=False)
    assert run.executor == f"Dask at {cluster.scheduler_address}" and run.computed == 6 and run.failed == 0


def test_an_interrupted_study_resumes_computing_only_the_missing_cells(tmp_path, monkeypatch):
    def stop_after_two(i, entry):
        if stop_after_two.n == 1:
            raise KeyboardInterrupt
        stop_after_two.n += 1

    stop_after_two.n = 0
    with pytest.raises(KeyboardInterrupt):
        run_study(TINY, quick=True, executor="serial", out=tmp_path, progress=False, on_cell_done=stop_after_two)
    calls = []
    real = runner_module.run_cell
    monkeypatch.setattr(runner_module, "run_cell", lambda *a: calls.append(a[0]) or real(*a))
    resumed = run_study(TINY, quick=True, executor="serial", out=tmp_path, progress=False)
    assert (resumed.cached, resumed.computed, len(calls)) == (2, 4, 4)
    again = run_study(TINY, quick=True, executor="serial", out=tmp_path, progress=False)
    assert (again.cached, again.computed, len(calls)) == (6, 0, 4)
    _same_numbers(resumed.table, again.table)
    fresh = run_study(TINY, quick=True, executor="serial", out=tmp_path, progress=False, fresh=True)
    assert fresh.computed == 6 and len(calls) == 10


def _tiny_study_folder(tmp_path):
    """A studies/ folder holding tiny.py, the environment that points the CLI at it, and an out folder."""
    studies = tmp_path / "studies"
    studies.mkdir()
    (studies / "tiny.py").write_text(STUDY_FILE.format(tests_parent=str(REPO)))
    return studies, {**os.environ, "WORKBENCH_STUDIES": str(studies)}, tmp_path / "reports"


def test_a_study_killed_by_sigkill_loses_nothing_already_computed(tmp_path):
    """A real kill -9 of `workbench study` mid-way; the rerun computes only what is missing."""
    studies, env, out = _tiny_study_folder(tmp_path)
    cmd = [sys.executable, "-m", "workbench", "study", "tiny", "--executor", "serial", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cache = out / ".cache" / "tiny"
    deadline = time.time() + 120
    def entries():  # a kill mid-write leaves a ".tmp-*.json" (cache._atomic_write): not an entry
        return [p for p in cache.glob("*.json") if not p.name.startswith(".")]

    while time.time() < deadline and len(entries()) < 2 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = len(entries())
    assert 1 <= done_before < 9, "the study should have been killed part-way"
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"{9 - done_before} computed, {done_before} cached" in result.stdout


def test_targets_without_truth_get_a_cached_reference_posterior(tmp_path):
    spec = {"factory": "logistic_regression", "dataset": "synthetic", "n_data": 50, "dim": 2}
    ref = {"method": "NUTS", "chains": 2, "warmup": 300, "draws": 1000, "progress": False}

    def grid(quick):
        return [Cell(spec, {"method": "Laplace", "draws": 1000}, 0, labels={"method": "Laplace"}),
                Cell(spec, {"method": "NUTS", "chains": 2, "warmup": 200, "draws": 300, "progress": False}, 1,
                     labels={"method": "NUTS"})]

    study = Study(name="ref", title="ref", grid=grid, reference_method=ref)
    run = run_study(study, executor="serial", out=tmp_path, progress=False)
    assert (run.table["truth"] == "reference (long NUTS)").all() and (run.table["status"] == "ok").all()
    assert np.isfinite(run.table["w1_mean"]).all() and np.isfinite(run.table["mean_err_max"]).all()
    (info,) = run.references.values()
    assert info["n_draws"] == 2000 and info["r_hat_max"] < 1.05
    assert run.cache_reference(spec).shape == (2000, 2)






