"""How a benchmark records what it measured: every CSV row under ``docs/benchmarks/`` carries
the date it was measured, the machine and the command that measured it, so the page generated
from the CSVs (``scripts/benchmarks_page.py``) can say where each number comes from."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import sys
from pathlib import Path

import pandas as pd

CSV_DIR = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


def blas_kernels() -> str:
    """The kernels OpenBLAS chose for this CPU (``Haswell``, ``SkylakeX``, ...), as threadpoolctl
    reports them. They sum in orders of their own, and a sampler's adaptation turns that into
    other draws for the same seed: a row's pass count is the kernels' as well as the code's."""
    import numpy  # noqa: F401 - loads the BLAS that threadpoolctl looks for
    from threadpoolctl import threadpool_info

    kinds = sorted({f"{i['internal_api']} {i.get('architecture')}" for i in threadpool_info() if i["user_api"] == "blas"})
    return ", ".join(kinds) or "no BLAS found"


def machine() -> str:
    """A short description of this machine: cores, processor architecture, operating system,
    Python and the BLAS kernels."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{cores} cores, {platform.machine()}, {platform.system()}, Python {platform.python_version()}, "
            f"{blas_kernels()} kernels")


def command() -> str:
    """The command line that is running, as a reader would retype it."""
    script = Path(sys.argv[0])
    try:
        script = script.resolve().relative_to(CSV_DIR.parents[1])
    except ValueError:
        pass
    return " ".join(["python", script.as_posix(), *map(shlex.quote, sys.argv[1:])])


def stamp(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the columns ``measured`` (today), ``machine`` and ``command``."""
    frame = frame.copy()
    frame["measured"] = datetime.date.today().isoformat()
    frame["machine"] = machine()
    frame["command"] = command()
    return frame
