"""``NUTS(metric="flow")``: NUTS on a learned transform of the posterior (``mcmc/flow.py``).

Warmup in phases, each a run of the same sampler, so that the flow is fitted on the chains' own
draws and gradients (nutpie's flow adaptation, Seyboldt et al., in
outline; NeuTra, Hoffman et al. 2019, is the same idea trained by VI):

1. on the posterior itself, with the diagonal metric (``metric="auto"``: the low-rank one,
   ``FIRST_METRIC_AUTO``): a short warmup and some draws per chain;
2. the flow fitted to the end of that warmup, those draws and their gradients
   (``mcmc/flow_fit.py``), which ranks the preconditioners (``metric="auto"``: the low-rank
   metric, chosen, learns its own from here; the others keep the fit's scales, and are fitted
   again after as many more draws, on draws alone: ``FIRST_TAIL``); if the diagonal
   metric already fits (its Fisher divergence small per coordinate, or not halved by the flow:
   ``sampling/metric_choice.py``), the chains simply go on with it; else,
   ``REFITS`` times: the flow fitted to every draw so far and its gradient (``mcmc/flow_fit.py``:
   the Fisher divergence, held-out draws deciding how many layers), then the sampler on the
   transformed density log p(T(z)) + log |det dT/dz|, started from each chain's last draw mapped
   to z: a short warmup and more draws, which, mapped back, join the others. Each fit sees draws
   that reach further into the posterior (a funnel's neck, a banana's arms) than the last;
3. the sampler on the last fit: its warmup and the run's draws, mapped back to x. Where a phase
   on the flow diverged (in its draws, or raising its target acceptance), this one halves its
   step where it must (WALNUTS, ``walnuts=True``): the fit is least exact where its draws are
   fewest, as in a funnel's neck. The phases on a flow adapt their step to an acceptance of at
   least ``FLOW_TARGET_ACCEPT`` (0.9), for the same reason.

The phases share ``warmup`` iterations (``FIRST_PHASE``, ``REFIT_PHASE``, ``LAST_WARMUP``; MAMS's last phase
``LAST_WARMUP_STAGED``, for its staged tuning). Every gradient of every phase is
counted (one gradient of the transformed density is one of the target's), and so are the
gradients at the draws the fits use (the sampler does not keep them). Fitting is wall time,
reported apart (``info["flow"]["training_seconds"]``). If a fit's held-out Fisher divergence is
not below the diagonal metric's, the run says so and goes on with the diagonal metric, from where
the chains are.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
import warnings

import numpy as np

from ..mcmc.affine import affine_target, dense_factor
from ..mcmc.flow import Flow, finite_rows, flow_density, gradients, pack_with_target
from ..mcmc.flow_fit import MAX_ROUNDS, FlowFit, fit_flow
from ..result import Result
from ..running.phases import Phases
from ..running.threads import one_blas_thread
from ..target import Target
from .chain_sampler import Chains, start_chains
from .metric_choice import EASY_PER_COORDINATE, EASY_WARMUP, EASY_WARMUP_STAGED, first_choice, low_rank_warmup, nothing_fits
from .phase_result import PhaseNotes, adapted, diverged, named_phase, phased_result, stopped
from .reparametrized import on_target, weigh_form

# a phased run's warnings are raised from the first line outside this package: the caller's
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REFITS = 3
# shares of ``warmup`` iterations: the first phase's warmup and draws, each refit phase's, the
# last phase's warmup (the draws the fits learn from are those phases' draws)
FIRST_PHASE = (0.1, 0.1)
REFIT_PHASE = (0.1, 0.1)
LAST_WARMUP = 0.1
# ... and MAMS's on the last fit, which tunes its step and then L in stages (as EASY_WARMUP_STAGED):
# in a tenth its L stage had too few draws to measure and kept L = sqrt(d) (mams_auto.csv's rows
# on a flow: the LGCP, the volatilities, centred eight schools)
LAST_WARMUP_STAGED = 0.4
# of the draws the first fit learns from, the share that are the first phase's last warmup
# iterations (where the chains already sample the posterior): they decide the metric; where it is
# the low-rank one, which learns its own, the first phase stops there. The diagonal metric and a
# flow keep the fit's scales: for them the chains go on for as many draws and the fit is made again
# from draws alone (breast cancer: 29 gradients a draw under a diagonal first phase's metric;
# nuts_auto.csv)
FIRST_TAIL = 0.5
# under a gradient budget, the shares of the first phase and each refit phase (the last phase has
# what they and the learned draws left, at least half of it)
PHASE_BUDGET = (0.1, 0.1)
# metric="auto"'s first phase samples with the low-rank metric: on a correlated posterior the
# diagonal one's trees are long (the diabetes regression: 38 leapfrog steps a draw against 6, and
# its 150 first iterations were 19k of the run's 53k gradients), and where the diagonal fits, the
# low-rank one keeps it (its eigenvalues within the cutoff). Against a diagonal first phase (paired
# seeds, LOW_RANK_WARMUP 0.4): ESS per gradient +25-30% on the regressions, -3% on the 100-d Gaussian
# (the first phase's eigen-directions of few draws cost gradients), passing as often on the
# benchmark rows (nuts_auto.csv; centred eight schools 131 of 240 seeds with it and 0.25, 138 without)
FIRST_METRIC_AUTO = "low_rank"
# the phases on a flow adapt their step to at least this acceptance (NUTS's own target is 0.8): a
# fit is least exact where its draws were fewest (a hierarchy's neck), and there the default step
# diverged. Measured against 0.8 (the commit that set it gives the counts): more runs pass on
# centred hierarchies, with more ESS per gradient; where the flow fits everywhere (nutpie's milder
# funnel) every run passes either way and the smaller step costs about a quarter of the ESS per
# gradient. Raising it in the refit phases alone, or in the last phase alone, bought half the passes
FLOW_TARGET_ACCEPT = 0.9
# metric="auto" fits a flow's layers up to this dimension: their fit's driver scores cost O(n d^2)
# (12.9 s at d = 1,000, where NUTS draws 200 in 0.5 s); above it "auto" ranks the diagonal and
# low-rank metrics alone (what metric="flow" asks for, it still does)
AUTO_FLOW_MAX_DIM = 500
@functools.lru_cache(maxsize=32)
def _density(inner):
    """One compiled transformed density per target adapter (refits change its data, not its code)."""
    return flow_density(inner)


def flow_target(target: Target, flow) -> Target:
    """The transformed density as a :class:`Target` in z: one call is one gradient of ``target``."""
    f_own, i_own = target.kernel_data
    return Target(name=f"{target.name} (flow)", dim=target.dim, logp_grad=_density(target.kernel_logp_grad),
                  data=pack_with_target(flow, f_own, i_own), param_names=tuple(f"z[{i}]" for i in range(target.dim)),
                  spec={"factory": "custom", "flow_of": dict(target.spec)},
                  description=f"{target.name} under a learned normalizing flow")


# under a gradient budget, the gradients at the draws the fits learn from may take at most this
# share of it: a smaller budget is sampled with the diagonal metric, and says so
LEARN_SHARE = 0.1
# the fewest draws (with their gradients) a first fit is made from; fewer, and the run goes on
# with the diagonal metric
MIN_FIT_DRAWS = 20


def first_metric(method) -> str:
    """The metric of the first phase: ``FIRST_METRIC_AUTO`` for ``metric="auto"``, which ranks the
    low-rank metric among its candidates, else the diagonal one (``metric="flow"``, and MAMS, whose
    preconditioner is diagonal)."""
    return FIRST_METRIC_AUTO if method.metric == "auto" and not _diagonal_only(method) else "diag"


def _diagonal_only(method) -> bool:
    """Whether the sampler's own preconditioner is diagonal (MAMS): it is given the fit's scales as
    a diagonal to keep, and a whitening in place of the low-rank metric."""
    return getattr(method, "_diagonal_preconditioner", False)


def learned_draws(method) -> int:
    """The draws (each one gradient) the flow's fits learn from, over every phase."""
    w = max(method.warmup, 100)
    return method.chains * (max(20, int(FIRST_PHASE[1] * w)) + REFITS * max(20, int(REFIT_PHASE[1] * w)))


