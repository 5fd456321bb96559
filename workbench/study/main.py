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
    from .report import render_index, render_study
    from .runner import page_folder, run_study

    options = RunOptions.of(options, **option_values)
    quick, out = options.quick, options.out
    run = run_study(study, options, run_missing=run_missing)
    if not run_missing and (run.table["status"] == "missing").all():
        raise ValueError(f"nothing cached for study {study.name!r} in {out}: run `workbench study {study.name}` first")
    folder = page_folder(out, study.name, quick)
    page = study.report(run, folder)
    path = render_study(run, page)
    render_index(out)
    return run, path


def report_study(study: Study, args, executor=None) -> int:
    """Run ``study`` as the command line's ``args`` say (on ``executor`` when one is shared)."""
    options = RunOptions.from_args(args)
    run, path = run_and_report(study, options if executor is None else options.replace(executor=executor))
    print(f"{study.name}: {len(run.cells)} cells ({run.computed} computed, {run.cached} cached, "
          f"{run.failed} failed) in {run.seconds:.0f} s -> {path}")
    return 0


def report_studies(studies: list, args) -> int:
    """Run several studies on one pool of workers, started (and its kernels compiled) once:
    `make report` runs the quick grids this way (a pool per study cost about 6 s each)."""
    from .executors import make_executor

    with make_executor(args.executor or "local", args.workers, args.scheduler) as ex:
        for study in studies:
            report_study(study, args, executor=ex)
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
