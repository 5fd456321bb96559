"""The checks every method passes, built-in or new (``tests/unit/methods/test_cost_counting.py``,
``test_interrupts.py``, and the recipe of ``docs/architecture.md``): each method is run with the
settings its class declares (``Method.examples``)."""

import os
import signal
import threading
import time
import warnings

import numpy as np

import workbench as wb
from tests.user_functions import slow_standard_normal


def example(cls, kind: str, dim: int):
    """``cls`` with its declared ``quick`` or ``long`` settings, quiet, and with a wide Gaussian
    proposal where it takes one."""
    fields = {f.name for f in cls.__dataclass_fields__.values()}
    settings = dict(getattr(cls.examples, kind))
    if "progress" in fields:
        settings.setdefault("progress", False)
    if "proposal" in fields:
        settings.setdefault("proposal", wb.approximations.Gaussian(np.zeros(dim), 4.0 * np.eye(dim)))
    return cls(**settings)


def check_cost_counts_every_call(cls, counted, with_budget: bool) -> None:
    """The run's cost is every call of the density (``counted``: a target that counts its own
    calls), and a gradient budget is not passed by more than 2%."""
    target, counter = counted
    budget = cls.examples.budget if with_budget else None
    before = int(counter[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the methods' health warnings are not the point here
        res = example(cls, "quick", target.dim).run(target, seed=0, grad_budget=budget)
    calls = int(counter[0]) - before
    assert res.cost.grad_evals == calls and res.cost.logp_evals == calls, (res.cost, calls)
    if budget is not None:
        assert calls <= 1.02 * budget, (calls, budget)


def check_ctrl_c_stops_the_run(cls) -> None:
    """Ctrl-C a second into a run of minutes stops it within seconds, and the result says it was
    interrupted (the caller holds the ``ctrl_c_raises`` fixture)."""
    fast = wb.Target.from_numba(slow_standard_normal, dim=2, data=(np.array([1.0]),), name="fast", check_gradient=False)
    slow = wb.Target.from_numba(slow_standard_normal, dim=2, data=(np.array([2.0e4]),), name="slow", check_gradient=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        budget = None if cls.__name__ == "SMC" else 50_000  # SMC's long setting refuses a budget this small
        example(cls, "long", 2).run(fast, seed=0, grad_budget=budget)  # compiled first
        timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        start = time.perf_counter()
        try:
            res = example(cls, "long", 2).run(slow, seed=0)
        finally:
            timer.cancel()
    # it stopped (uninterrupted, each of these runs for minutes); about a second, with slack for shared machines
    assert time.perf_counter() - start < 10.0
    assert res.interrupted
    assert any("nterrupted" in m for m in res.messages)
    # the same rule for every method: a partial run says so in its health column
    from workbench.diagnostics import health_flags

    assert "interrupted" in health_flags(res.messages), res.messages
    if res.draws.size:  # and the metrics mark its estimates as partial
        assert wb.metrics.evaluate(res, slow, reference=False)["partial"] is True