def min_flow_budget(method) -> int:
    """The smallest gradient budget a flow is fitted under (``LEARN_SHARE``)."""
    return int(math.ceil(learned_draws(method) / LEARN_SHARE))


def _forward(flow, draws: np.ndarray) -> np.ndarray:
    """Draws (chains, n, d) in z mapped to x (an empty phase stays empty)."""
    return draws if draws.shape[1] == 0 else flow.forward(draws)


def run_flow(method, chains: Chains) -> Result:
    """``method._run`` for ``metric="flow"`` and ``"auto"`` (module docstring), from the run's
    chains set up (``chain_sampler.start_chains``: their starting points, paid from the budget);
    ``method`` is an HMC, a NUTS or a MAMS. The phases' warnings (a NaN density met in the first
    phase) are raised once each, at the end, from the caller's line, as a plain run raises them,
    naming the warmup phase they came from (:func:`named_phase`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _run_phases(method, chains)
    seen = set()
    for w in caught:
        if (w.category, str(w.message)) not in seen:
            seen.add((w.category, str(w.message)))
            # from the first line outside the package: the caller's
            warnings.warn(named_phase(str(w.message), result.messages), w.category, skip_file_prefixes=(_PACKAGE,))
    return result


def _run_phases(method, chains: Chains) -> Result:
    target, seed = chains.target, chains.seed
    seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence([seed, 0xF10]).spawn(REFITS + 3)]
    fit_rng = np.random.default_rng(seeds[-1])
    w = max(method.warmup, 100)  # NUTS(metric="flow")'s default: 1,000

    def iterations(share):
        return max(20, int(share * w))

    started = chains.clock.started
    phases = Phases(method, chains.budget)  # from here on, the phases hold the budget
    phases.pay(chains.start_grad_evals)
    # every phase starts where the last left off; the first where a plain run would have started
    init = {"init": chains.x0, **({"inv_metric": chains.inv_mass} if chains.inv_mass is not None else {})}
    if phases.budget.grad_evals is not None and phases.budget.grad_evals < min_flow_budget(method):
        return _diagonal_run(method, target, seed, started, phases, start=init)
    training = 0.0
    fits: list[FlowFit] = []
    flow_allowed = method.metric == "flow" or target.dim <= AUTO_FLOW_MAX_DIM
    first_draws = iterations(FIRST_PHASE[1])
    tail = int(FIRST_TAIL * first_draws) if method.keeps_warmup_draws else 0
    run = phases.run(target, seeds[0], phases.share(PHASE_BUDGET[0]), metric=first_metric(method),
                     warmup=iterations(FIRST_PHASE[0]), draws=first_draws - tail, **init)
    x_all, g_all = np.zeros((0, target.dim)), np.zeros((0, target.dim))
    last_x = target.initial_point[None].repeat(method.chains, 0)
    warm = [run.warmup_draws, run.draws]  # every iteration before the final draws, in x (chains, n, d)
    notes = PhaseNotes.of_first(run, chains)

    def learn(draws_x):
        """Add draws (chains, n, d) in x and their gradients to the training set."""
        nonlocal x_all, g_all, last_x
        if draws_x.shape[1] == 0:
            return
        flat = draws_x.reshape(-1, target.dim)
        _, g = gradients(target, flat)
        phases.pay(len(flat))
        flat, g = finite_rows(flat, g)
        x_all, g_all = np.vstack([x_all, flat]), np.vstack([g_all, g])
        last_x = draws_x[:, -1]

    def refit(first: bool = False):
        """A fit to every draw so far; a first one (the one that chooses) fits no layer where the
        diagonal metric already fits."""
        nonlocal training
        start = time.perf_counter()
        # the first fit ranks the preconditioners: where the diagonal metric already fits, no layer.
        # One BLAS thread: BLAS's idle threads spin after a call and took the cores from the
        # chains' threads and the health check that follow (gauss100: the check 0.07 s, not 0.04)
        with one_blas_thread():
            fit = fit_flow(x_all, g_all, fit_rng, max_rounds=MAX_ROUNDS if flow_allowed else 0,
                           easy_per_coordinate=EASY_PER_COORDINATE if first else 0.0)
        training += time.perf_counter() - start
        fits.append(fit)
        return fit

    def phase(fit, warmup, draws, seed_, share, metric="diag", start=None, **settings):
        """A run of the sampler on the transformed density (or, if the fit is no better than the
        diagonal metric, on the target itself) from the chains' last draws; (result, draws in x).
        ``start``: the diagonal metric's starting variances and step size on the target itself;
        ``share``: the phase's share of the budget (None: what the others left); ``settings``: the
        method's own, for this phase (``walnuts``)."""
        grad_evals = phases.share(share) if share is not None else phases.rest()
        if start is not None or (not fit.better_than_diagonal and metric == "diag"):
            # the target itself: with the diagonal metric, from ``start`` when given (MAMS, whose
            # preconditioner is diagonal, starts its own at the fit's scales and keeps them)
            res = phases.run(target, seed_, grad_evals, warmup=warmup, draws=draws, init=last_x,
                             metric="diag" if start is None or _diagonal_only(method) else "identity",
                             **(start or {}))
            return res, res.warmup_draws, res.draws, None
        building = time.perf_counter()
        t_z = flow_target(target, fit.flow)  # compiles its density the first time: compile time, not wall
        phases.compile_seconds += time.perf_counter() - building
        z0 = fit.flow.inverse(last_x)
        ok = np.all(np.isfinite(z0), axis=1)
        z0[~ok] = 0.0  # a start the flow maps badly: its centre
        if not _diagonal_only(method):  # MAMS's target is its own (0.9, the authors')
            settings.setdefault("target_accept", max(method.target_accept, FLOW_TARGET_ACCEPT))
        # a given inv_metric is the posterior's own scales, not z's: the phase learns z's
        res = phases.run(t_z, seed_, grad_evals, metric=metric, warmup=warmup, draws=draws, init=z0, inv_metric=None,
                         **settings)
        return res, _forward(fit.flow, res.warmup_draws), fit.flow.forward(res.draws), t_z

    if run.interrupted:
        return stopped(method, target, seed, run, warm, phases, started, "warmup phase 1")
    tail_draws = run.warmup_draws[:, run.warmup_draws.shape[1] - min(tail, run.warmup_draws.shape[1]):]
    learn(tail_draws)
    from_tail = len(x_all)
    learn(run.draws)
    if len(x_all) - from_tail < MIN_FIT_DRAWS:  # the first phase's share of a small budget bought (almost) no draws
        return _diagonal_run(method, target, seed, started, phases, first_draws=len(x_all) - from_tail, notes=notes,
                             warm=warm, start=None if run.draws.shape[1] else init)
    fit = refit(first=True)
    if method.metric == "auto":  # another form of the target (a non-centred hierarchy) may fit better
        form = weigh_form(target, fit, np.concatenate([tail_draws, run.draws], axis=1), phases, fit_rng)
        if form is not None:
            form_seed = int(np.random.SeedSequence([seed, 0xF0E]).generate_state(1)[0])
            # a given inv_metric is the target's scales, not the other form's
            on_form_method = dataclasses.replace(method, init=form.draws[:, -1], inv_metric=None)
            on_form = _run_phases(on_form_method, start_chains(on_form_method, None, form.form, form_seed,
                                                               phases.rest_budget()))
            return on_target(method, target, seed, on_form, form, phases, started, notes, warm)
    choice = first_choice(fit, target.dim, method.metric == "auto", flow_allowed)
    if tail and choice != "low_rank":  # the fit's own scales are kept: fitted again, on draws alone
        more_seed = int(np.random.SeedSequence([seed, 0x0DD]).generate_state(1)[0])
        more = phases.run(target, more_seed, phases.share(PHASE_BUDGET[0] * FIRST_TAIL),
                          metric="diag", warmup=0, draws=tail, init=last_x, **adapted(run, keep_target=True))
        notes.add(more, "warmup phase 1")
        warm.append(more.draws)
        if more.interrupted:
            return stopped(method, target, seed, more, warm, phases, started, "warmup phase 1")
        x_all, g_all = x_all[from_tail:], g_all[from_tail:]
        learn(more.draws)
        fit = refit(first=True)
        choice = first_choice(fit, target.dim, method.metric == "auto", flow_allowed)
    easy = choice == "diag"
    if choice == "low_rank":
        warmup = iterations(low_rank_warmup(fit, target.dim, _diagonal_only(method)))
        # its own warmup learns the target acceptance again (the first phase's raised one cost
        # ESS per gradient here: adapted's docstring)
        return _low_rank_run(method, target, seed, seeds[REFITS + 1], last_x, fit, phases, training, started,
                             warmup, notes, warm, x_all, adapted(run))
    flow_divergences = 0  # the phases on a flow that diverged (in their draws, or raising their target)
    if not easy:
        for k in range(REFITS):
            res, warm_x, draws_x, t_z = phase(fit, iterations(REFIT_PHASE[0]), iterations(REFIT_PHASE[1]),
                                              seeds[1 + k], PHASE_BUDGET[1])
            if t_z is not None and diverged(res):
                flow_divergences += 1
            notes.add(res, f"warmup phase {k + 2}")
            warm.extend([warm_x, draws_x])
            if res.interrupted:
                return stopped(method, target, seed, res, warm, phases, started, f"warmup phase {k + 2}")
            learn(draws_x)
            fit = refit()
    spent_before_last = phases.spent
    n_draws = phases.draws
    # where the phases on the flow diverged, the last one halves its step where it must (WALNUTS,
    # Bou-Rabee et al. 2025): a fit is least exact where the draws it learnt from are fewest (a
    # funnel's neck), and a step size small enough for the whole run there costs more than halving
    asked = getattr(method, "walnuts", False)  # the user's walnuts=True (NUTS): every phase halves already
    halving = bool(not easy and flow_divergences > 0 and fit.better_than_diagonal and hasattr(method, "walnuts")
                   and not asked)
    if easy:  # the chains go on with the diagonal metric of the fit (draws and gradients of every
        # chain), as the scaling of a flow with no layers; warmup adapts the step size only
        diagonal = fit._replace(flow=Flow(fit.flow.m, fit.flow.sigma, ()), flow_loss=fit.diagonal_loss)
        start = {"inv_metric": fit.flow.sigma ** 2}
        if not _diagonal_only(method):
            start = {**adapted(run, keep_target=True), **start}
        easy_warmup = EASY_WARMUP_STAGED if _diagonal_only(method) else EASY_WARMUP
        final, warm_x, final_x, t_z = phase(diagonal, iterations(easy_warmup), n_draws, seeds[REFITS + 1], None,
                                            start=start)
    else:  # the last phase has what the others left of a budget
        last_warmup = LAST_WARMUP_STAGED if _diagonal_only(method) else LAST_WARMUP
        final, warm_x, final_x, t_z = phase(fit, iterations(last_warmup), n_draws, seeds[REFITS + 1], None,
                                            **({"walnuts": True} if halving else {}))
    warm.append(warm_x)
    warmup_spent = spent_before_last + final.cost.warmup_grad_evals
    messages = []
    used = bool(not easy and fit.better_than_diagonal)
    if used:
        messages.append(
            f"flow: {len(fit.flow.layers)} layer(s), {fit.flow.n_params()} coefficients, fitted on {fit.draws} draws and "
            f"their gradients; held-out Fisher divergence {fit.diagonal_loss:.3g} with the diagonal metric, "
            f"{fit.flow_loss:.3g} with the flow ({training:.1f} s of training)")
        if halving:
            messages.append(
                f"flow: {flow_divergences} of the {REFITS} warmup phases on the flow diverged (a step too long where the "
                "flow does not fit the posterior): the draws were taken with WALNUTS's step halving (walnuts=True)")
    elif easy and not flow_allowed:
        messages.append(
            f"metric='auto': the diagonal metric, by the held-out Fisher divergence of the first draws (the low-rank "
            f"metric did not beat it; a flow is not fitted above d = {AUTO_FLOW_MAX_DIM}, its fit growing as d^2)")
    elif easy and fit.diagonal_loss / target.dim < EASY_PER_COORDINATE:
        messages.append(
            f"flow: the diagonal metric fits this posterior (held-out Fisher divergence "
            f"{fit.diagonal_loss / target.dim:.3g} per coordinate, below {EASY_PER_COORDINATE:g}): no flow fitted, "
            "sampled with the diagonal metric")
    elif easy:
        messages.append(
            f"flow: the diagonal metric fits this posterior about as well as a flow would (held-out Fisher "
            f"divergence {fit.diagonal_loss / target.dim:.3g} per coordinate; the flow's {fit.flow_loss / target.dim:.3g}, "
            f"not half of it): sampled with the diagonal metric")
    else:
        messages.append(
            f"flow: the fitted transform was no better than the diagonal metric by the Fisher divergence "
            f"({fit.flow_loss:.3g} against {fit.diagonal_loss:.3g} on held-out draws): sampled with the diagonal metric")
    flow_info = {"layers": len(fit.flow.layers) if used else 0, "parameters": fit.flow.n_params() if used else 0,
                 "training_seconds": training,
                 "fits": [{"draws": f.draws, "diagonal_loss": f.diagonal_loss, "flow_loss": f.flow_loss,
                           "layers": len(f.flow.layers)} for f in fits],
                 "used": used, "warmup_grad_evals": warmup_spent,
                 "walnuts": bool(used and (halving or asked))}
    return phased_result(method, target, seed, final, final_x, started, phases, warmup_spent, notes, messages, warm,
                         flow_info, "flow" if used else "diag", {"flow_object": fit.flow} if t_z is not None else {})


