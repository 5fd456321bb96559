"""The package's structure (docs/architecture.md): imports go one way, down the layers that
pyproject.toml's import-linter contract lists, and no module passes 500 lines."""

import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_imports_go_one_way_down_the_layers():
    exe = shutil.which("lint-imports") or str(pathlib.Path(sys.executable).parent / "lint-imports")
    proc = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "1 kept, 0 broken" in proc.stdout


def library_modules():
    """The package's source files (not the adapters Numba caches under __pycache__, see jit.py)."""
    return [p for p in (ROOT / "workbench").rglob("*.py") if "__pycache__" not in p.parts]


def test_no_module_passes_500_lines():
    lines = {p.relative_to(ROOT).as_posix(): p.read_text().count("\n") for p in library_modules()}
    assert len(lines) > 50
    too_long = {path: n for path, n in lines.items() if n > 500}
    assert not too_long, f"split these along their concerns: {too_long}"


def test_every_module_has_its_mirrored_test_module():
    """workbench/a/b.py is tested in tests/unit/a/test_b.py (docs/architecture.md)."""
    missing = []
    for path in library_modules():
        if path.name in ("__init__.py", "__main__.py"):
            continue
        rel = path.relative_to(ROOT / "workbench")
        mirror = ROOT / "tests" / "unit" / rel.parent / f"test_{rel.name}"
        if not mirror.exists():
            missing.append(str(rel))
    assert not missing, f"modules without tests/unit/<same path>/test_<module>.py: {sorted(missing)}"
