"""Time the README's two commands on a fresh clone of this repository's HEAD.

Each command runs in its own fresh clone in a temporary folder (so the venv is built and every
Numba kernel compiled, as a newcomer's first run and CI do), and its wall time is printed. A
run's time is not a commit: with ``--record`` it appends a row per command to
``docs/benchmarks/fresh_clone.csv`` (date, machine, command), and ``scripts/benchmarks_page.py``
shows the latest.

    python scripts/time_fresh_clone.py [--record] [--only report|test] [--keep]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from record import CSV_DIR, stamp  # noqa: E402

COMMANDS = {"report": "make report", "test": "make test"}


def time_command(command: str, folder: Path) -> tuple[float, int]:
    """(wall seconds, exit code) of ``command`` run in ``folder``; its output goes to a log there."""
    log = folder / f"{command.replace(' ', '_')}.log"
    start = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.run(command, shell=True, cwd=folder, stdout=out, stderr=subprocess.STDOUT).returncode
    return time.perf_counter() - start, code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="append the times to docs/benchmarks/fresh_clone.csv")
    parser.add_argument("--only", choices=sorted(COMMANDS), help="time one of the two commands")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its logs) instead of deleting it")
    args = parser.parse_args(argv)
    rows, folders = [], []
    for key, command in COMMANDS.items():
        if args.only and key != args.only:
            continue
        folder = Path(tempfile.mkdtemp(prefix="workbench-fresh-")) / "workbench"
        folders.append(folder)
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(folder)], check=True)
        seconds, code = time_command(command, folder)
        minutes, rest = divmod(round(seconds), 60)
        print(f"{command}: {minutes}m{rest:02d}s (exit {code}; log {folder / (command.replace(' ', '_') + '.log')})")
        rows.append({"what": command, "seconds": round(seconds), "exit_code": code})
    if args.record and rows:
        path = CSV_DIR / "fresh_clone.csv"
        new = stamp(pd.DataFrame(rows))
        old = pd.read_csv(path, dtype=str, keep_default_na=False) if path.exists() else None
        (new if old is None else pd.concat([old, new.astype(str)], ignore_index=True)).to_csv(path, index=False)
        print(f"appended to {path.relative_to(ROOT)}; run python scripts/benchmarks_page.py")
    if not args.keep:
        for folder in folders:
            shutil.rmtree(folder.parent, ignore_errors=True)
    return max((r["exit_code"] for r in rows), default=0)


if __name__ == "__main__":
    sys.exit(main())
