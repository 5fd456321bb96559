"""The package's structure (docs/architecture.md): imports go one way, down the layers that
pyproject.toml's import-linter contract lists, and no module passes 500 lines."""

import pathlib
import re
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


def repository_text_files():
    """The repository's own text files: sources, docs, configuration (not the venv, caches or reports)."""
    skip = {".git", ".venv", "reports", "__pycache__", ".pytest_cache", "build"}
    suffixes = {".py", ".md", ".toml", ".cfg", ".yml", ".yaml", ".txt", ".sh", ""}
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if path.is_file() and not skip & set(rel.parts) and not rel.parts[0].endswith(".egg-info") \
                and path.suffix in suffixes and path.stat().st_size < 2_000_000:
            yield rel, path.read_text(errors="replace")


def test_no_file_points_outside_the_repository():
    """The design and the notes the code relies on are in docs/architecture.md: a reader of the
    repository can follow every pointer."""
    outside = re.compile(r"DESIGN\.md|\.\./shared|(?<![\w/])notes/[\w.-]+\.md|shared/seeds")
    found = {rel.as_posix(): m.group(0) for rel, text in repository_text_files()
             if rel.as_posix() != "tests/test_architecture.py" and (m := outside.search(text))}
    assert len(list(repository_text_files())) > 100
    assert not found, f"pointers to files outside the repository: {found}"


def test_no_dated_run_logs_in_the_library_or_the_docs():
    """A run's time is not a commit: dated measurements live in docs/benchmarks/*.csv and the
    page generated from them, not in docstrings, comments or the prose pages."""
    dated = re.compile(r"\b(19|20)\d\d-[01]\d\b")  # any date: a data set's span belongs in its source's name
    places = [*library_modules(), ROOT / "README.md",
              *(p for p in (ROOT / "docs").glob("*.md") if p.name != "benchmarks.md")]
    found = {p.relative_to(ROOT).as_posix(): m.group(0) for p in places if (m := dated.search(p.read_text()))}
    assert len(places) > 50
    assert not found, f"dated run logs (move the numbers to a benchmark's CSV): {found}"


def test_the_code_passes_the_configured_lint():
    """pyproject.toml's ruff rules (line length, pyflakes, pycodestyle, import order, pyupgrade,
    bugbear) hold everywhere: a configured rule that nobody checks is no rule."""
    exe = shutil.which("ruff") or str(pathlib.Path(sys.executable).parent / "ruff")
    proc = subprocess.run([exe, "check", "--no-cache", "workbench", "tests", "studies", "benchmarks", "scripts", "examples"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_every_path_the_docs_name_exists():
    """docs/architecture.md's "Where is X" and the other pages point at files that are there."""
    named = re.compile(r"`((?:workbench|studies|benchmarks|scripts|tests|examples)/[\w/.-]+\.(?:py|md|csv))`")
    pages = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")]
    paths = {(page.name, path) for page in pages for path in named.findall(page.read_text())}
    assert len(paths) > 40
    missing = sorted((page, path) for page, path in paths if not (ROOT / path).exists() and "NAME" not in path)
    assert not missing, f"the docs name files that are not in the repository: {missing}"
