"""The contract every method keeps: a frozen dataclass of settings with one entry point,
``run(target, seed=..., grad_budget=...)`` (``docs/architecture.md``, "Method").

A method writes three things: its settings (fields), their validation (``__post_init__``), and
``_run(target, seed, budget)``, which calls its kernel. ``Method.run`` does the rest: it checks
the target, merges ``grad_budget`` into the :class:`Budget`, fixes the seed, refuses a run that
cannot fit in memory, collects the density's faults, and calls ``_run``; ``Method.result``
builds the :class:`Result` with the method's name, the target's parameter names, the seed, the
settings and the cost.

A built-in method also declares, as class attributes, where it belongs: its ``family`` (how
tables and the verdict map group it), its ``colour`` and ``marker`` (the same on every figure),
and the ``examples`` the shared tests run it with. The registries read them from the class
(:func:`declared_methods`): adding a method is its module, its test module and its import in
``workbench/methods/__init__.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from .. import density_faults
from ..cache import object_digest
from ..errors import TargetError, WorkbenchError
from ..result import IN_RUN, Budget, Cost, Result
from ..target import Target
from .clock import RunClock
from .faults import with_faults_reported
from .memory import check_memory
from .validation import check_setting_types, resolve_seed

FAMILIES = ("MCMC", "VI", "importance and SMC", "reference")
"""The families a method declares (``Method.family``), in the order tables and legends show them;
``"reference"`` is ``Exact`` (draws from the truth, the gold row)."""


class Examples(NamedTuple):
    """The settings the shared tests run a built-in method with (``tests/unit/methods/``):
    ``quick``, a run of about a second on a 3-d Gaussian; ``budget``, a gradient budget that binds
    that run (None for a method that takes none); ``long``, a run of minutes on a slow 2-d density,
    to be interrupted (None for a method whose every run ends within a second)."""

    quick: dict
    budget: int | None
    long: dict | None = None


def declared_methods() -> list[type]:
    """Every method class that declares its ``family`` (the built-in ones, and any of a user's
    that does), in the order they were defined."""
    found, stack = [], list(Method.__subclasses__())
    while stack:
        cls = stack.pop(0)
        if "family" in vars(cls) and cls not in found:
            found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


@dataclass(frozen=True)
class Method:
    """Base class: subclasses are frozen dataclasses of settings implementing ``_run``.

    Every setting's type is checked against its annotation before the subclass's own
    ``__post_init__`` checks its range (see :func:`check_setting_types`).
    """

    family: ClassVar[str] = ""  # one of FAMILIES: declared by each built-in method
    colour: ClassVar[str] = ""  # on every figure (Okabe and Ito's or Paul Tol's colourblind-safe sets)
    marker: ClassVar[str] = ""  # a matplotlib marker
    linestyle: ClassVar[str] = "-"
    examples: ClassVar[Examples | None] = None

    def __post_init__(self):
        check_setting_types(self)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__post_init__")
        if own is not None and not getattr(own, "_checks_types", False):
            def __post_init__(self, _own=own):
                check_setting_types(self)
                _own(self)

            __post_init__._checks_types = True
            __post_init__.__doc__ = own.__doc__
            cls.__post_init__ = __post_init__

    @property
    def name(self) -> str:
        return type(self).__name__

    def settings(self) -> dict:
        """The settings as a plain dict (for tables, reports and cache keys); arrays become
        lists and objects (a proposal) their type's name and a digest of their content
        (``Gaussian#3f2a...``), so two different proposals never share a cache key."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            elif value is not None and not isinstance(value, (bool, int, float, str, list, tuple, dict)):
                value = f"{type(value).__name__}#{object_digest(value)}"
            out[f.name] = value
        return out

    def spec(self) -> dict:
        return {"method": self.name, **self.settings()}

    def run(
        self,
        target: Target,
        seed: int | None = None,
        grad_budget: int | None = None,
        *,
        budget: Budget | None = None,
    ) -> Result:
        """Run the method on ``target``.

        Parameters
        ----------
        target : Target
        seed : int, optional
            Makes the run reproducible; recorded in the result (drawn at random if None).
        grad_budget : int, optional
            Stop when this many gradient evaluations are spent (equal-cost comparisons);
            shorthand for ``budget=Budget(grad_evals=...)``.
        budget : Budget, optional
            Gradient evaluations, draws and/or steps.
        """
        if not isinstance(target, Target):
            raise TargetError(
                f"{self.name}.run needs a workbench Target, got {type(target).__name__}; "
                "build one with wb.Target.from_numba(...) or a wb.targets constructor"
            )
        if budget is None:
            budget = Budget()
        if grad_budget is not None:
            if budget.grad_evals is not None and budget.grad_evals != grad_budget:
                raise ValueError("grad_budget and budget.grad_evals disagree: give one")
            budget = dataclasses.replace(budget, grad_evals=grad_budget)
        seed = resolve_seed(seed)
        check_memory(self, target, self.memory_needs(target, budget))
        clock = RunClock()
        building = IN_RUN.set(True)  # the result's deferred health check waits until run() returns
        try:
            with density_faults.collect(target.kernel_data[0].ctypes.data) as faults:
                result = self._run(target, seed, budget)
            return with_faults_reported(result, faults, self.name, target)
        except KeyboardInterrupt:
            # Ctrl-C before the method's own loop (which keeps what it made) began: drawing
            # proposals, finding a start, compiling. Nothing was made; say so, as the loop would.
            clock.stop()
            return self.result(target, seed, np.zeros((getattr(self, "chains", 1), 0, target.dim)), clock,
                               interrupted=True,
                               messages=[f"interrupted while {self.name} was setting up, before its first "
                                         "draw: nothing kept (the density calls of the set-up are not counted)"])
        except Exception as exc:
            # a bare "division by zero" from deep inside a kernel does not say which run it ended
            if not isinstance(exc, WorkbenchError) and not getattr(exc, "__notes__", None):
                exc.add_note(f"raised while {self.name} ran on target {target.name!r} (seed {seed})")
            raise
        finally:
            IN_RUN.reset(building)

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:  # pragma: no cover
        raise NotImplementedError

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """The run's large arrays, name -> bytes (checked against the memory available before
        the run starts); the base class knows of the draws only."""
        chains = getattr(self, "chains", 1)
        draws = budget.draws_or(getattr(self, "draws", 0))
        return {"draws": 8 * chains * draws * target.dim}

    def result(
        self,
        target: Target,
        seed: int,
        draws: np.ndarray,
        clock: RunClock,
        *,
        grad_evals: int = 0,
        logp_evals: int | None = None,
        warmup_grad_evals: int = 0,
        settings: dict | None = None,
        **fields,
    ) -> Result:
        """The :class:`Result` of a run: ``draws`` (chains, n, d), its cost (``logp_evals``
        defaults to ``grad_evals``: ``logp_grad`` gives both at once), and any other
        :class:`Result` field (``approximation``, ``log_z``, ``stats``, ``messages``, ``info``...)."""
        return Result(
            method=self.name,
            target=target.name,
            draws=draws,
            cost=Cost(
                grad_evals=int(grad_evals),
                logp_evals=int(grad_evals if logp_evals is None else logp_evals),
                wall_seconds=clock.wall_seconds,
                compile_seconds=clock.compile_seconds,
                warmup_grad_evals=int(warmup_grad_evals),
            ),
            param_names=target.param_names,
            seed=seed,
            settings=self.settings() if settings is None else settings,
            **fields,
        )