def _low_rank_run(method, target, seed, run_seed, last_x, fit, phases: Phases, training, started,
                  warmup, notes: PhaseNotes, warm: list, first_draws: np.ndarray, start: dict | None = None) -> Result:
    """``metric="auto"`` having chosen the low-rank metric: the sampler with it from the chains' last
    draws, its own warmup after the first phase's, starting from the diagonal of the first phase's
    metric and its step size (``start``, :func:`adapted`). A sampler without one (MAMS, whose
    preconditioner is diagonal) samples the posterior whitened by the covariance of the first
    phase's draws instead (``mcmc/affine.py``, as ``MAMS(metric="dense")`` does)."""
    n_draws = phases.draws
    spent_before = phases.spent
    if not _diagonal_only(method):
        final = phases.run(target, run_seed, phases.rest(), metric="low_rank", warmup=warmup, init=last_x,
                           draws=n_draws, **(start or {}))
        draws, final_warm, chosen, what = final.draws, final.warmup_draws, "low_rank", "the low-rank metric"
    else:
        mean, chol = dense_factor(first_draws)
        z0 = np.linalg.solve(chol, (last_x - mean).T).T
        final = phases.run(affine_target(target, mean, chol), run_seed, phases.rest(), metric="diag", warmup=warmup,
                           init=z0, draws=n_draws, inv_metric=None)  # the whitened posterior's scales are its own
        draws, final_warm = mean + final.draws @ chol.T, mean + final.warmup_draws @ chol.T
        chosen, what = "dense", f"the dense metric (the covariance of {len(first_draws)} draws)"
    flow_info = {"layers": 0, "parameters": 0, "training_seconds": training, "used": False,
                 "fits": [{"draws": fit.draws, "diagonal_loss": fit.diagonal_loss, "flow_loss": fit.flow_loss,
                           "low_rank_loss": fit.low_rank_loss, "layers": len(fit.flow.layers)}],
                 "warmup_grad_evals": spent_before + final.cost.warmup_grad_evals}
    message = (f"metric='auto': {what}, by the held-out Fisher divergence of the first {fit.draws} draws "
               f"(low-rank {fit.low_rank_loss:.3g}; diagonal {fit.diagonal_loss:.3g}, flow {fit.flow_loss:.3g})")
    if nothing_fits(fit, target.dim):
        message += (f"; nothing fitted them ({fit.diagonal_loss / target.dim:.3g} per coordinate with the diagonal metric): "
                    f"the chains had not yet found the posterior, and warmed up for {warmup} more iterations")
    return phased_result(method, target, seed, final, draws, started, phases,
                         spent_before + final.cost.warmup_grad_evals, notes, [message], [*warm, final_warm],
                         flow_info, chosen)


