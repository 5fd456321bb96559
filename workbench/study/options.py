"""How a study runs (not what it computes): one options object shared by the runner
(``run_study``), ``run_and_report``, ``wb.compare`` and the command line's flags.

None of these options enters a cell's cache key: the same cells give the same rows whether
they ran on a local pool or a Dask cluster, with or without a progress bar.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .executors import EXECUTORS

SCHEDULER_SCHEMES = ("tcp://", "tls://", "inproc://", "ws://", "wss://")


@dataclass(frozen=True)
class RunOptions:
    """How to run a study.

    Attributes
    ----------
    quick : bool
        The study's small grid (a few minutes each on 2 cores); its pages go to ``out/quick``.
    executor : "local" | "serial" | "threads" | "dask", a running executor, or None
        A local process pool, this process, threads of this process, or Dask; a running
        executor (``make_executor(...)`` entered by the caller) is shared by several studies.
        None (the default): a local pool (``wb.compare``: threads for a target built from a
        Python object, which worker processes cannot rebuild, or a PyMC model, which each
        would compile again).
    workers : int, optional
        Worker processes (default: one per core).
    scheduler : str, optional
        A running Dask scheduler's address, e.g. ``tcp://host:8786`` (implies Dask).
    fresh : bool
        Ignore the cache and recompute every cell.
    out : path
        The report folder (default ``reports``).
    cache_dir : path, optional
        The cell and reference cache (default ``out/.cache``).
    progress : bool, optional
        A progress bar (default: when the output is a terminal).
    """

    quick: bool = False
    executor: Any = None
    workers: int | None = None
    scheduler: str | None = None
    fresh: bool = False
    out: str | Path = "reports"
    cache_dir: str | Path | None = None
    progress: bool | None = None

    def __post_init__(self):
        if (isinstance(self.executor, str) and self.executor not in EXECUTORS) or self.executor is False:
            raise ValueError(f"executor must be one of {list(EXECUTORS)} or a running executor, got {self.executor!r}")
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int)
                                         or self.workers < 1):
            raise ValueError(f"workers must be an integer >= 1, got {self.workers!r}")
        if self.scheduler is not None and not (isinstance(self.scheduler, str)
                                               and self.scheduler.startswith(SCHEDULER_SCHEMES)):
            raise ValueError(f"scheduler must be an address like tcp://host:8786, got {self.scheduler!r}")

    def replace(self, **changes) -> RunOptions:
        return dataclasses.replace(self, **changes)

    @classmethod
    def of(cls, options: RunOptions | None = None, **values) -> RunOptions:
        """``options`` with ``values`` put in (a TypeError names an unknown option)."""
        unknown = set(values) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown run options {sorted(unknown)}; the options are "
                            f"{[f.name for f in dataclasses.fields(cls)]}")
        return cls(**values) if options is None else options.replace(**values)

    @classmethod
    def from_args(cls, args: argparse.Namespace, **values) -> RunOptions:
        """The options the command line's flags (:func:`add_arguments`) give, ``values`` on top."""
        given = {"quick": args.quick, "executor": args.executor, "workers": args.workers,
                 "scheduler": args.scheduler, "fresh": args.fresh, "out": args.out,
                 "progress": False if args.no_progress else None}
        return cls(**{**given, **values})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line's flags for :class:`RunOptions`."""
    parser.add_argument("--quick", action="store_true", help="the small grid (each study a few minutes on 2 cores at most)")
    parser.add_argument("--executor", choices=EXECUTORS, default=None,
                        help="local process pool (default; compare: threads for a PyMC model), serial (this process), "
                             "threads (of this process) or dask")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="a running Dask scheduler, e.g. tcp://host:8786 (implies --executor dask)")
    parser.add_argument("--fresh", action="store_true", help="ignore the cache and recompute every cell")
    parser.add_argument("--out", default="reports", help="report folder (default: reports/)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The flags' values, checked with the flags' own names (``parser.error`` exits)."""
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.scheduler is not None and not args.scheduler.startswith(SCHEDULER_SCHEMES):
        parser.error(f"--scheduler must be an address like tcp://host:8786, got {args.scheduler!r}")
