"""What all methods share: the ``run`` entry point, seeding, budgets and validation.

A method is a frozen dataclass of settings. ``run(target, seed=..., grad_budget=...)``
validates its inputs in Python (kernels never raise), derives one
``np.random.Generator`` per chain from the seed with ``SeedSequence.spawn`` (so results do
not depend on how chains are scheduled over threads), and returns a :class:`Result`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import TargetError
from ..result import Budget, Result
from ..target import Target


def resolve_seed(seed) -> int:
    """The seed to use and record: the given one, or fresh entropy when None."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    return int(seed)


def chain_rngs(seed: int, chains: int) -> list[np.random.Generator]:
    """One independent generator per chain, derived from ``seed`` (SeedSequence.spawn)."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(chains)]


def check_positive_int(name: str, value, minimum: int = 1) -> None:
    """ValueError naming the setting unless ``value`` is an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class Method:
    """Base class: subclasses are frozen dataclasses of settings implementing ``_run``."""

    @property
    def name(self) -> str:
        return type(self).__name__

    def settings(self) -> dict:
        """The settings as a plain dict (for tables, reports and cache keys)."""
        return dataclasses.asdict(self)

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
        return self._run(target, seed, budget)

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:  # pragma: no cover
        raise NotImplementedError
