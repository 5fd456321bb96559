"""Inference methods, each a frozen dataclass of settings with ``run(target, seed=..., grad_budget=...)``.

Settings share names across methods: ``chains``, ``warmup``, ``draws`` for samplers (and
``Exact``), ``steps`` for VI, ``n`` for importance and rejection sampling.

``build_method({"method": "NUTS", "chains": 2})`` builds one from a spec (studies, caches);
``available()`` lists the method names.
"""

from .base import Method
from .exact import Exact
from .hmc import HMC, NUTS
from .importance import ImportanceSampling, RejectionSampling
from .laplace import Laplace, LaplaceError
from .metropolis import IndependenceMH, RandomWalkMH
from .nn4post import MeanFieldVI, NN4Post, VIDivergenceError



def available() -> list[str]:
    """The names of the methods (classes a spec's ``"method"`` may name)."""
    return sorted(n for n, v in globals().items()
                  if isinstance(v, type) and issubclass(v, Method) and v is not Method and not n.startswith("_"))


def build_method(spec: dict) -> Method:
    """The method a spec describes: ``{"method": "NUTS", **settings}``."""
    settings = dict(spec)
    name = settings.pop("method", None)
    cls = globals().get(name) if isinstance(name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, Method)) or cls is Method:
        raise ValueError(f"unknown method {name!r}; methods: {available()}")
    return cls(**settings)


__all__ = [
    "available",
    "build_method",
    "Exact",
    "HMC",
    "ImportanceSampling",
    "IndependenceMH",
    "Laplace",
    "LaplaceError",
    "MeanFieldVI",
    "NN4Post",
    "Method",
    "NUTS",
    "RandomWalkMH",
    "RejectionSampling",
    "VIDivergenceError",
]
