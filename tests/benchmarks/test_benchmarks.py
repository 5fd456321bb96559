"""The benchmark scripts under benchmarks/ run end to end (their numbers are not asserted: noisy)."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
STUDIES = BENCHMARKS.parent / "studies"


def _load(name):
    folder = STUDIES if name == "performance" else BENCHMARKS  # the report's page that shows the benchmarks' CSVs
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# each benchmark's --quick run, what its printed tables must name, and what they must not
QUICK_RUNS = {
    "mcmc_speed": (("overhead", "ess_per_1k_grad", "logistic_regression_breast_cancer", "low_rank/diag", "rot50",
                    "dense"), ()),
    "vi_speed": (("overhead", "vs_inherent", "logistic_regression_breast_cancer", "w_+3", "main_err", "near", "box",
                  "Part 3", "BatchAndMatch fixed point (B=5,000)", "sd_err_max"), ()),
    "pathfinder_benchmark": (("Part 1", "equicorrelated", "Pathfinder (4 paths)", "grads / NUTS", "pathfinder",
                              "ratio"), ()),
    "pymc_overhead": (("overhead", "raw_us", "wrapped_us", "eight_schools_noncentered", "breast_cancer_logistic",
                       "ess_per_s"), ()),
    "mams_step": (("gauss20", "mams_grads", "nuts_grads", "mams_accept"), ("brownian_motion",)),
    # garch11 is the full run's: its reference takes a minute to build
    "dadvi_regressions": (("ar2", "breast_cancer_logistic", "mean_err_max", "DADVI met the goal"), ("garch11",)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(QUICK_RUNS))
def test_a_quick_run_prints_its_tables(name, capsys):
    _load(name).main(["--quick"])
    out = capsys.readouterr().out
    named, left_out = QUICK_RUNS[name]
    assert [n for n in named if n not in out] == []
    assert [n for n in left_out if n in out] == []


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


def test_the_nutpie_ratio_interval_covers_the_seeds_noise_and_the_page_sorts_rows_by_it(tmp_path, monkeypatch):
    speed, performance = _load("mcmc_speed"), _load("performance")
    assert speed.ratio_interval([2.0] * 5, [1.0] * 5) == (2.0, 2.0)
    rng = np.random.default_rng(1)
    ours, theirs = 100 * (1 + 0.1 * rng.standard_normal(10)), 100 * (1 + 0.1 * rng.standard_normal(10))
    low, high = speed.ratio_interval(ours, theirs)
    assert low < np.median(ours) / np.median(theirs) < high and high - low > 0.05
    csv = tmp_path / "nuts_vs_nutpie.csv"
    pd.DataFrame({"target": ["a", "b", "c"], "metric": "diag", "ratio": [1.3, 0.98, 0.8], "ratio_low": [1.1, 0.9, 0.7],
                  "ratio_high": [1.5, 1.05, 0.9], "measured": "2026-11-26", "seeds": 10}).to_csv(csv, index=False)
    monkeypatch.setattr(performance, "NUTPIE_CSV", csv)
    sentence, _ = performance.nutpie_comparison()
    assert "ahead on a (diag) 1.30x (1.10-1.50); level within the seeds' noise on b (diag) 0.98x" in sentence
    assert "behind on c (diag) 0.80x (0.70-0.90)" in sentence


def test_the_whole_call_record_reads_as_the_performance_page_says():
    performance = _load("performance")
    sentence, table = performance.whole_call_comparison()
    ours, theirs = table.iloc[0], table.iloc[1]
    assert list(table["tool"]) == ["workbench NUTS", "nutpie"]
    assert ours["ratio_to_nutpie"] == pytest.approx(ours["ess_per_second"] / theirs["ess_per_second"], rel=1e-3)
    assert ours["ess_per_second_with_health"] < ours["ess_per_second"] and ours["fixed_seconds"] > 0
    assert f"{ours['ess_per_second'] / theirs['ess_per_second']:.1f}x nutpie's" in sentence


def test_the_geometry_study_merges_re_measured_rows_in_the_targets_order(tmp_path):
    """``nuts_geometry.py --targets``: the re-measured target's rows replace its old ones, the
    others stay as measured (with their dates), and the rows keep the study's order of targets."""
    geometry = _load("nuts_geometry")
    path = tmp_path / "flow.csv"
    old = pd.DataFrame([{"target": t, "sampler": s, "ess_per_1k_grad": 1.0, "measured": "2026-01-01"}
                        for t in ("banana", "funnel100", "brownian_motion") for s in ("flow", "diag")])
    old.to_csv(path, index=False)
    order = ["banana", "funnel100", "funnel101_nutpie_docs", "brownian_motion"]
    rows = [{"target": "funnel101_nutpie_docs", "sampler": "flow", "ess_per_1k_grad": 61.0},
            {"target": "funnel100", "sampler": "flow", "ess_per_1k_grad": 19.0}]
    frame = geometry.write_rows(rows, path, ["funnel100", "funnel101_nutpie_docs"], order)
    written = pd.read_csv(path)
    assert list(written["target"]) == ["banana", "banana", "funnel100", "funnel101_nutpie_docs",
                                       "brownian_motion", "brownian_motion"]
    assert written.loc[written["target"] == "funnel100", "ess_per_1k_grad"].tolist() == [19.0]
    assert (written.loc[written["target"] == "banana", "measured"] == "2026-01-01").all()
    assert len(frame) == 6
    with pytest.raises(SystemExit, match="unknown"):
        geometry.selected({"banana": None}, ["banana", "nope"])


@pytest.mark.parametrize("name", ["gauss100", "corr10", "logreg26", "breast_cancer", "diabetes_linear",
                                  "diabetes_linear_sigma"])
def test_nutpies_copy_of_each_density_is_the_librarys(name, monkeypatch):
    """benchmarks/nutpie_driver.py rebuilds each density of the nutpie comparison from arrays, in
    nutpie's venv; here, without nutpie, its copy gives the library's gradient and log density (up
    to one constant) at points away from those the driver checks itself."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    speed, reference, driver = _load("mcmc_speed"), _load("nutpie_reference"), _load("nutpie_driver")
    target = speed.nutpie_targets()[name]
    spec = reference.density_arrays(target)
    kind = str(spec["kind"])
    rng = np.random.default_rng(1)
    offsets = []
    for point in 0.3 * rng.standard_normal((4, target.dim)):
        lp_ref, g_ref = target.logp_and_grad(point)
        if kind == "gaussian":
            lp, g = driver.gaussian_logp_grad(point, spec["mean"], spec["precision"])
        elif kind == "linear_sigma":
            lp, g = driver.linear_sigma_logp_grad(point, spec["X"], spec["y"])
        else:
            lp, g = driver.logistic_logp_grad(point, spec["X"], spec["y"], float(spec["prec"]))
        np.testing.assert_allclose(g, g_ref, rtol=1e-8, atol=1e-8 * (1 + np.abs(g_ref).max()))
        offsets.append(lp - lp_ref)
    assert np.ptp(offsets) < 1e-6 * (1 + abs(lp_ref))
