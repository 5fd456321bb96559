"""Running a study and rendering its page: shared by the scripts in studies/ and the CLI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .options import RunOptions, add_arguments, check_arguments

if TYPE_CHECKING:
    from .runner import Study, StudyRun


def run_and_report(
    study: Study,
    options: RunOptions | None = None,
    *,
    run_missing: bool = True,
    **option_values,
) -> tuple[StudyRun, Path]:
    """Run (or resume) the study as ``options`` say (:class:`RunOptions`, or its fields as
    keywords), write its page and refresh ``<out>/index.html``."""
    from .runner import run_study

    options = RunOptions.of(options, **option_values)
    run = run_study(study, options, run_missing=run_missing)
    if not run_missing and (run.table["status"] == "missing").all():
        raise ValueError(f"nothing cached for study {study.name!r} in {options.out}: run `workbench study {study.name}` first")
    return run, render_run(study, run, options)


def render_run(study: Study, run: StudyRun, options: RunOptions) -> Path:
    """Write the page of a finished run and refresh ``<out>/index.html``; returns the page."""
    from .report import render_index, render_study
    from .runner import page_folder

    page = study.report(run, page_folder(options.out, study.name, options.quick))
    path = render_study(run, page)
    render_index(options.out)
    return path


def _summary(run: StudyRun, path: Path) -> str:
    from .report import refused_text

    return (f"{run.study.name}: {len(run.cells)} cells ({run.computed} computed, {run.cached} cached, "
            f"{run.failed} failed{refused_text(run)}) in {run.seconds:.0f} s -> {path}")


def report_study(study: Study, args, executor=None) -> int:
    """Run ``study`` as the command line's ``args`` say (on ``executor`` when one is shared)."""
    options = RunOptions.from_args(args)
    run, path = run_and_report(study, options if executor is None else options.replace(executor=executor))
    print(_summary(run, path))
    return 0


def report_studies(studies: list, args) -> int:
    """Run several studies on one pool of workers, started (and its kernels compiled) once:
    `make report` runs the quick grids this way (a pool per study cost about 6 s each).

    Each study's page is drawn on a thread while the workers compute the next study's cells:
    drawing (Matplotlib, one core) took 32 of a quick report's 256 s, with the workers idle."""
    from concurrent.futures import ThreadPoolExecutor

    from .executors import make_executor
    from .runner import run_study

    options = RunOptions.from_args(args)
    drawn: list = []

    def say_what_is_drawn(wait: bool) -> None:
        while drawn and (wait or drawn[0][1].done()):
            run, future = drawn.pop(0)
            print(_summary(run, future.result()))

    with make_executor(args.executor or "local", args.workers, args.scheduler) as ex, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="draw-pages") as painter:
        for study in studies:
            run = run_study(study, options.replace(executor=ex))
            drawn.append((run, painter.submit(render_run, study, run, options)))
            say_what_is_drawn(wait=False)
        say_what_is_drawn(wait=True)
    return 0


def main_for(study: Study):
    """The ``main(argv)`` of a study script: ``python studies/NAME.py [--quick] [...]``."""

    def main(argv=None) -> int:
        parser = argparse.ArgumentParser(prog=f"studies/{study.name}.py", description=study.title)
        add_arguments(parser)
        args = parser.parse_args(argv)
        check_arguments(parser, args)
        try:
            return report_study(study, args)
        except (ValueError, RuntimeError, OSError) as exc:
            print(f"{parser.prog}: error: {exc}", file=sys.stderr)
            return 2

    return main
