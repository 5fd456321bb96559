"""A phased run's report: what the phases before the last carry into it (:class:`PhaseNotes`),
what one phase tells the next (:func:`adapted`, :func:`diverged`), and the :class:`Result` the
run returns, the last phase's draws with every phase's cost (:func:`phased_result`), or none
when Ctrl-C stopped a phase before the last (:func:`stopped`). The phases are
``sampling/flow_metric.py``'s (``metric="flow"`` and ``"auto"``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..result import Result
from ..running.clock import PhasedClock
from ..running.peaks import unvisited_message
from ..running.phases import Phases
from .chain_sampler import deferred_chain_health


class PhaseNotes:
    """What a phased run's report carries from the phases before the last (whose own messages and
    info it keeps): the first phase's start (``init="pathfinder"``: its message and gradients) and
    any phase's faults of the density (NaN densities, metric estimates that failed)."""

    FAULTS = ("NaN density", "density raised")

    def __init__(self):
        self.first: list[str] = []
        self.info: dict = {}
        self.faults: list[str] = []
        self.peaks = None  # the mode search the chains started from (peaks.py)

    @classmethod
    def of_first(cls, run: Result, chains) -> PhaseNotes:
        """The notes of a run's first phase, and of its ``chains``' start (where they were found
        by the method itself: a Pathfinder start's message and info) and mode search."""
        notes = cls()
        if chains.start is not None:
            notes.first = [chains.start.message]
            notes.info.update(chains.start.info)
        notes.peaks = chains.peaks
        notes.add(run, "warmup phase 1")
        return notes

    def add(self, run: Result, phase: str) -> None:
        self.faults.extend(f"{phase}: {m}" for m in run.messages
                           if m.startswith(self.FAULTS) or "metric estimates were not finite" in m)


def named_phase(text: str, messages) -> str:
    """A phase's warning (``"NUTS on t: what happened"``) with the warmup phase it came from named,
    where the run's ``messages`` say so (:meth:`PhaseNotes.add` keeps a phase's faults as
    ``"warmup phase k: what happened"``); else ``text`` as it is (the last phase's own)."""
    head, sep, body = text.partition(": ")
    if sep:
        for message in messages:
            phase, named, rest = message.partition(": ")
            if named and phase.startswith("warmup phase") and rest == body:
                return f"{head} ({phase}): {body}"
    return text


def joined(parts) -> np.ndarray | None:
    """Phases' draws (chains, n_i, d) one after another; None when there are none, or when a
    phase cut to Ctrl-C kept fewer chains than the others."""
    parts = [p for p in parts if p is not None]
    if not parts or len({p.shape[0] for p in parts}) > 1:
        return None
    return np.concatenate(parts, axis=1)


def phased_result(method, target, seed, final: Result, draws, started, phases: Phases, warmup_grad_evals,
                   notes: PhaseNotes, messages, warm, flow_info, chosen, extra=None) -> Result:
    """The run's :class:`Result`: the last phase's draws (in x) and stats, every phase's gradients,
    warmup draws and faults, what was chosen and why (``messages``, ``info["flow"]``)."""
    # "metric" is the setting asked for, as a plain run reports it ("auto" or "flow"; the last
    # phase's own kernel metric is an implementation detail: "identity" with the fit's scales);
    # "metric_chosen" is what the warmup chose
    info = {**notes.info, **final.info, "metric": method.metric, "flow": flow_info, "metric_chosen": chosen,
            **(extra or {})}
    result = method.result(target, seed, draws, PhasedClock(time.perf_counter() - started, phases.compile_seconds),
                           grad_evals=phases.spent, warmup_grad_evals=warmup_grad_evals, stats=final.stats,
                           messages=[*notes.first, *messages, *notes.faults, *final.messages,
                                     *unvisited_message(notes.peaks, draws)], info=info,
                           warmup_draws=joined(warm), interrupted=final.interrupted)
    result.defer_health(deferred_chain_health(draws, final.stats, getattr(method, "max_depth", None), target.identified))
    return result


def stopped(method, target, seed, run, warm, phases: Phases, started, phase: str) -> Result:
    """Ctrl-C in a phase before the last: no draws (the chains had not finished warming up), the
    warmup's draws so far (when every phase kept every chain), every gradient counted."""
    return method.result(target, seed, np.zeros((method.chains, 0, target.dim)),
                         PhasedClock(time.perf_counter() - started, phases.compile_seconds),
                         grad_evals=phases.spent, warmup_grad_evals=phases.spent, interrupted=True,
                         warmup_draws=joined(warm),
                         messages=[f"interrupted in {phase} of the warmup ({phases.spent:,} gradients): no draws kept",
                                   *[m for m in run.messages if not m.startswith("interrupted")]])


def diverged(run: Result) -> bool:
    """Whether a phase diverged: in its draws, or in its warmup (a raised target acceptance)."""
    return bool(np.any(run.stats.get("diverging", 0)) or run.info.get("target_accept_raised_to"))


def adapted(run: Result, keep_target: bool = False) -> dict:
    """What a phase's warmup adapted, for the next phase to start from where the chains are: the
    diagonal of the metric each chain ended with and their median step size (a phase started from
    the identity metric and a fresh step-size search sent its first proposals far out: on a
    regression whose coefficients' scales span orders of magnitude, to where the density
    underflowed). With ``keep_target``, the target acceptance its divergences raised too
    (``NUTS(adapt_target=True)``), whichever metric the phase ran: divergences say where the
    posterior is hard, and a short last warmup has no time to learn them again. What took it was
    measured (seeds 0-39 and 0-29, the first phase on the low-rank metric): the diagonal phases that
    follow do (non-centred eight schools: 30 of 40 seeds pass posteriordb's standard with it, 15 of 40
    without); the low-rank route does not (the Brownian motion: median ESS per 1,000 gradients 5.0
    without it, 3.8 with, 11 of 30 seeds passing either way)."""
    out = {}
    inv_mass = run.info.get("inv_mass")
    if inv_mass is not None and np.all(np.isfinite(inv_mass)) and np.all(np.asarray(inv_mass) > 0):
        out["inv_metric"] = np.asarray(inv_mass, dtype=float)
    steps = [s for s in run.info.get("step_size", []) if math.isfinite(s) and s > 0]
    if steps:
        out["step_size"] = float(np.median(steps))
    raised = run.info.get("target_accept_raised_to") if keep_target else None
    if raised:
        out["target_accept"] = float(max(raised))
    return out
