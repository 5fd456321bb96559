"""The benchmark scripts under studies/ run end to end (their numbers are not asserted: noisy)."""

import importlib.util
import math
from pathlib import Path

import pytest

import workbench as wb
from workbench.mcmc.timing import seconds_per_gradient

STUDIES = Path(__file__).resolve().parents[1] / "studies"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, STUDIES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seconds_per_gradient_is_a_positive_time():
    t = wb.targets.gaussian(50)
    s = seconds_per_gradient(t, min_seconds=0.01)
    assert 0 < s < 1e-3 and math.isfinite(s)


@pytest.mark.slow
def test_mcmc_speed_quick_runs_and_prints_the_table(capsys):
    _load("mcmc_speed").main(["--quick"])
    out = capsys.readouterr().out
    for needle in ("overhead", "ess_per_1k_grad", "logistic_regression_breast_cancer", "gradient", "stan"):
        assert needle in out


@pytest.mark.slow
def test_vi_speed_quick_runs_and_prints_both_tables(capsys):
    _load("vi_speed").main(["--quick"])
    out = capsys.readouterr().out
    for needle in ("overhead", "vs_inherent", "logistic_regression_breast_cancer", "w_+3", "main_err", "near", "box"):
        assert needle in out