def _diagonal_run(method, target, seed, started, phases: Phases, first_draws: int | None = None,
                  notes: PhaseNotes | None = None, warm: list | None = None, start: dict | None = None) -> Result:
    """A budget too small to fit a flow on (``min_flow_budget``), or whose first phase bought fewer
    than ``MIN_FIT_DRAWS`` draws (counted in ``phases``): the sampler with the diagonal metric on
    what is left, saying why; from ``start`` (the run's starting points), else from where the
    first phase's chains are."""
    n_draws = phases.draws
    spent_before = phases.spent
    if start is None:
        start = {"init": warm[-1][:, -1]}
    final = phases.run(target, seed, phases.rest(), metric="diag", draws=n_draws, **start)
    flow_info = {"layers": 0, "parameters": 0, "training_seconds": 0.0, "used": False, "fits": [],
                 "warmup_grad_evals": spent_before + final.cost.warmup_grad_evals}
    if first_draws is None:
        message = (f"flow: a budget of {phases.budget.grad_evals:,} gradients is too small to fit a transform (the draws its "
                   f"fits learn from cost {learned_draws(method):,}, at most {LEARN_SHARE:.0%} of it: give "
                   f"grad_budget >= {min_flow_budget(method):,}): sampled with the diagonal metric")
    else:
        message = (f"flow: the first warmup phase ({spent_before:,} gradients) gave {first_draws} draws, fewer than the "
                   f"{MIN_FIT_DRAWS} a transform is fitted on: sampled with the diagonal metric (give a larger "
                   "grad_budget for a flow)")
    return phased_result(method, target, seed, final, final.draws, started, phases,
                         spent_before + final.cost.warmup_grad_evals, notes or PhaseNotes(), [message],
                         [*(warm or []), final.warmup_draws], flow_info, "diag")
