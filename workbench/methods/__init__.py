"""Inference methods, each a frozen dataclass of settings with ``run(target, seed=..., grad_budget=...)``.

Settings share names across methods: ``chains``, ``warmup``, ``draws`` for samplers (and
``Exact``), ``steps`` for VI, ``n`` for importance and rejection sampling.

``build_method({"method": "NUTS", "chains": 2})`` builds one from a spec (studies, caches);
``available()`` lists the method names.

This package holds the methods, one module each (or a family's: ``hmc.py`` has HMC and NUTS).
What they share is below them: ``workbench/running/`` (any run), ``workbench/sampling/`` (the
MCMC samplers), ``workbench/fitting/`` (the fitted approximations and importance weights); their
compiled kernels are in ``workbench/mcmc/``, ``workbench/vi/`` and ``workbench/smc/``.
"""

from ..fitting.health import VIDivergenceError
from ..running.method import Method, declared_methods
from .batch_and_match import BatchAndMatch
from .dadvi import DADVI
from .exact import Exact
from .full_rank_vi import FullRankVI
from .gmmvi import GMMVI
from .hmc import HMC, NUTS
from .importance import ImportanceSampling, RejectionSampling
from .laplace import Laplace, LaplaceError
from .metropolis import IndependenceMH, RandomWalkMH
from .microcanonical import MAMS, MCLMC
from .nn4post import MeanFieldVI, NN4Post
from .pathfinder import Pathfinder, PathfinderError
from .smc import SMC, SMCError

# the built-in methods, by the name a spec's "method" gives: every class of this package that
# declares its family (running/method.py); a new method is its module and its import above
METHODS: dict[str, type] = {cls.__name__: cls for cls in declared_methods() if cls.__module__.startswith(__name__ + ".")}


def available() -> list[str]:
    """The names of the built-in methods (classes a spec's ``"method"`` may name)."""
    return sorted(METHODS)


def method_class(name: str) -> type:
    """The method class ``name`` names: a built-in (``"NUTS"``) or your own, as
    ``"package.module:ClassName"`` (imported; it must subclass :class:`Method`)."""
    cls = METHODS.get(name) if isinstance(name, str) else None
    if isinstance(name, str) and ":" in name:
        import importlib

        module, _, attr = name.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"method {name!r} cannot be imported: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Method)) or cls is Method:
        raise ValueError(f"unknown method {name!r}; methods: {available()} (or 'package.module:ClassName')")
    return cls


def build_method(spec: dict) -> Method:
    """The method a spec describes: ``{"method": "NUTS", **settings}`` (see :func:`method_class`)."""
    settings = dict(spec)
    return method_class(settings.pop("method", None))(**settings)


__all__ = ["Method", "available", "build_method", "method_class", "LaplaceError", "PathfinderError", "SMCError",
           "VIDivergenceError", *sorted(METHODS)]
