"""Sizing tempered SMC to a gradient budget, so that the runs finish their ladders.

How many gradients a particle costs is known only after the ladder is climbed: the adaptive
temperatures set the number of stages (about 30 at d = 10, far more on a funnel) and the
decorrelation rule the moves per stage (5 to 20). So under a budget a pilot run of a few
particles climbs the ladder first, within at most ``PILOT_SHARE`` of the budget; its cost per
particle sizes the runs (with a ``MARGIN``), and the particles are cut to what fits. The
number of stages hardly depends on the particles (the next temperature keeps a fixed share of
their conditional ESS), so the pilot's cost per particle carries over. A pilot that cannot
finish within its share, or runs too small to be worth making, refuse the budget at the start,
saying what it would take.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from ..errors import BudgetTooSmallError

PILOT_MAX, PILOT_MIN = 64, 8  # the pilot's particles: an eighth of a run's, within these
PILOT_SHARE = 0.25  # the share of the budget the pilot may spend
# what a particle's ladder costs, for sizing the pilot (measured at the defaults: 480-890 gradients
# a particle for 64 particles at d = 10, eight schools and a Gaussian; 420-550 for 200-300)
COST_GUESS = 1000
# the runs are sized to cost at most 1 / MARGIN of what is left; the pilot's few particles already
# overestimate a run's cost per particle (by 1.45-1.6x, measured as above)
MARGIN = 1.1
# runs smaller than the pilot cost more a particle than it did (their moves decorrelate less by the
# rule's noisier measure: 26 particles overran a 37-particle pilot's cost by 1.1x on a Gaussian)
SMALL_RUN_MARGIN = 1.5
MIN_PARTICLES = 8  # fewer particles per run than this: the budget is refused


class Sizing(NamedTuple):
    """The particles per run, the pilot's gradients, and what to tell the user (or None)."""

    particles: int
    pilot_grad_evals: int
    message: str | None


def pilot_particles(particles: int, available: int | None = None) -> int:
    """The pilot's particles for runs of ``particles`` under ``available`` gradients: an eighth
    of a run's, no more than its share of the budget pays for at ``COST_GUESS`` a particle."""
    n = min(PILOT_MAX, particles // 8)
    if available is not None:
        n = min(n, int(PILOT_SHARE * available) // COST_GUESS)
    return int(max(PILOT_MIN, n))


def size_for_budget(run_pilot: Callable[[int, int], dict], particles: int, runs: int, available: int,
                    what: str) -> Sizing:
    """Size ``runs`` runs of at most ``particles`` particles to ``available`` gradients.

    ``run_pilot(n, limit)`` makes one run of n particles that may spend ``limit`` gradients and
    returns its output (``grad_evals``, ``jumped``: whether it ran out before b = 1, ``stages``);
    ``what`` names the method and target in errors. Raises ValueError when the budget cannot
    pay for a finished ladder."""
    n_pilot = pilot_particles(particles, available)
    cap = int(PILOT_SHARE * available)
    out = run_pilot(n_pilot, cap)
    spent = int(out["grad_evals"])
    betas = out["stages"]["beta"]
    if out["jumped"] and not out.get("interrupted", False):
        reached = betas[-2] if len(betas) > 1 else 0.0
        raise BudgetTooSmallError(
            f"grad_budget is too small for {what}: a pilot run of {n_pilot} particles, which sizes the runs to "
            f"the budget, did not finish its tempering ladder within {PILOT_SHARE:.0%} of it ({cap:,} gradients; it "
            f"reached b = {reached:.3g} of 1); give a budget several times larger")
    per_particle = spent / n_pilot
    fits = int((available - spent) / (runs * per_particle * MARGIN))
    margin = MARGIN
    if fits < n_pilot:
        margin = SMALL_RUN_MARGIN
        fits = int((available - spent) / (runs * per_particle * margin))
    if fits >= particles:
        return Sizing(particles, spent, None)
    if fits < MIN_PARTICLES:
        needed = spent + math.ceil(runs * MIN_PARTICLES * per_particle * SMALL_RUN_MARGIN)
        raise BudgetTooSmallError(
            f"grad_budget is too small for {what}: its ladder costs about {per_particle:,.0f} gradients a particle "
            f"(a pilot run of {n_pilot} particles), so {runs} run(s) of at least {MIN_PARTICLES} particles need "
            f"about {needed:,} gradients; give a larger budget or fewer runs")
    return Sizing(fits, spent, (
        f"budget: {fits} particles per run, not {particles}: a pilot run of {n_pilot} particles spent "
        f"{per_particle:,.0f} gradients a particle on its ladder ({spent:,} in all, counted), and {runs} run(s) of "
        f"{fits} fit in what the budget leaves, with a {margin - 1:.0%} margin"))
