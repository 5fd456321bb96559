"""workbench/running/method.py: a new method is one small class. The toy method of
docs/architecture.md, taken from the page as written, runs through evaluate, a study and the
checks every method passes; the registries find it by what its class declares."""

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.study import Cell, Study, run_study

DOC = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"


@pytest.fixture(scope="module")
def toy_module(tmp_path_factory):
    """The doc's toy_mala.py written to a folder on sys.path (cache=True needs a real file)."""
    code = re.search(r"```python\n(import math\n.*?)```", DOC.read_text(), flags=re.S).group(1)
    body = [line for line in code.splitlines() if line.strip() and not line.startswith(("import ", "from "))]
    assert len(body) < 40, "the page promises a method in under 40 lines"
    assert max(len(line) for line in code.splitlines()) <= 100  # the project's line length
    folder = tmp_path_factory.mktemp("toy")
    (folder / "toy_mala.py").write_text(code)
    sys.path.insert(0, str(folder))
    try:
        import toy_mala

        yield toy_mala
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("toy_mala", None)


def test_the_toy_method_samples_a_gaussian_within_monte_carlo_error(toy_module):
    t = wb.targets.gaussian(dim=3)
    res = toy_module.MALA(step_size=1.0, progress=False).run(t, seed=1)
    assert res.method == "MALA" and res.draws.shape == (4, 1000, 3) and res.seed == 1
    # gradients counted by the kernel (one at the start and one per proposal, warmup apart), and
    # the mode search and the check of each chain's starting point before it (part of warmup's cost)
    search = res.info["peaks"]["grad_evals"]
    assert search > 0 and res.info["peaks"]["found"] == 1
    assert res.cost.grad_evals == 4 * (1 + 2000) + 4 + search
    assert res.cost.warmup_grad_evals == 4 * (1 + 1000) + 4 + search
    assert res.cost.compile_seconds >= 0 and res.warmup_draws.shape == (4, 1000, 3)
    row = wb.metrics.evaluate(res, t)
    mcse = 1 / math.sqrt(row["ess_bulk_min"])  # in sd units
    assert row["mean_err_max"] < 4 * mcse and row["sd_err_max"] < 8 * mcse and res.messages == []
    assert "diagnostics" in res.info and res.to_arviz().posterior["theta"].shape == (4, 1000, 3)


def test_the_toy_method_honours_a_gradient_budget_and_a_too_small_step_is_unhealthy(toy_module):
    t = wb.targets.gaussian(dim=3)
    res = toy_module.MALA(step_size=1.0, progress=False).run(t, seed=1, grad_budget=2000)
    assert res.cost.grad_evals <= 2000 and any(m.startswith("gradient budget 2000 spent") for m in res.messages)
    slow = toy_module.MALA(step_size=0.01, warmup=100, draws=300, progress=False).run(t, seed=1)
    assert any(m.startswith(("R-hat", "low ESS")) for m in slow.messages)
    with pytest.raises(ValueError, match="step_size"):
        toy_module.MALA(step_size=-1.0)


def test_the_toy_method_runs_in_a_study_named_by_its_import_path(toy_module, tmp_path):
    target = {"factory": "gaussian", "dim": 2}
    study = Study(name="toy_study", title="toy", grid=lambda quick: [
        Cell(target, {"method": "toy_mala:MALA", "step_size": 0.8, "chains": 2, "warmup": 300, "draws": 500,
                       "progress": False}, seed, 4000,
             labels={"method": "MALA"}, extra="chain_scaling")
        for seed in (0, 1)])
    run = run_study(study, out=tmp_path, executor="serial", progress=False)
    assert list(run.table["status"]) == ["ok", "ok"]
    assert (run.table["grad_evals"] <= 4000 + 4).all() and (run.table["acceptance"] > 0.5).all()
    with pytest.raises(ValueError, match="toy_mala:Nope"):
        wb.methods.build_method({"method": "toy_mala:Nope"})


def test_methods_are_found_by_name_and_bad_names_say_which_exist():
    assert isinstance(wb.methods.build_method({"method": "NUTS", "chains": 2}), wb.methods.NUTS)
    with pytest.raises(ValueError, match="unknown method 'NUTZ'.*NUTS"):
        wb.methods.build_method({"method": "NUTZ"})
    assert {"NUTS", "NN4Post", "Laplace"} <= set(wb.methods.available())


def test_settings_are_plain_data():
    q = wb.approximations.StudentT(np.zeros(2), np.eye(2), df=5)
    s = wb.methods.IndependenceMH(proposal=q).settings()
    assert s["proposal"].startswith("StudentT#") and s["chains"] == 4
    assert wb.methods.NUTS(init=np.zeros(2)).settings()["init"] == [0.0, 0.0]


def test_settings_record_an_object_by_its_content_not_its_type_alone():
    """Two proposals of one type must not share a cache key."""
    a = wb.methods.IndependenceMH(proposal=wb.approximations.Gaussian(np.zeros(2), np.eye(2)))
    b = wb.methods.IndependenceMH(proposal=wb.approximations.Gaussian(np.zeros(2), 2.0 * np.eye(2)))
    again = wb.methods.IndependenceMH(proposal=wb.approximations.Gaussian(np.zeros(2), np.eye(2)))
    assert a.settings()["proposal"].startswith("Gaussian#")
    assert a.settings()["proposal"] != b.settings()["proposal"]
    assert a.settings()["proposal"] == again.settings()["proposal"]


def test_the_toy_method_passes_every_methods_checks_and_is_drawn_as_its_class_declares(toy_module, counted,
                                                                                     ctrl_c_raises):
    """What the page's recipe promises: the class attributes are all the registries and the shared
    checks need (a built-in method adds its import in workbench/methods/__init__.py)."""
    from tests.method_checks import check_cost_counts_every_call, check_ctrl_c_stops_the_run
    from workbench.study.style import method_family, method_style

    mala = toy_module.MALA
    for with_budget in (False, True):
        check_cost_counts_every_call(mala, counted, with_budget)
    check_ctrl_c_stops_the_run(mala)
    assert method_family("MALA") == "MCMC" and method_family("MALA (step 0.8)") == "MCMC"
    assert method_style("MALA").colour == mala.colour and method_style("MALA").marker == mala.marker
    assert "MALA" not in wb.methods.available()  # a built-in is one of the package's own modules
