"""``NUTS(metric="auto")`` on another form of the target: a non-centred hierarchy, where the model
as written is a funnel.

A target may carry a ``reparametrization`` with maps both ways (``from_pymc`` offers the
non-centred form of every ``Normal`` whose scale is a free variable: ``workbench/pymc_reparam.py``).
Which form samples better depends on the data (centred where they pin each group's effect down,
non-centred where they do not: Papaspiliopoulos, Roberts & Skold 2007) and is not known before
sampling. Gorinova, Moore & Hoffman (2020) choose it by the ELBO of a variational fit; here the
first phase's draws decide, by the criterion that already ranks the metrics: mapped to the form's
coordinates, with their gradients there, the held-out Fisher divergence of the best linear map
(diagonal or low-rank) fitted to them (``mcmc/flow_fit.py``), per coordinate, against the same on the
target's own coordinates (the rewrite and its test: ``docs/benchmarks/noncentring.csv``). The draws are
posterior draws in either coordinates, so both losses measure how far from Gaussian the posterior
is in each: the quantity a sampler's step size pays for.

When the form wins by ``FORM_GAIN``, the rest of the run is the same method on the form, from the
first phase's last draws mapped over; its draws come back to the target's coordinates, and every
gradient of both forms is counted (one gradient of the form is one of the target's density).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np

from ..mcmc.flow import finite_rows, gradients
from ..mcmc.flow_fit import fit_flow
from ..result import Result
from ..running.clock import PhasedClock
from ..running.phases import Phases
from .chain_sampler import deferred_chain_health
from .phase_result import PhaseNotes, joined

# the form is sampled when its linear maps' held-out Fisher divergence per coordinate is below this
# share of the target's: a form that only matches the target's own is not worth a second warmup
# (centred eight schools: 2.2 per coordinate, 0.12 on the non-centred form)
FORM_GAIN = 0.5


class FormChoice(NamedTuple):
    """The form to sample and why: its ``Target``, the target's ``Reparametrization``, the first
    draws mapped to it (chains, n, d') and both losses per coordinate."""

    form: Any
    reparametrization: Any
    draws: np.ndarray
    own_loss: float
    form_loss: float


def linear_loss(fit, dim: int) -> float:
    """The best held-out Fisher divergence per coordinate of a linear map (diagonal or low-rank):
    how far from Gaussian the draws are in their coordinates. Not a flow's: on the target's own
    coordinates a flow fits the draws it has seen, and a funnel's first draws have not seen its neck."""
    return min(fit.diagonal_loss, fit.low_rank_loss) / dim


def weigh_form(target, fit, draws: np.ndarray, phases: Phases, rng) -> FormChoice | None:
    """The target's other form, if it fits a Gaussian better than the target by ``FORM_GAIN`` on the
    first phase's ``draws`` (chains, n, d) (module docstring); None when the target has no form
    with maps both ways. The gradients at the mapped draws are paid from ``phases``; building the
    form is compile time."""
    form_of = getattr(target, "reparametrization", None)
    if form_of is None or form_of.from_target is None or draws.shape[1] == 0:
        return None
    building = time.perf_counter()  # the form and its maps compile on first use: compile time
    form = form_of.build()
    form_of.to_target(form_of.from_target(draws[:, :1]))
    phases.compile_seconds += time.perf_counter() - building
    z = np.asarray(form_of.from_target(draws), dtype=float)
    flat = z.reshape(-1, form.dim)
    _, g = gradients(form, flat)
    phases.pay(len(flat))
    flat, g = finite_rows(flat, g)
    if len(flat) < 2 * form.dim:
        return None
    form_fit = fit_flow(flat, g, rng, max_rounds=0)
    theirs = linear_loss(form_fit, form.dim)
    ours = linear_loss(fit, target.dim)
    if not theirs < FORM_GAIN * ours:
        return None
    return FormChoice(form, form_of, z, ours, theirs)


def on_target(method, target, seed, run: Result, choice: FormChoice, phases: Phases, started: float,
              notes: PhaseNotes, warm: list) -> Result:
    """The run on the form (``run``) as a run on ``target``: its draws and warmup draws mapped back,
    the first phase's gradients, warmup draws and messages before its own."""
    to_target = choice.reparametrization.to_target
    draws = np.asarray(to_target(run.draws), dtype=float) if run.draws.shape[1] else \
        np.zeros((run.draws.shape[0], 0, target.dim))
    if run.warmup_draws is not None and run.warmup_draws.shape[1]:
        warm = [*warm, np.asarray(to_target(run.warmup_draws), dtype=float)]
    message = (f"metric='auto': sampled the target's other form ({choice.reparametrization.name}) and mapped the "
               f"draws back: the first draws' held-out Fisher divergence per coordinate was {choice.form_loss:.3g} "
               f"there against {choice.own_loss:.3g} on the target's own coordinates")
    info = {**notes.info, **run.info, "metric": method.metric,
            "reparametrization": {"form": choice.reparametrization.name, "own_loss": choice.own_loss,
                                  "form_loss": choice.form_loss, "first_phase_grad_evals": phases.spent}}
    clock = PhasedClock(time.perf_counter() - started, phases.compile_seconds + run.cost.compile_seconds)
    result = method.result(target, seed, draws, clock, grad_evals=phases.spent + run.cost.grad_evals,
                           warmup_grad_evals=phases.spent + run.cost.warmup_grad_evals, stats=run.stats,
                           messages=[*notes.first, message, *notes.faults, *run.messages], info=info,
                           warmup_draws=joined(warm), interrupted=run.interrupted)
    result.defer_health(deferred_chain_health(draws, run.stats, getattr(method, "max_depth", None), target.identified))
    return result
