"""Studies: grids of (target x method x settings x seed) cells run through an executor
(local process pool or Dask), cached on disk, and rendered as static HTML + PNG reports.

A study is defined in ``studies/NAME.py`` as ``STUDY = Study(...)``; the same file runs as a
script (``python studies/NAME.py [--quick]``) and through the CLI (``workbench study NAME``).
"""

from .cells import Cell, build_method, build_target, run_cell, target_label
from .catalog import STUDIES_DIR, available_studies, load_study
from .executors import EXECUTORS, make_executor
from .main import main_for, run_and_report
from .report import Figure, Page, render_index, render_study
from .runner import Study, StudyRun, run_study

__all__ = [
    "Cell",
    "EXECUTORS",
    "Figure",
    "Page",
    "STUDIES_DIR",
    "Study",
    "StudyRun",
    "available_studies",
    "build_method",
    "build_target",
    "load_study",
    "main_for",
    "make_executor",
    "render_index",
    "render_study",
    "run_and_report",
    "run_cell",
    "run_study",
    "target_label",
]
