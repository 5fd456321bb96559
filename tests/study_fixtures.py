"""A tiny study for the runner's tests: also written to a studies/ folder for the CLI tests."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from workbench.methods import Exact, Method
from workbench.study import Cell, Figure, Page, Study
from workbench.study import figures as F

GAUSS = {"factory": "gaussian", "dim": 2}
QUIET = {"progress": False}


def smallest_budgets(cells: list[Cell]) -> list[Cell]:
    """The cells of a grid at each target's smallest gradient budget, and those without one."""
    smallest = {}
    for cell in cells:
        if cell.grad_budget is not None:
            key = str(cell.target)
            smallest[key] = min(smallest.get(key, cell.grad_budget), cell.grad_budget)
    return [c for c in cells if c.grad_budget is None or c.grad_budget == smallest[str(c.target)]]


def tiny_grid(quick: bool) -> list[Cell]:
    methods = [
        ("Exact", {"method": "Exact", "chains": 2, "draws": 200}, None),
        ("NUTS", {"method": "NUTS", "chains": 2, "warmup": 100, "draws": 200, **QUIET}, None),
        ("MeanFieldVI", {"method": "MeanFieldVI", "steps": 200, "draws": 200, **QUIET}, 4000),
    ]
    seeds = (0, 1) if quick else (0, 1, 2)
    return [Cell(GAUSS, spec, seed, budget, labels={"method": name}) for name, spec, budget in methods for seed in seeds]


def tiny_report(run, folder) -> Page:
    fig = F.bars(run.table, "w1_mean", folder, "w1.png", "mean W1")
    return Page(finding=f"{len(run.table)} cells ran.", figures=[Figure(fig, "W1 per method")],
                tables=[("cells", run.table[["method", "seed", "w1_mean"]])])


TINY = Study(name="tiny", title="A tiny study", grid=tiny_grid, report=tiny_report)

STUDY_FILE = '''"""A tiny study (written by the tests)."""
import sys
sys.path.insert(0, {tests_parent!r})
from tests.study_fixtures import TINY as STUDY
from workbench.study import main_for

if __name__ == "__main__":
    raise SystemExit(main_for(STUDY)())
'''


def html_images(path) -> list[str]:
    """The image files an HTML page shows, in order."""
    import re
    from pathlib import Path

    return re.findall(r"<img src='([^']+)'", Path(path).read_text())


def is_png(path) -> bool:
    """A real, complete PNG file (PIL verifies it)."""
    from PIL import Image

    with open(path, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            return False
    with Image.open(path) as im:
        im.verify()
    return True


@dataclass(frozen=True)
class KillsItsWorker(Method):
    """Exact draws, but the process running it dies by SIGKILL first: every time
    (``always``) or only the first time (it leaves ``marker`` behind). For the local pool only:
    in the test process it would kill the tests."""

    marker: str = ""
    always: bool = False

    def _run(self, target, seed, budget):
        if self.always or not os.path.exists(self.marker):
            with open(self.marker, "a") as f:
                f.write(f"{os.getpid()}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return Exact(chains=2, draws=200).run(target, seed)
