"""Targets described by plain data, so that a study's worker process can build the target a
cell names, and a cache key can say which target it was:

    {"factory": "gaussian", "dim": 10, "scales": "logspace"}  -> wb.targets.gaussian(dim=10, scales="logspace")
    {"factory": "posterior", "name": "lgcp", "backend": "numba"}  -> a bundled posterior
    {"factory": "source", "source": "path/to/file.py:NAME"}      -> NAME from a user's file
    {"factory": "registered", ...}                               -> a Target object handed over in this process
    {"factory": "simulated", "of": SPEC, "seed": S, "index": I}  -> data set I simulated from SPEC's model

``load_source`` reads ``path/to/file.py:NAME`` (``workbench compare`` and the study workers).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import TargetError
from ..target import Target, Truth
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


def load_source(source: str, backend: str = "numba", observed_as_data: bool = False) -> Target:
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
        # "model" is the usual name: "the PyMC model in file.py", not "PyMC model model"
        what = "the PyMC model" if name == "model" else f"the PyMC model {name!r}"
        return Target.from_pymc(obj, name=label, description=f"{what} in {path.name}",
                                observed_as_data=observed_as_data)
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
        return load_source(spec["source"], backend=spec.get("backend", "numba"),
                           observed_as_data=spec.get("observed_as_data", False))
    if factory == "simulated":  # a data set simulated from a model (wb.calibrate)
        return simulated_target(build_target(spec["of"]), spec["seed"], spec["index"], {"factory": factory, **spec})
    if factory == "registered":
        raise ValueError("this target was built from a Python object in another process; run it with the serial executor")
    if factory not in FACTORIES:
        raise ValueError(f"unknown target {factory!r}; built-in targets: {sorted(FACTORIES)}")
    spec.pop("data_digest", None)  # recorded in a spec to tell custom data apart in caches, not an argument
    return FACTORIES[factory](**spec)


def simulated_target(base: Target, seed: int, index: int, spec: dict | None = None) -> Target:
    """Data set ``index`` simulated from ``base``'s model (its ``generative`` form) with the
    stream ``SeedSequence([seed, index])``: the target of the same model on the simulated data,
    whose ``truth`` holds the parameters it was simulated at (``extras["simulated"]``), in the
    target's coordinates, and nothing else (its posterior has no closed form here)."""
    if base.generative is None:
        raise TargetError(f"target {base.name!r} has no generative form: it cannot simulate data sets "
                          "(a PyMC model, or a built-in model with one: workbench calibrate lists them)")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(index)]))
    theta, data = base.generative.simulate(rng)
    return base.replace(
        name=f"{base.name}_sim{index}", data=data,
        truth=Truth(source="simulation", extras={"simulated": np.asarray(theta, dtype=float), "index": int(index)}),
        reparametrization=None,
        spec=spec or {"factory": "simulated", "of": dict(base.spec), "seed": int(seed), "index": int(index)},
        initial_point=base.initial_point,
    )


def build_target(spec: dict):
    """The target a spec describes (cached per process: building a BNN target loads data)."""
    return _target_from_json(json.dumps(spec, sort_keys=True))




def resolve(target, backend: str = "numba", observed_as_data: bool = False) -> tuple[Target, dict, bool]:
    """(target, the cells' target spec, whether worker processes can rebuild it) for what
    ``workbench compare`` and ``workbench calibrate`` take: a Target, a built-in target's name or
    call (``gaussian(dim=10)``), a bundled posterior's name, or ``path/to/file.py:NAME``.
    ``observed_as_data``: a PyMC model's observed values are data (``wb.calibrate``)."""
    from .. import targets
    from ..cache import data_digest
    from . import posteriors

    if isinstance(target, Target):
        if target.spec.get("factory") in targets.available():
            return target, dict(target.spec), True
        spec = {"factory": "registered", "name": target.name, "spec": dict(target.spec),
                "data_digest": data_digest(target)}
        return target, register_target(target, spec), False
    if not isinstance(target, str):
        raise TargetError(f"compare needs a Target or a name (str), got {type(target).__name__}")
    if backend not in posteriors.BACKENDS:
        raise TargetError(f"backend must be one of {posteriors.BACKENDS}, got {backend!r}")
    if ":" in target and target.rpartition(":")[0].endswith(".py"):
        built = load_source(target, backend, observed_as_data=observed_as_data)
        path = str(Path(target.rpartition(":")[0]).expanduser().resolve())
        # the file, and what loading it gave (a file may read its settings from the environment):
        # the data, and a Numba density's code with the globals it reads (Target.from_numba's spec)
        spec = {"factory": "source", "source": f"{path}:{target.rpartition(':')[2]}",
                "file_digest": file_digest(path), "data_digest": data_digest(built),
                **({"code": built.spec["code"]} if "code" in built.spec else {}),
                **({"observed_as_data": True} if observed_as_data else {})}
        # this process's cells use the target just built (a PyMC model compiles in seconds);
        # worker processes rebuild it from the spec
        return built, register_target(built, spec), True
    if target in posteriors.available():
        built = posteriors.load(target, backend, observed_as_data)
        return built, register_target(built, dict(built.spec)), True
    name, kwargs = _call_syntax(target)
    if name in targets.available() and name != "posterior":
        try:
            built = getattr(targets, name)(**kwargs)
        except TypeError as exc:
            raise TargetError(f"{target!r}: {exc}; give its arguments as in Python, e.g. "
                              f"'gaussian(dim=10, scales=\"logspace\")'") from exc
        return built, {"factory": name, **kwargs}, True
    raise TargetError(
        f"unknown target {target!r}: give a built-in target ({', '.join(k for k in targets.available() if k != 'posterior')}), "
        f"a bundled posterior ({', '.join(posteriors.available())}) or path/to/file.py:NAME"
    )


def _call_syntax(text: str) -> tuple[str, dict]:
    """``"gaussian(dim=10, scales='logspace')"`` -> ("gaussian", {...}); a bare name -> (name, {}).
    Keyword arguments with literal values only (parsed, never evaluated)."""
    import ast

    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return text, {}
    if isinstance(node, ast.Name):
        return node.id, {}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        try:
            return node.func.id, {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        except ValueError as exc:
            raise TargetError(f"{text!r}: arguments must be literals (numbers, strings, lists)") from exc
    return text, {}
