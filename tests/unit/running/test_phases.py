"""workbench/running/phases.py: the phases of a run share its one budget; each is the method's own
``_run`` (the public ``run``, with its seed, memory check and fault collection, is entered once
per run, however many phases it has)."""

import pytest

import workbench as wb
from workbench.result import Budget
from workbench.running.method import Method
from workbench.running.phases import Phases


def test_each_phase_gets_its_share_and_the_last_what_is_left():
    phases = Phases(wb.methods.NUTS(), Budget(grad_evals=10_000))
    assert phases.share(0.1) == 1000 and phases.share(0.001) == 100  # at least 100
    phases.pay(2500)
    assert phases.spent == 2500 and phases.rest() == 7500
    unbounded = Phases(wb.methods.NUTS(), Budget())
    assert unbounded.share(0.1) is None and unbounded.rest() is None


def test_a_run_that_takes_over_from_the_phases_gets_the_rest_of_the_budget():
    phases = Phases(wb.methods.NUTS(), Budget(grad_evals=10_000, draws=300))
    phases.pay(4000)
    assert phases.rest_budget() == Budget(grad_evals=6000, draws=300)
    phases.pay(6000)
    assert phases.rest_budget().grad_evals == 100  # a run of its own is given at least a phase's least
    assert Phases(wb.methods.NUTS(), Budget()).rest_budget() == Budget()


def test_a_phase_is_the_methods_own_run_with_other_settings_and_its_cost_is_counted():
    t = wb.targets.gaussian(3)
    phases = Phases(wb.methods.NUTS(chains=2, progress=False), Budget(grad_evals=5000))
    res = phases.run(t, 0, phases.share(0.4), metric="diag", warmup=100, draws=100)
    assert res.settings["metric"] == "diag" and res.settings["warmup"] == 100
    assert 0 < res.cost.grad_evals <= 2000 * 1.02 and phases.spent == res.cost.grad_evals
    assert phases.compile_seconds == res.cost.compile_seconds


@pytest.mark.parametrize("make", [lambda: wb.methods.NUTS(metric="auto", progress=False),
                                  lambda: wb.methods.NUTS(metric="flow", progress=False),
                                  lambda: wb.methods.MAMS(metric="dense", progress=False)],
                         ids=["NUTS auto", "NUTS flow", "MAMS dense"])
def test_a_phased_run_enters_the_public_run_once(make, monkeypatch):
    calls = []
    public = Method.run

    def counted(self, *args, **kwargs):
        calls.append(type(self).__name__)
        return public(self, *args, **kwargs)

    monkeypatch.setattr(Method, "run", counted)
    t = wb.targets.gaussian(4, scales="logspace")
    res = make().run(t, seed=0, grad_budget=40_000)
    assert calls == [type(make()).__name__], calls
    assert res.cost.grad_evals <= 40_000 * 1.02 and res.draws.shape[1] > 0


@pytest.mark.parametrize("make", [lambda: wb.methods.NUTS(metric="auto", progress=False),
                                  lambda: wb.methods.MAMS(metric="dense", progress=False)],
                         ids=["NUTS auto", "MAMS dense"])
def test_a_phased_runs_chains_are_started_once_and_their_start_paid_once(make, monkeypatch):
    from workbench.running import peaks

    searches = []
    real = peaks.M.find_modes
    monkeypatch.setattr(peaks.M, "find_modes", lambda *a, **k: searches.append(1) or real(*a, **k))
    t = wb.targets.gaussian_mixture(dim=2, n_components=2, seed=0)  # two peaks, 22 sds apart
    res = make().run(t, seed=0, grad_budget=40_000)
    assert len(searches) == 1  # the run's mode search, not one per phase
    centres = t.truth.extras["component_means"]
    near = {int(((centres - c.mean(axis=0)) ** 2).sum(axis=1).argmin()) for c in res.draws}
    assert near == {0, 1}  # the phases went on from chains started at both peaks
    assert res.cost.grad_evals <= 40_000 * 1.02


def test_a_phase_given_a_budget_the_starts_spent_says_so():
    phases = Phases(wb.methods.NUTS(chains=2, progress=False), Budget(grad_evals=4))
    phases.pay(4)
    res = phases.run(wb.targets.gaussian(3), 0, phases.rest(), metric="diag", warmup=10, draws=10)
    assert res.draws.shape[1] == 0 and any("spent" in m for m in res.messages)
