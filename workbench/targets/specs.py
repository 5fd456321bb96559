"""Targets described by plain data, so that a study's worker process can build the target a
cell names, and a cache key can say which target it was:

    {"factory": "gaussian", "dim": 10, "scales": "logspace"}  -> wb.targets.gaussian(dim=10, scales="logspace")
    {"factory": "posterior", "name": "lgcp", "backend": "numba"}  -> a bundled posterior
    {"factory": "source", "source": "path/to/file.py:NAME"}      -> NAME from a user's file
    {"factory": "registered", ...}                               -> a Target object handed over in this process

``load_source`` reads ``path/to/file.py:NAME`` (``workbench compare`` and the study workers).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from functools import lru_cache
from pathlib import Path

from ..errors import TargetError
from ..target import Target
from . import FACTORIES


def _is_pymc_model(obj) -> bool:
    pm = sys.modules.get("pymc")
    return pm is not None and isinstance(obj, pm.Model)


def _module_from_file(path: Path):
    module_name = f"workbench_user_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # Numba's cache and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[module_name]
        raise
    return module


def load_source(source: str, backend: str = "numba") -> Target:
    """The target ``path/to/file.py:NAME`` describes (see the module docstring)."""
    from numba.core.registry import CPUDispatcher

    path_text, _, name = source.rpartition(":")
    if not path_text or not name:
        raise TargetError(f"a target from a file is written path/to/file.py:NAME, got {source!r}")
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise TargetError(f"no file {path_text!r} (looked for {path}); write TARGET as path/to/file.py:NAME")
    module = _module_from_file(path)
    if not hasattr(module, name):
        defined = sorted(k for k in vars(module) if not k.startswith("_"))
        raise TargetError(f"{path.name} defines no {name!r}; it defines: {', '.join(defined)}")
    obj = getattr(module, name)
    if callable(obj) and not isinstance(obj, (CPUDispatcher, Target)) and not _is_pymc_model(obj):
        try:
            obj = obj()
        except TypeError as exc:
            raise TargetError(
                f"{path.name}:{name} is a Python function that needs arguments ({exc}); NAME must be a Numba "
                "logp_grad(theta, grad_out, data), a PyMC model, a Target, or a function of no arguments "
                "returning one of them"
            ) from exc
    label = f"{path.stem}.{name}"
    if isinstance(obj, Target):
        return obj
    if _is_pymc_model(obj):
        return Target.from_pymc(obj, name=label, description=f"PyMC model {name} from {path.name}")
    if isinstance(obj, CPUDispatcher):
        dim = getattr(module, "dim", None)
        if dim is None:
            raise TargetError(
                f"{path.name} defines the Numba function {name!r} but no `dim`: add `dim = D` (the number of "
                "parameters) at the top level of the file, and `data = (X, y)` if the function reads data"
            )
        data = getattr(module, "data", ())
        return Target.from_numba(obj, dim=dim, data=data, name=label, description=f"{name} from {path.name}")
    raise TargetError(
        f"{path.name}:{name} is a {type(obj).__name__}; it must be a Numba logp_grad(theta, grad_out, data) "
        "(decorated with @numba.njit), a PyMC model, a workbench Target, or a function of no arguments returning one"
    )


def file_digest(path: str) -> str:
    """The digest of a user's file: part of its target spec, so an edited file is a new target."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


# targets built in this process from Python objects (``wb.compare(target)``): spec JSON -> Target.
# A spec naming one can only be run here (the serial executor); specs of built-in targets,
# bundled posteriors and source files are rebuilt by any worker.
_REGISTERED: dict = {}


def register_target(target, spec: dict) -> dict:
    """Make ``build_target(spec)`` return ``target`` in this process; returns ``spec``."""
    _REGISTERED[json.dumps(spec, sort_keys=True)] = target
    return spec


@lru_cache(maxsize=64)
def _target_from_json(text: str):
    if text in _REGISTERED:
        return _REGISTERED[text]
    spec = json.loads(text)
    factory = spec.pop("factory")
    if factory == "source":  # a user's file: path/to/file.py:name (workbench compare)
        return load_source(spec["source"], backend=spec.get("backend", "numba"))
    if factory == "registered":
        raise ValueError("this target was built from a Python object in another process; run it with the serial executor")
    if factory not in FACTORIES:
        raise ValueError(f"unknown target {factory!r}; built-in targets: {sorted(FACTORIES)}")
    return FACTORIES[factory](**spec)


def build_target(spec: dict):
    """The target a spec describes (cached per process: building a BNN target loads data)."""
    return _target_from_json(json.dumps(spec, sort_keys=True))
