"""workbench/study/executors.py: the local pool survives dead workers and passes on the workers' errors."""

from __future__ import annotations

import pytest

from tests.unit.study.test_crashes import _blas_threads, _job_that_dies, _raises  # jobs the workers import
from workbench.study.executors import LocalExecutor, WorkerLost


def test_the_pool_replaces_dead_workers_and_keeps_its_size(tmp_path):
    jobs = [(i, _job_that_dies, (i == 1, str(tmp_path / f"m{i}"))) for i in range(6)]
    with LocalExecutor(workers=2) as ex:
        out = dict(ex.run(jobs))
        # replaced workers are started as jobs need them: none left busy, one or two idle
        assert 1 <= len(ex._idle) <= 2 and not ex._busy and all(w.process.is_alive() for w in ex._idle)
    assert isinstance(out[1], WorkerLost) and "2 times" in str(out[1])
    assert all(isinstance(out[i], int) for i in (0, 2, 3, 4, 5))
    assert len({out[i] for i in (0, 2, 3, 4, 5)} | set()) >= 1


def test_an_exception_in_a_job_reaches_the_caller_with_the_workers_traceback():
    with pytest.raises(ZeroDivisionError, match="in the job") as info, LocalExecutor(workers=1) as ex:
        list(ex.run([(0, _raises, ())]))
    assert any("in the worker process" in note for note in info.value.__notes__)


def test_each_worker_uses_one_blas_thread():
    """One worker per core already: BLAS threads on top spin-wait against the other workers'."""
    with LocalExecutor(workers=2) as ex:
        (threads,) = [out for _, out in ex.run([(0, _blas_threads, ())])]
    assert threads and set(threads) == {1}
