"""The phases of one run under its one gradient budget.

Some runs are several runs of the same method with other settings: ``NUTS(metric="auto")``'s
first phase, then the phase with the metric its fit chose; ``metric="flow"``'s phases
on the learned transform; ``MAMS(metric="dense")``'s whitened second phase. A phase is the
method's own ``_run`` with the phase's settings, called directly, not the public ``run``: the
seed, the memory check and the collection of the density's faults belong to the run and are
taken once, by ``Method.run``, and the chains' starting points (a mode search, a Pathfinder
start) once, by ``sampling.chain_sampler.start_chains``, before the first phase, which starts
from them. :class:`Phases` hands each phase its share of the run's budget and counts what every
phase, and the work between them, spent.
"""

from __future__ import annotations

import dataclasses

from ..result import Budget, Result
from ..target import Target

MIN_PHASE_GRAD_EVALS = 100
"""The smallest share of a budget a phase is given (fewer buys no iteration worth the name)."""


class Phases:
    """The phases of a run of ``method`` under ``budget``: the gradients they and the work
    between them spent (``spent``), their compile time (``compile_seconds``), and the draws the
    last phase keeps (``draws``: the budget's, else the method's)."""

    def __init__(self, method, budget: Budget):
        self.method = method
        self.budget = budget
        self.draws = budget.draws_or(method.draws)
        self.spent = 0
        self.compile_seconds = 0.0

    def share(self, fraction: float) -> int | None:
        """A phase's gradient budget: ``fraction`` of the run's (None: the run has no budget)."""
        if self.budget.grad_evals is None:
            return None
        return max(MIN_PHASE_GRAD_EVALS, int(fraction * self.budget.grad_evals))

    def rest(self) -> int | None:
        """What the phases so far left of the run's budget (the last phase's)."""
        if self.budget.grad_evals is None:
            return None
        return max(0, self.budget.grad_evals - self.spent)

    def rest_budget(self) -> Budget:
        """The run's budget less what the phases so far spent, for a run of its own that takes over
        from them (``metric="auto"`` going on with another form of the target)."""
        if self.budget.grad_evals is None:
            return self.budget
        return dataclasses.replace(self.budget, grad_evals=max(MIN_PHASE_GRAD_EVALS, self.rest()))

    def pay(self, grad_evals: int) -> None:
        """Count gradients spent between phases (a mode search, the gradients a fit learns from)."""
        self.spent += int(grad_evals)

    def run(self, target: Target, seed: int, grad_evals: int | None, **settings) -> Result:
        """One phase: the method with ``settings`` on ``target`` (the run's own, or a transform
        of it), under ``grad_evals``; its cost is counted."""
        phase = dataclasses.replace(self.method, **settings)
        # a budget spent already (by the starts) still runs the phase, which reports it spent
        result = phase._run(target, seed, Budget(grad_evals=None if grad_evals is None else max(1, grad_evals)))
        self.spent += result.cost.grad_evals
        self.compile_seconds += result.cost.compile_seconds
        return result
