"""Where cells run: in this process (``serial``), on a local process pool (``local``, the
default, one worker per core) or on Dask distributed (``dask``: a ``LocalCluster`` started
here, or an existing cluster given by its scheduler address).

Every executor has the same shape: ``with make_executor(...) as ex: for tag, out in
ex.run(jobs)``, where a job is ``(tag, function, args)`` and outcomes arrive as they finish.
Leaving the ``with`` block (also by Ctrl-C) cancels what has not started.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterator

EXECUTORS = ("local", "serial", "dask")
Job = tuple[Any, Callable, tuple]


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


class SerialExecutor:
    """Runs jobs one after another in this process (debugging, tests, one-cell studies)."""

    description = "serial (this process)"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, jobs: list[Job]) -> Iterator[tuple[Any, Any]]:
        for tag, fn, args in jobs:
            yield tag, fn(*args)


class LocalExecutor:
    """A pool of worker processes (spawned, so no thread or Numba state is forked)."""

    def __init__(self, workers: int | None = None):
        self.workers = workers or default_workers()
        self.description = f"local process pool, {self.workers} workers"
        self._pool = None

    def __enter__(self):
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self

    def __exit__(self, *exc):
        self._pool.shutdown(wait=True, cancel_futures=True)
        return False

    def run(self, jobs: list[Job]) -> Iterator[tuple[Any, Any]]:
        futures = {self._pool.submit(fn, *args): tag for tag, fn, args in jobs}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    yield futures[f], f.result()
        finally:
            for f in pending:
                f.cancel()


class DaskExecutor:
    """Dask distributed: connect to ``scheduler`` (tcp://host:port), or start a LocalCluster
    with one single-threaded worker process per core. Needs ``pip install .[distributed]``."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None):
        try:
            import distributed  # noqa: F401
        except ImportError as exc:  # pragma: no cover - the test extra installs it
            raise RuntimeError(
                "the dask executor needs Dask distributed: pip install -e '.[distributed]'"
            ) from exc
        self.scheduler = scheduler
        self.workers = workers or default_workers()
        self.description = f"Dask at {scheduler}" if scheduler else f"Dask LocalCluster, {self.workers} workers"
        self._client = self._cluster = None

    def __enter__(self):
        from distributed import Client, LocalCluster

        if self.scheduler:
            self._client = Client(self.scheduler, timeout="20s")
        else:
            self._cluster = LocalCluster(
                n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            self._client = Client(self._cluster)
        return self

    def __exit__(self, *exc):
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        return False

    def run(self, jobs: list[Job]) -> Iterator[tuple[Any, Any]]:
        from distributed import as_completed

        futures = {self._client.submit(fn, *args, pure=False): tag for tag, fn, args in jobs}
        try:
            for f in as_completed(list(futures)):
                yield futures[f], f.result()
        finally:
            for f in futures:
                if not f.done():
                    f.cancel()


def make_executor(kind: str = "local", workers: int | None = None, scheduler: str | None = None):
    """The executor for ``kind``; a scheduler address implies Dask."""
    if scheduler:
        kind = "dask"
    if kind not in EXECUTORS:
        raise ValueError(f"executor must be one of {list(EXECUTORS)}, got {kind!r}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if kind == "serial":
        return SerialExecutor()
    if kind == "local":
        return LocalExecutor(workers)
    return DaskExecutor(scheduler, workers)
