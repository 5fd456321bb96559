"""Inference methods, each a frozen dataclass of settings with ``run(target, seed=..., grad_budget=...)``.

Settings share names across methods: ``chains``, ``warmup``, ``draws`` for samplers (and
``Exact``), ``steps`` for VI, ``n`` for importance and rejection sampling.
"""

from .base import Method
from .exact import Exact
from .hmc import HMC, NUTS
from .importance import ImportanceSampling, RejectionSampling
from .laplace import Laplace, LaplaceError
from .metropolis import IndependenceMH, RandomWalkMH
from .nn4post import MeanFieldVI, NN4Post, VIDivergenceError

__all__ = [
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
