"""Finding studies: ``studies/NAME.py`` files that define ``STUDY``.

The folder is the repository's ``studies/`` (beside the package), or the one named by the
``WORKBENCH_STUDIES`` environment variable.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

STUDIES_DIR = Path(os.environ.get("WORKBENCH_STUDIES", Path(__file__).resolve().parents[2] / "studies"))

# studies run by `make report`, in this order (benchmark scripts are apart, under benchmarks/)
REPORT_ORDER = ("accuracy", "performance", "marginalization", "dimension_scaling", "nn4post_ablation", "theorem1", "minibatch")


def _defines_study(path: Path) -> bool:
    return re.search(r"^(STUDY\s*=|from .* import .*\bSTUDY\b)", path.read_text(encoding="utf-8"), re.M) is not None


def available_studies(folder: Path | None = None) -> dict[str, str]:
    """Study name -> first line of its docstring, for every studies/*.py defining STUDY."""
    folder = Path(folder or STUDIES_DIR)
    out = {}
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_") or not _defines_study(path):
            continue
        text = path.read_text(encoding="utf-8")
        doc = text.split('"""')[1].strip().splitlines()[0] if text.lstrip().startswith('"""') else ""
        out[path.stem] = doc
    ordered = {n: out[n] for n in REPORT_ORDER if n in out}
    ordered.update({n: d for n, d in out.items() if n not in ordered})
    return ordered


def load_study(name: str, folder: Path | None = None):
    """The ``STUDY`` object of studies/NAME.py; ValueError naming the known ones otherwise."""
    folder = Path(folder or STUDIES_DIR)
    known = available_studies(folder)
    if name not in known:
        raise ValueError(f"unknown study {name!r}; studies: {', '.join(known) or '(none found in ' + str(folder) + ')'}")
    module_name = f"workbench_studies.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name].STUDY
    spec = importlib.util.spec_from_file_location(module_name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # so worker processes can unpickle what it defines
    spec.loader.exec_module(module)
    return module.STUDY
