"""Ctrl-C stops every method within about a second; it returns a Result marked interrupted
(the field and a message) with what it had made."""

import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest

import workbench as wb
from tests.method_checks import check_ctrl_c_stops_the_run
from tests.user_functions import slow_standard_normal

QUIET = {"progress": False}

# every method whose class declares a long run (Exact, Laplace and Pathfinder end in well under
# a second here: Ctrl-C there is the caller's)
LONG = sorted(name for name, cls in wb.methods.METHODS.items() if cls.examples.long is not None)


def test_the_quick_methods_are_quick():
    assert set(wb.methods.METHODS) - set(LONG) == {"Exact", "Laplace", "Pathfinder"}


@pytest.mark.parametrize("name", LONG)
def test_ctrl_c_stops_the_run_and_keeps_what_it_made(name, ctrl_c_raises):
    check_ctrl_c_stops_the_run(wb.methods.METHODS[name])


class _ProposalInterruptedWhileDrawn(wb.approximations.Gaussian):
    """Ctrl-C while IndependenceMH draws its proposals up front, before its chain loop."""

    def logpdf(self, x):
        raise KeyboardInterrupt


def test_ctrl_c_during_set_up_returns_an_interrupted_result_with_no_draws():
    proposal = _ProposalInterruptedWhileDrawn(np.zeros(2), np.eye(2))
    res = wb.methods.IndependenceMH(proposal=proposal, warmup=10, draws=100).run(wb.targets.gaussian(2), seed=0)
    assert res.interrupted and res.draws.shape == (4, 0, 2)
    assert any("setting up" in m for m in res.messages)


def test_ctrl_c_before_some_chains_start_keeps_the_chains_that_made_draws(ctrl_c_raises):
    """One thread, four chains: Ctrl-C while the first chain samples. The three chains that never
    started are dropped (with a message), not used to cut the first one's draws to none; the
    cost still counts every evaluation."""
    slow = wb.Target.from_numba(slow_standard_normal, dim=2, data=(np.array([2.0e4]),), name="slow", check_gradient=False)
    method = wb.methods.RandomWalkMH(chains=4, warmup=10, draws=10**7, threads=1, **QUIET)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wb.methods.RandomWalkMH(chains=4, warmup=10, draws=100, threads=1, **QUIET).run(slow, seed=0)  # compiled
        timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        try:
            res = method.run(slow, seed=0)
        finally:
            timer.cancel()
    assert res.interrupted and res.draws.shape[0] == 1 and res.draws.shape[1] > 0
    assert any(m.startswith("interrupted before 3 of 4 chains") for m in res.messages)
    assert res.cost.grad_evals >= res.draws.shape[1] + 10


@pytest.mark.parametrize("metric", ["flow", "auto"])
def test_ctrl_c_in_a_phased_warmup_stops_there(metric, ctrl_c_raises):
    """The learned metrics warm up in phases; Ctrl-C in one ends the run, not just the phase."""
    fast = wb.Target.from_numba(slow_standard_normal, dim=2, data=(np.array([1.0]),), name="fast", check_gradient=False)
    slow = wb.Target.from_numba(slow_standard_normal, dim=2, data=(np.array([2.0e4]),), name="slow", check_gradient=False)
    nuts = wb.methods.NUTS(metric=metric, warmup=10**5, draws=10, **QUIET)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nuts.run(fast, seed=0, grad_budget=50_000)  # compiled first
        timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        start = time.perf_counter()
        try:
            res = nuts.run(slow, seed=0)
        finally:
            timer.cancel()
    assert time.perf_counter() - start < 10.0
    assert res.interrupted and res.messages[0].startswith("interrupted in warmup phase 1")
    assert res.draws.shape == (4, 0, 2) and res.cost.grad_evals > 0
