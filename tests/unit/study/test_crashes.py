"""A study survives its own crashes: damaged cache entries are recomputed with a warning, a
worker that dies is replaced and its cell retried once (then recorded as failed), and the
workers of a study killed by SIGKILL do not outlive it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.study_fixtures import GAUSS, TINY
from workbench.cache import CellCache
from workbench.errors import CacheWarning
from workbench.study import Cell, run_study

REPO = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------ damaged cache entries


def _entry(tmp_path):
    cache = CellCache(tmp_path, "s")
    cache.put("k", {"status": "ok", "row": {"w1": 0.5}}, {"x": np.arange(3.0)})
    return cache


@pytest.mark.parametrize("damage, problem", [
    (lambda d: (d / "k.json").write_bytes(b"\x00\xff garbage"), "it is not readable JSON"),
    (lambda d: (d / "k.json").write_text("{}"), "it has no status"),
    (lambda d: (d / "k.json").write_text("[1, 2]"), "it has no status"),
    (lambda d: (d / "k.npz").write_bytes((d / "k.npz").read_bytes()[:40]), "it is not a readable .npz"),
    (lambda d: (d / "k.npz").unlink(), r"it has lost its arrays \['x'\] \(the .npz is missing\)"),
])
def test_a_damaged_entry_is_dropped_with_a_warning_naming_it(tmp_path, damage, problem):
    cache = _entry(tmp_path)
    assert cache.get("k")["row"] == {"w1": 0.5} and cache.arrays("k")["x"].tolist() == [0.0, 1.0, 2.0]
    damage(cache.dir)
    with pytest.warns(CacheWarning, match=rf"cache entry .*k\.(json|npz) is unusable: {problem}"):
        assert cache.get("k") is None
    assert not list(cache.dir.glob("k.*"))  # gone: the next get is a plain miss
    assert cache.get("k") is None


def test_an_entry_without_arrays_needs_no_npz(tmp_path):
    cache = CellCache(tmp_path, "s")
    cache.put("k", {"status": "error", "error": "boom"})
    assert cache.get("k")["status"] == "error" and cache.arrays("k") == {}


def test_a_study_recomputes_damaged_cells_and_says_which(tmp_path):
    first = run_study(TINY, quick=True, executor="serial", out=tmp_path, progress=False)
    folder = tmp_path / ".cache" / "tiny"
    garbage, empty, truncated, deleted = first.keys[0], first.keys[1], first.keys[2], first.keys[3]
    (folder / f"{garbage}.json").write_text("not json at all")
    (folder / f"{empty}.json").write_text("{}")
    npz = folder / f"{truncated}.npz"
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    (folder / f"{deleted}.npz").unlink()
    with pytest.warns(CacheWarning) as caught:
        again = run_study(TINY, quick=True, executor="serial", out=tmp_path, progress=False)
    named = " ".join(str(w.message) for w in caught)
    assert all(k in named for k in (garbage, empty, truncated, deleted))
    assert (again.computed, again.cached, again.failed) == (4, 2, 0)
    cols = ["method", "seed", "status", "grad_evals", "w1_mean"]
    assert again.table[cols].equals(first.table[cols])
    assert all(again.arrays(i) for i in range(4))  # the figures' arrays are back too


# ------------------------------------------------------------------ dying workers


def _dies(marker, always=False, seed=0):
    spec = {"method": "tests.study_fixtures:KillsItsWorker", "marker": str(marker), "always": always}
    return Cell(GAUSS, spec, seed, labels={"method": "KillsItsWorker"})


def test_a_cell_whose_worker_dies_once_is_retried_on_a_new_worker(tmp_path):
    marker = tmp_path / "died"
    study = replace(TINY, grid=lambda quick: TINY.grid(quick)[:2] + [_dies(marker)])
    run = run_study(study, quick=True, executor="local", workers=2, out=tmp_path, progress=False)
    assert list(run.table["status"]) == ["ok", "ok", "ok"] and run.failed == 0
    assert len(marker.read_text().split()) == 1  # one worker died, the retry ran it
    assert np.isfinite(run.table["w1_mean"]).all()


def test_a_cell_whose_worker_dies_twice_fails_and_the_study_goes_on(tmp_path):
    marker = tmp_path / "died"
    study = replace(TINY, grid=lambda quick: [_dies(marker, always=True)] + TINY.grid(quick)[:4])
    with pytest.warns(RuntimeWarning, match="cell 0 failed: the worker process died \\(signal 9\\) each of the 2 times"):
        run = run_study(study, quick=True, executor="local", workers=2, out=tmp_path, progress=False)
    t = run.table
    assert list(t["status"]) == ["failed", "ok", "ok", "ok", "ok"] and run.failed == 1
    assert "worker process died" in t.loc[0, "error"]
    pids = marker.read_text().split()
    assert len(pids) == 2 and pids[0] != pids[1]  # two different workers
    # a lost cell is not cached: the next run tries it again
    with pytest.warns(RuntimeWarning, match="cell 0 failed"):
        rerun = run_study(study, quick=True, executor="local", workers=2, out=tmp_path, progress=False)
    assert (rerun.computed, rerun.cached) == (0, 4) and len(marker.read_text().split()) == 4


def _job_that_dies(always, marker):
    if always or not os.path.exists(marker):
        open(marker, "a").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid()


def _raises():
    raise ZeroDivisionError("in the job")


# ------------------------------------------------------------------ no orphans


def _children(pid: int) -> set[int]:
    out = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        out |= {int(p) for p in (task / "children").read_text().split()}
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" not in status.read_text()


SLOW_STUDY = '''
import sys
sys.path.insert(0, {repo!r})
from dataclasses import replace
from tests.study_fixtures import GAUSS, TINY
from workbench.study import Cell, run_study

if __name__ == "__main__":  # the spawned workers import this file too
    slow = {{"method": "NUTS", "chains": 1, "warmup": 1000, "draws": 10_000_000, "progress": False}}
    study = replace(TINY, name="slow", grid=lambda quick: [Cell(GAUSS, slow, s) for s in range(4)])
    run_study(study, executor="local", workers=2, out={out!r}, progress=False)
'''


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads children from /proc (Linux)")
def test_the_workers_of_a_study_killed_by_sigkill_exit_with_it(tmp_path):
    script = tmp_path / "slow_study.py"
    script.write_text(SLOW_STUDY.format(repo=str(REPO), out=str(tmp_path / "reports")))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline, workers = time.time() + 120, set()
    while time.time() < deadline and len(workers) < 2 and proc.poll() is None:
        # the spawned workers (the resource tracker is a child too: it exits by itself)
        workers = {p for p in _children(proc.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()}
        time.sleep(0.1)
    assert len(workers) == 2, "the study should be running its two workers"
    time.sleep(1.0)  # let them start their cells
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.1)
    orphans = [p for p in workers if _alive(p)]
    for p in orphans:  # do not leave them running when this fails
        os.kill(p, signal.SIGKILL)
    assert not orphans, "worker processes outlived the study"


def _blas_threads():
    import numpy  # noqa: F401 - loads OpenBLAS
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


