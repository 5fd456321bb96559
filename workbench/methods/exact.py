"""``Exact``: i.i.d. draws from the target's exact sampler, the reference row of every table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TargetError
from ..result import Budget, Result
from ..rng import chain_rngs
from ..running.clock import RunClock
from ..running.method import Examples, Method
from ..running.validation import check_positive_int
from ..target import Target


@dataclass(frozen=True)
class Exact(Method):
    """Independent exact draws from ``target.truth``: what a perfect sampler would give.

    Costs no density or gradient evaluations. Its errors in a comparison are the Monte
    Carlo floor for the same number of draws. ``Budget(draws=...)`` overrides ``draws``;
    a gradient budget does not apply (nothing is evaluated).
    """

    family = "reference"
    colour, marker = "#000000", "o"
    linestyle = "--"
    examples = Examples(quick={"chains": 2, "draws": 100}, budget=None)

    chains: int = 4
    draws: int = 1000

    def __post_init__(self):
        check_positive_int("chains", self.chains)
        check_positive_int("draws", self.draws)

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        if target.truth is None or target.truth.sampler is None:
            raise TargetError(
                f"Exact needs an exact sampler, and target {target.name!r} has none"
                + (" (its truth comes from reference draws)" if target.truth is not None else "")
            )
        n = budget.draws_or(self.draws)
        clock = RunClock()
        draws = np.stack([target.truth.sample(n, rng) for rng in chain_rngs(seed, self.chains)])
        clock.stop()
        if draws.shape != (self.chains, n, target.dim):
            raise TargetError(
                f"the exact sampler of {target.name!r} returned shape {draws.shape[1:]}, "
                f"expected ({n}, {target.dim})"
            )
        log_z = target.truth.log_z
        return self.result(target, seed, draws, clock, settings={**self.settings(), "draws": n},
                           log_z=log_z, log_z_se=0.0 if log_z is not None else None)
