"""Studies: grids of (target x method x settings x seed) cells run through an executor
(local process pool or Dask), cached on disk, and rendered as static HTML + PNG reports.

A study is defined in ``studies/NAME.py`` as ``STUDY = Study(...)``; the same file runs as a
script (``python studies/NAME.py [--quick]``) and through the CLI (``workbench study NAME``).
"""

import importlib

# imported on first use (PEP 562), so that `workbench --help` does not load SciPy and ArviZ
_NAMES = {
    "Cell": "cells", "build_method": "cells", "build_target": "cells", "run_cell": "cells", "target_label": "cells",
    "STUDIES_DIR": "catalog", "available_studies": "catalog", "load_study": "catalog",
    "EXECUTORS": "executors", "make_executor": "executors",
    "main_for": "main", "run_and_report": "main",
    "Figure": "report", "Page": "report", "render_index": "report", "render_study": "report",
    "Study": "runner", "StudyRun": "runner", "run_study": "runner",
    "RunOptions": "options",
}


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Cell",
    "EXECUTORS",
    "Figure",
    "Page",
    "RunOptions",
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
