"""The benchmark scripts under studies/ run end to end (their numbers are not asserted: noisy)."""

import importlib.util
from pathlib import Path

import pytest

STUDIES = Path(__file__).resolve().parents[2] / "studies"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, STUDIES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_mcmc_speed_quick_runs_and_prints_the_table(capsys):
    _load("mcmc_speed").main(["--quick"])
    out = capsys.readouterr().out
    for needle in ("overhead", "ess_per_1k_grad", "logistic_regression_breast_cancer", "low_rank/diag", "rot50", "dense"):
        assert needle in out


@pytest.mark.slow
def test_vi_speed_quick_runs_and_prints_its_three_tables(capsys):
    _load("vi_speed").main(["--quick"])
    out = capsys.readouterr().out
    for needle in ("overhead", "vs_inherent", "logistic_regression_breast_cancer", "w_+3", "main_err", "near", "box",
                   "Part 3", "BatchAndMatch fixed point (B=5,000)", "sd_err_max"):
        assert needle in out


@pytest.mark.slow
def test_pathfinder_benchmark_quick_runs_and_prints_its_tables(capsys):
    _load("pathfinder_benchmark").main(["--quick"])
    out = capsys.readouterr().out
    for needle in ("Part 1", "equicorrelated", "Pathfinder (4 paths)", "grads / NUTS", "pathfinder", "ratio"):
        assert needle in out


@pytest.mark.slow
def test_pymc_overhead_quick_runs_and_prints_its_tables(capsys):
    _load("pymc_overhead").main(["--quick"])
    out = capsys.readouterr().out
    for needle in ("overhead", "raw_us", "wrapped_us", "eight_schools_noncentered", "breast_cancer_logistic", "ess_per_s"):
        assert needle in out


@pytest.mark.slow
def test_dadvi_regressions_quick_runs_and_prints_its_table(capsys):
    _load("dadvi_regressions").main(["--quick"])
    out = capsys.readouterr().out
    for needle in ("diabetes_raw_interactions", "ar2", "garch11", "breast_cancer_logistic", "mean_err_max",
                   "DADVI met the goal"):
        assert needle in out


def test_banana_benchmark_writes_what_the_performance_page_says(tmp_path, monkeypatch, capsys):
    speed, performance = _load("mcmc_speed"), _load("performance")
    csv = tmp_path / "banana_nuts.csv"
    monkeypatch.setattr(speed, "BANANA_CSV", csv)
    monkeypatch.setattr(performance, "BANANA_CSV", csv)
    monkeypatch.setattr(speed, "BANANA_SETTINGS", [("default", {}), ("metric=identity", {"metric": "identity"})])
    speed.banana_table(seeds=(0,), draws=300, short_seeds=range(2))
    assert "4 x 1,000 draws" in capsys.readouterr().out
    sentence, table = performance.banana_health()
    default = table[table["setting"] == "default"].iloc[0]
    assert list(table["setting"]) == ["default", "metric=identity"]
    assert table["short_runs_passing"].between(0, 2).all() and (table["ess_per_draw"] > 0).all()
    assert f"in {int(default['short_runs_passing'])} of 2 default runs" in sentence
    assert f"at {default['ess_per_draw']:.3f} by default" in sentence
