"""Where cells run: in this process (``serial``), on threads of this process (``threads``: a
target compiled once, in memory, is shared by every cell, as a PyMC model's compiled density
is, which each worker process would compile again), on a local process pool (``local``, the
default, one worker per core) or on Dask distributed (``dask``: a ``LocalCluster`` started
here, or an existing cluster given by its scheduler address).

Every executor has the same shape: ``with make_executor(...) as ex: for tag, out in
ex.run(jobs)``, where a job is ``(tag, function, args)`` and outcomes arrive as they finish.
Leaving the ``with`` block (also by Ctrl-C) cancels what has not started. A job whose
worker process dies is retried once on a fresh worker; if it dies again, its outcome is a
:class:`WorkerLost` (Dask retries a lost task itself and gives up the same way).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from multiprocessing import connection as mp_connection
from typing import Any, NamedTuple

EXECUTORS = ("local", "serial", "threads", "dask")
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
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a cell's warnings are its messages, as in a worker
                out = fn(*args)
            yield tag, out


class ThreadExecutor:
    """Runs jobs on a pool of threads of this process, outcomes as they finish. The methods'
    kernels release the GIL, so the threads sample in parallel; what is Python (scoring, the
    set-up) takes turns. Worth it where rebuilding a target in each worker process costs more
    than that: a PyMC model's density, compiled by PyTensor, takes seconds a process."""

    def __init__(self, workers: int | None = None):
        self.workers = workers or default_workers()
        self.description = f"{self.workers} threads of this process"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, jobs: list[Job]) -> Iterator[tuple[Any, Any]]:
        from concurrent.futures import ThreadPoolExecutor, as_completed

        # a cell's warnings are its messages, as in a worker (the filters are the process's)
        with warnings.catch_warnings(), ThreadPoolExecutor(max_workers=self.workers) as pool:
            warnings.simplefilter("ignore")
            futures = {pool.submit(fn, *args): tag for tag, fn, args in jobs}
            try:
                for future in as_completed(futures):
                    yield futures[future], future.result()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise


class WorkerLost(NamedTuple):
    """The outcome of a job whose worker process died running it, every time it was tried
    (killed, out of memory, a crash inside compiled code). The study records it as failed."""

    message: str

    def __str__(self) -> str:
        return self.message


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker exit when the process that started it dies, even by SIGKILL (which
    runs no clean-up in the parent): the kernel's parent-death signal on Linux, and a thread
    that watches the parent's pid everywhere (it also covers a parent already gone)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl
            pass

    def watch():
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True, name="watch-parent").start()


# One BLAS thread per worker: the pool already runs one worker per core, and BLAS threads
# on top spin-wait against each other. Measured: an NN4Post cell whose mode search makes many
# small linear-algebra calls took 5.4 s per run on two workers (44 s in a full study) against
# 0.4 s with one BLAS thread each.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _worker_main(conn, parent_pid: int) -> None:
    """A local worker: run ``(function, args)`` messages until told to stop (None)."""
    for name in BLAS_THREAD_VARIABLES:  # for libraries not loaded yet
        os.environ[name] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # and those already loaded (the parent's __main__ is imported first)
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import warnings

    # a cell's warnings are its messages (the table's health column): printed by a worker they
    # would name the library's files to a user who never opened them
    warnings.simplefilter("ignore")
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        fn, args = message
        try:
            reply = ("ok", fn(*args))
        except BaseException as exc:  # sent back and raised in the parent, as a pool would
            reply = ("raised", exc, traceback.format_exc())
        try:
            conn.send(reply)
        except Exception as exc:  # an outcome that cannot be pickled
            conn.send(("raised", RuntimeError(f"the job's outcome could not be sent back: {exc!r}"), ""))


class _Worker:
    def __init__(self, context):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, os.getpid()), daemon=True)
        self.process.start()
        child.close()
        self.job = None  # index of the job it runs

    def stop(self, timeout: float) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


class LocalExecutor:
    """A pool of worker processes (spawned, so no thread or Numba state is forked).

    A worker that dies running a job is replaced and the job tried ``retries`` more times;
    after that its outcome is a :class:`WorkerLost` and the other jobs go on. Workers exit
    with this process, however it ends (no orphans), and are stopped when the ``with`` block
    is left (at once on an exception such as Ctrl-C).
    """

    def __init__(self, workers: int | None = None, retries: int = 1):
        self.workers = workers or default_workers()
        self.retries = retries
        self.description = f"local process pool, {self.workers} workers"
        self._context = multiprocessing.get_context("spawn")
        self._idle: list[_Worker] = []
        self._busy: list[_Worker] = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        for worker in self._idle + self._busy:
            if exc_type is None and worker.job is None:
                worker.stop(timeout=5.0)
            else:  # interrupted: what runs is abandoned (the cache keeps what finished)
                worker.process.kill()
                worker.process.join()
                worker.conn.close()
        self._idle, self._busy = [], []
        return False

    def _lost(self, worker: _Worker) -> None:
        self._busy.remove(worker)
        worker.process.join()
        worker.conn.close()

    def run(self, jobs: list[Job]) -> Iterator[tuple[Any, Any]]:
        pending = deque(range(len(jobs)))
        deaths = [0] * len(jobs)
        while pending or self._busy:
            while pending and len(self._busy) < self.workers:
                worker = self._idle.pop() if self._idle else _Worker(self._context)
                i = pending.popleft()
                _, fn, args = jobs[i]
                worker.job = i
                worker.conn.send((fn, args))
                self._busy.append(worker)
            ready = set(mp_connection.wait([w.conn for w in self._busy] + [w.process.sentinel for w in self._busy]))
            for worker in list(self._busy):
                if worker.conn not in ready and worker.process.sentinel not in ready:
                    continue
                i = worker.job
                try:
                    reply = worker.conn.recv() if worker.conn.poll() else None
                except (EOFError, OSError):
                    reply = None
                if reply is None:  # the worker died with the job
                    self._lost(worker)
                    deaths[i] += 1
                    code = worker.process.exitcode
                    how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                    if deaths[i] <= self.retries:
                        pending.appendleft(i)
                        continue
                    yield jobs[i][0], WorkerLost(
                        f"the worker process died ({how}) each of the {deaths[i]} times it ran this job"
                    )
                    continue
                worker.job = None
                self._busy.remove(worker)
                self._idle.append(worker)
                if reply[0] == "raised":
                    exc, trace = reply[1], reply[2]
                    if trace:
                        exc.add_note(f"in the worker process:\n{trace}")
                    raise exc
                yield jobs[i][0], reply[1]


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
                n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                env=dict.fromkeys(BLAS_THREAD_VARIABLES, "1"),  # as the local pool's workers
            )
            self._client = Client(self._cluster)
        return self

    def __exit__(self, *exc):
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        return False

    def run(self, jobs: list[Job]) -> Iterator[tuple[Any, Any]]:
        from distributed import KilledWorker, as_completed

        futures = {self._client.submit(fn, *args, pure=False): tag for tag, fn, args in jobs}
        try:
            for f in as_completed(list(futures)):
                try:
                    outcome = f.result()
                except KilledWorker as exc:
                    outcome = WorkerLost(f"Dask lost the workers running this job each time it ran it ({exc})")
                yield futures[f], outcome
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
    if kind == "threads":
        return ThreadExecutor(workers)
    if kind == "local":
        return LocalExecutor(workers)
    return DaskExecutor(scheduler, workers)
