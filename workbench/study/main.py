"""Running a study and rendering its page: shared by the scripts in studies/ and the CLI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from .executors import EXECUTORS

if TYPE_CHECKING:
    from .runner import Study, StudyRun


def run_and_report(
    study: Study,
    *,
    quick: bool = False,
    executor="local",
    workers: int | None = None,
    scheduler: str | None = None,
    fresh: bool = False,
    out: str | Path = "reports",
    progress: bool | None = None,
    run_missing: bool = True,
) -> tuple[StudyRun, Path]:
    """Run (or resume) the study, write its page and refresh ``<out>/index.html``."""
    from .report import render_index, render_study
    from .runner import page_folder, run_study

    run = run_study(
        study, quick=quick, executor=executor, workers=workers, scheduler=scheduler, fresh=fresh,
        out=out, progress=progress, run_missing=run_missing,
    )
    if not run_missing and (run.table["status"] == "missing").all():
        raise ValueError(f"nothing cached for study {study.name!r} in {out}: run `workbench study {study.name}` first")
    folder = page_folder(out, study.name, quick)
    page = study.report(run, folder)
    path = render_study(run, page)
    render_index(out)
    return run, path


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="the small grid (each study a few minutes on 2 cores at most)")
    parser.add_argument("--executor", choices=EXECUTORS, default="local",
                        help="local process pool (default), serial (this process) or dask")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="a running Dask scheduler, e.g. tcp://host:8786 (implies --executor dask)")
    parser.add_argument("--fresh", action="store_true", help="ignore the cache and recompute every cell")
    parser.add_argument("--out", default="reports", help="report folder (default: reports/)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def check_run_arguments(parser, args) -> None:
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.scheduler is not None and not args.scheduler.startswith(("tcp://", "tls://", "inproc://", "ws://", "wss://")):
        parser.error(f"--scheduler must be an address like tcp://host:8786, got {args.scheduler!r}")


def report_study(study: Study, args, executor=None) -> int:
    """Run ``study`` as the command line's ``args`` say (on ``executor`` when one is shared)."""
    run, path = run_and_report(
        study, quick=args.quick, executor=executor or args.executor, workers=args.workers, scheduler=args.scheduler,
        fresh=args.fresh, out=args.out, progress=False if args.no_progress else None,
    )
    print(f"{study.name}: {len(run.cells)} cells ({run.computed} computed, {run.cached} cached, "
          f"{run.failed} failed) in {run.seconds:.0f} s -> {path}")
    return 0


def report_studies(studies: list, args) -> int:
    """Run several studies on one pool of workers, started (and its kernels compiled) once:
    `make report` runs the quick grids this way (a pool per study cost about 6 s each)."""
    from .executors import make_executor

    with make_executor(args.executor, args.workers, args.scheduler) as ex:
        for study in studies:
            report_study(study, args, executor=ex)
    return 0


def main_for(study: Study):
    """The ``main(argv)`` of a study script: ``python studies/NAME.py [--quick] [...]``."""

    def main(argv=None) -> int:
        parser = argparse.ArgumentParser(prog=f"studies/{study.name}.py", description=study.title)
        add_run_arguments(parser)
        args = parser.parse_args(argv)
        check_run_arguments(parser, args)
        try:
            return report_study(study, args)
        except (ValueError, RuntimeError, OSError) as exc:
            print(f"{parser.prog}: error: {exc}", file=sys.stderr)
            return 2

    return main
