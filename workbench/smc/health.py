"""Is a tempered SMC run fit to be trusted? Its own signals, as R-hat and ESS are a chain's.

- **Few particles.** A run whose particles are few for its dimension collapses onto a few
  ancestors at each resampling, and its draws, though weighted correctly, cover the posterior
  poorly (the funnel at d = 5 with 50 particles a run: 0.97 posterior sds off in a mean; the
  linear regression at d = 11: 0.56). Below ``max(MIN_PARTICLES, PARTICLES_PER_DIM d)`` a run says so.
- **Runs that disagree.** The independent runs' weighted means of each quantity should differ
  by no more than their standard errors (the weighted sd over the root of the weights' ESS);
  ``runs_disagreement`` is the between-run chi-square per degree of freedom, the largest over
  the quantities (of a target's identified quantities where it has them: a BNN's runs sit in
  equivalent labelings of its weights). Above ``RUNS_DISAGREE`` the runs are not estimating one
  posterior: each covers part of it (a mixture's peaks in unequal shares, a funnel's neck).
  Measured at the defaults (2,000 particles a run, 4 runs, seeds 0-1): 2.2-7.4 on a 10-d Gaussian,
  the banana and the regressions; 17-76 on the 3-peak mixture, 29-50 on the 5-d funnel (0.6
  sds off in a mean).
"""

from __future__ import annotations

import numpy as np

MIN_PARTICLES = 100
PARTICLES_PER_DIM = 20
RUNS_DISAGREE = 10.0
STUCK_CORRELATION = 0.2


def particles_needed(dim: int) -> int:
    """The fewest particles a run of a ``dim``-d target is trusted with."""
    return max(MIN_PARTICLES, PARTICLES_PER_DIM * dim)


def few_particles_message(particles: int, dim: int) -> list[str]:
    """The health message (flag "few particles") for runs of ``particles`` at dimension ``dim``."""
    needed = particles_needed(dim)
    if particles >= needed:
        return []
    return [f"few particles: {particles} particles a run at d = {dim}, fewer than the {needed} a run is trusted "
            f"with ({PARTICLES_PER_DIM} a dimension, at least {MIN_PARTICLES}): resampling collapses them onto a few "
            "ancestors and the draws cover the posterior poorly; give a larger budget or fewer runs"]


def runs_disagreement(values: list[np.ndarray], log_weights: list[np.ndarray]) -> np.ndarray:
    """Per quantity, the between-run chi-square per degree of freedom of the runs' weighted means:
    sum_r (m_r - m)^2 / se_r^2 / (runs - 1), se_r the weighted sd over the root of the weights'
    ESS, m the mean of the m_r. ``values``: each run's (n, k) quantities; NaN for one run."""
    if len(values) < 2:
        return np.zeros(0)
    means, ses = [], []
    for x, log_w in zip(values, log_weights):
        w = np.exp(log_w - np.max(log_w))
        w /= w.sum()
        m = w @ x
        var = w @ (x - m) ** 2
        ess = 1.0 / np.sum(w * w)
        means.append(m)
        ses.append(np.sqrt(var / ess))
    means, ses = np.array(means), np.array(ses)
    with np.errstate(divide="ignore", invalid="ignore"):
        chi = ((means - means.mean(axis=0)) ** 2 / ses ** 2).sum(axis=0) / (len(means) - 1)
    return np.where(np.isfinite(chi), chi, 0.0)


def disagreement_message(chi: np.ndarray, names) -> list[str]:
    """The health message (flag "runs disagree") when a quantity's runs disagree beyond their errors."""
    if chi.size == 0 or not np.max(chi) > RUNS_DISAGREE:
        return []
    k = int(np.argmax(chi))
    return [f"runs disagree: the independent runs' means of {names[k]} differ {np.sqrt(chi[k]):.1f} times more than "
            f"their standard errors allow (chi-square per degree of freedom {chi[k]:.3g} > {RUNS_DISAGREE:g}): each "
            "run covers part of the posterior (separated peaks, a funnel's neck); more particles, or a method that "
            "reaches every part"]


def stuck_moves_message(outputs: list[dict]) -> list[str]:
    """The health message (flag "moves stuck") when, at some run's last stage, the moves (as many
    as the rule or the budget allowed) left the particles correlated above ``STUCK_CORRELATION``
    with where the stage started: they do not mix where the posterior ends (the 5-d funnel's last
    stages at 0.26-0.56, its draws 0.6-0.9 sds off with runs that agree, all missing the neck
    alike; the banana's arms 0.6-0.8 at 0.06-0.1 sds; a Gaussian's and the regressions' 0.02-0.06)."""
    stuck = [o["stages"]["correlation"][-1] for o in outputs
             if o["stages"]["correlation"] and o["stages"]["correlation"][-1] > STUCK_CORRELATION]
    if not stuck:
        return []
    return [f"moves stuck: at the last temperature of {len(stuck)} of {len(outputs)} runs the moves left the particles "
            f"correlated up to {max(stuck):.2f} with where they started (> {STUCK_CORRELATION}): they do not mix where "
            "the posterior ends (a funnel's neck, a banana's arms), and every run misses it alike"]


def run_messages(outputs: list[dict], interrupted: bool, runs: int) -> list[str]:
    """The messages of how the runs went: interrupted, a ladder cut short, NaN densities, one run."""
    messages = []
    if interrupted or any(o["interrupted"] for o in outputs):
        messages.append("interrupted: each run finished by reweighting to b = 1 from where it stopped")
    jumped = [r for r, o in enumerate(outputs) if o["jumped"] and not o["interrupted"]]
    if jumped:
        at = ", ".join(f"run {r}: from b = {outputs[r]['stages']['beta'][-2] if len(outputs[r]['stages']['beta']) > 1 else 0:.3g}"
                       f" (ESS {outputs[r]['stages']['ess'][-1]:.2g})" for r in jumped)
        messages.append(f"ladder incomplete: the gradient budget ran out before b = 1; the last step was an importance "
                        f"step ({at}): log Z and the draws are less reliable")
    nan = sum(o["nan_evals"] for o in outputs)
    if nan:
        start = sum(o["nan_start"] for o in outputs)
        messages.append(f"the density was NaN at {nan} evaluations ({start} of the starting particles, given weight "
                        f"zero; the rest were rejected moves)")
    if runs == 1:
        messages.append("one run: log Z has no standard error (use runs >= 2)")
    return messages
