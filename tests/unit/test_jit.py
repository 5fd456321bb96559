"""workbench/jit.py: one way to compile, and the house options it states."""

import re
from pathlib import Path

import numba
import pytest

from workbench.jit import HOUSE_OPTIONS, REASSOC, jit

LIBRARY = Path(__file__).resolve().parents[2] / "workbench"


def library_modules():
    """The package's source files (not the adapters cached under __pycache__)."""
    return [p for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts]


def test_the_house_jit_states_cache_error_model_and_named_options():
    @jit
    def plain(x):
        return x / 0.0  # NumPy's error model: inf, not ZeroDivisionError

    @jit(fastmath=True, nrt=False, inline=True)
    def tuned(x):
        return x + 1.0

    assert plain(1.0) == float("inf")
    assert tuned(1.0) == 2.0
    assert type(plain._cache).__name__ == "FunctionCache"  # cache=True: kept on disk across processes
    assert plain.targetoptions["error_model"] == "numpy"
    assert tuned.targetoptions["fastmath"] == REASSOC and tuned.targetoptions["_nrt"] is False
    assert tuned.targetoptions["inline"] == "always"
    assert HOUSE_OPTIONS == {"cache": True, "error_model": "numpy"}
    assert isinstance(plain, numba.core.registry.CPUDispatcher)


# the one allowed exception: a closure over the user's logp cannot be cached, so it is compiled plainly
# closures over a compiled function (a user's logp, a PyTensor graph): Numba cannot cache them
ALLOWED = {("user_density.py", "_finite_difference_logp_grad"), ("pymc_model.py", "_wrap"),
           ("flow.py", "logp_grad")}  # the target seen through a flow: a closure over the target's density


def test_the_library_compiles_only_through_the_house_jit():
    offenders = []
    for path in library_modules():
        if path.name in ("jit.py", "adapters.py"):  # the house jit, and the targets' adapters (user options)
            continue
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines, 1):
            if re.match(r"\s*@(numba\.)?njit\b|\s*@numba\.jit\b|\s*from numba import .*\bn?jit\b|.*=\s*numba\.n?jit\(",
                        line.split("#")[0]):
                enclosing = next((m.group(1) for m in (re.match(r"\s*def (\w+)", l) for l in reversed(lines[:n])) if m), "")
                if (path.name, enclosing) not in ALLOWED and "boundscheck=True" not in line:
                    offenders.append(f"{path.relative_to(LIBRARY)}:{n}: {line.strip()}")
    assert not offenders, "compile with workbench.jit.jit:\n" + "\n".join(offenders)


def test_docstrings_cite_papers_not_issue_numbers():
    hits = [f"{p.relative_to(LIBRARY)}:{n}" for p in library_modules()
            for n, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\bissue \d+", line, re.I)]
    assert not hits, hits


def test_kernel_settings_cast_by_annotation_so_every_instance_has_one_numba_type():
    from typing import NamedTuple

    import numba

    from workbench.jit import kernel_settings, settings_type

    class Settings(NamedTuple):
        steps: int
        rate: float
        budget: int = -1

    s = kernel_settings(Settings, steps=3.0, rate=1)
    assert s == (3, 1.0, -1) and type(s.steps) is int and type(s.rate) is float
    assert numba.typeof(s) == settings_type(Settings) == numba.typeof(kernel_settings(Settings, steps=True, rate=2))
    with pytest.raises(TypeError, match=r"unknown Settings fields \['rat'\]"):
        kernel_settings(Settings, steps=1, rat=0.1)
    with pytest.raises(TypeError, match=r"Settings needs \['rate'\]"):
        kernel_settings(Settings, steps=1)


# -- the kernels' adapter of a target's function (compile_kernel_form) -------------------
