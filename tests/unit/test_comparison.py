"""``workbench compare`` / ``wb.compare``: finding the target, the page, the verdict, bad input."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench import cli
from workbench.comparison import recommendation
from workbench.errors import TargetError
from workbench.targets.specs import resolve

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "user_target.py"
PANEL = {"Laplace", "RWM", "HMC", "NUTS", "MAMS", "MCLMC", "IS", "MeanFieldVI", "NN4Post", "FullRankVI", "DADVI", "BatchAndMatch",
         "Pathfinder", "SMC"}


def _images(page: Path) -> list[Path]:
    return [page.parent / src for src in re.findall(r"<img src=['\"]([^'\"]+)['\"]", page.read_text())]


def test_compare_a_users_file_writes_a_page_with_its_images_and_a_verdict(tmp_path):
    result = wb.compare(f"{EXAMPLE}:logp_grad", budgets=(3000,), seeds=1, executor="serial", out=tmp_path,
                        progress=False)
    table = result.run.table
    assert set(table["method"]) == PANEL  # no exact sampler: no Exact row
    assert (table["truth"] == "reference (long NUTS)").all()
    assert (table["status"] == "ok").sum() >= 8, table[["method", "status", "error"]]
    page = result.page
    assert page.is_file() and page.parent.name == "compare_user_target_logp_grad"
    images = _images(page)
    assert len(images) >= 4 and all(p.is_file() and p.stat().st_size > 1000 for p in images)
    text = html.unescape(page.read_text())
    assert "For this posterior at 3,000 gradient evaluations" in text
    assert "passes posteriordb's standard" in text
    # one winner ("...: NUTS, because ...") or several level within the noise ("..., 2 methods are level: NUTS (0.07), ...")
    assert result.recommendation.split(":")[1].split(",")[0].split("(")[0].strip() in PANEL
    # cached: a second call computes nothing
    again = wb.compare(f"{EXAMPLE}:logp_grad", budgets=(3000,), seeds=1, executor="serial", out=tmp_path,
                       progress=False)
    assert again.run.computed == 0 and again.run.cached == len(table)


def test_the_cli_compares_a_built_in_target_with_exact_truth(tmp_path, capsys):
    code = cli.main(["compare", "banana", "--budgets", "2000", "--seeds", "1", "--executor", "serial",
                     "--out", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "banana: 15 runs" in out and "For this posterior at 2,000 gradient evaluations" in out
    assert "noise floor: exact i.i.d. draws" in out  # the exact target's Exact row
    assert (tmp_path / "quick" / "compare_banana" / "index.html").exists() is False
    assert (tmp_path / "full" / "compare_banana" / "index.html").is_file()


def test_a_target_built_in_python_runs_in_this_process_only(tmp_path):
    target = wb.Target.from_numba(uf.iso_logp_grad, dim=2, data=(np.array([1.0, 4.0]),), name="iso")
    built, spec, rebuildable = resolve(target)
    assert built is target and spec["factory"] == "registered" and not rebuildable
    with pytest.raises(ValueError, match="only executor='serial' or 'threads' can run it"):
        wb.compare(target, budgets=(1000,), executor="local", out=tmp_path)


def test_resolving_names(tmp_path):
    target, spec, rebuildable = resolve("eight_schools_noncentered")
    assert spec == {"factory": "posterior", "name": "eight_schools_noncentered", "backend": "numba"} and rebuildable
    target, spec, _ = resolve("gaussian(dim=3, scales='logspace')")
    assert spec == {"factory": "gaussian", "dim": 3, "scales": "logspace"} and target.truth is not None
    with pytest.raises(TargetError, match="missing 1 required positional argument: 'dim'; give its arguments"):
        resolve("gaussian")
    target, spec, _ = resolve(f"{EXAMPLE}:logp_grad")
    assert spec["factory"] == "source" and spec["file_digest"] and target.dim == 2
    assert target.build_info["gradient_check"]["checked"]  # a user's file goes through from_numba's check


def test_bad_settings_and_cli_input(tmp_path, capsys):
    for budgets in [(), (10,), (1.5e4,), (True,)]:
        with pytest.raises(ValueError, match="budgets must be integers >= 100"):
            wb.compare("banana", budgets=budgets, out=tmp_path)
    with pytest.raises(ValueError, match="seeds must be an integer >= 1"):
        wb.compare("banana", seeds=0, out=tmp_path)
    with pytest.raises(TargetError, match="compare needs a Target or a name"):
        resolve(3)
    with pytest.raises(SystemExit):
        cli.main(["compare", "banana", "--budgets", "lots"])
    assert "budgets are integers separated by commas" in capsys.readouterr().err
    assert cli.main(["compare", "nosuch.py:f", "--out", str(tmp_path)]) == 2
    assert "no file 'nosuch.py'" in capsys.readouterr().err


def _table(rows):
    columns = ["method", "grad_budget", "status", "w1_mean", "grad_evals", "health"]
    return pd.DataFrame([dict(zip(columns, r)) for r in rows])


def test_the_recommendation_prefers_a_healthy_method_and_says_why():
    table = _table([
        ("NUTS", 1e5, "ok", 0.05, 1e5, "ok"),
        ("RWM", 1e5, "ok", 0.01, 1e5, "R-hat, low ESS"),
        ("Pathfinder", 1e5, "ok", 0.08, 3e3, "ok"),
        ("NUTS", 1e4, "ok", 0.2, 1e4, "ok"),
        ("Exact", np.nan, "ok", 0.02, 0, "ok"),
    ])
    text = recommendation(table)
    assert text.startswith("For this posterior at 100,000 gradient evaluations: NUTS, because")
    assert "(next: Pathfinder, 0.08; the noise is 0.02)" in text and "diagnostics are clean" in text
    assert "The most accurate was RWM (0.01), the cleanest NUTS: RWM scored lower but failed a diagnostic" in text
    assert "On a tighter budget, Pathfinder gets within 2x of that error (0.08) for 3,000 gradients" in text
    assert "exact i.i.d. draws (4,000) score 0.02" in text
    failing = recommendation(table, {"passes": False, "why_not": "R-hat 1.05", "divergences": 3})
    assert failing.startswith("Caution: the reference posterior fails posteriordb's standard (R-hat 1.05)")
    assert "reparametrisation" in failing
    assert recommendation(_table([("NUTS", 1e5, "error", np.nan, np.nan, "")])).startswith("No method produced")


def test_the_recommendation_calls_methods_within_the_noise_level():
    """One seed each: NUTS 0.05 and SMC 0.06 are within the noise floor (exact draws score 0.02),
    so neither is named the winner; Pathfinder at 0.2 is behind them."""
    table = _table([
        ("NUTS", 1e5, "ok", 0.05, 1e5, "ok"),
        ("SMC", 1e5, "ok", 0.06, 1e5, "ok"),
        ("Pathfinder", 1e5, "ok", 0.2, 3e3, "ok"),
        ("RWM", 1e5, "ok", 0.04, 1e5, "R-hat"),  # better by less than the floor: not 'more accurate'
        ("Exact", np.nan, "ok", 0.02, 0, "ok"),
    ])
    text = recommendation(table)
    assert text.startswith("For this posterior at 100,000 gradient evaluations, 2 methods are level: NUTS (0.05), "
                           "SMC (0.06) posterior sds of mean marginal Wasserstein-1 error, within the noise")
    assert "Pathfinder" not in text.split("posterior sds")[0] and "most accurate was RWM" not in text


def test_the_recommendation_names_no_method_whose_error_is_large():
    table = _table([("NUTS", 1e5, "ok", 0.5, 1e5, "ok"), ("SMC", 1e5, "ok", 0.9, 1e5, "ok")])
    text = recommendation(table)
    assert text.startswith("For this posterior at 100,000 gradient evaluations: no accurate healthy run. The best "
                           "healthy method, NUTS, is 0.5 posterior sds off")


def test_the_page_says_which_remedy_made_the_reference_pass():
    from workbench.comparison import _truth_note

    t = wb.targets.eight_schools(centered=True)
    info = {"n_draws": 20000, "r_hat_max": 1.004, "ess_bulk_min": 900.0, "ess_tail_min": 800.0, "divergences": 0,
            "passes": True, "remedy": "the first run failed posteriordb's standard; run 2 (passed) used "
                                      "target_accept 0.95, warmup 1,500 and 2,500 draws per chain"}
    note = _truth_note(t, info)
    assert "passes posteriordb's standard" in note
    assert note.endswith("The first run failed posteriordb's standard; run 2 (passed) used target_accept 0.95, "
                         "warmup 1,500 and 2,500 draws per chain.")


def test_the_recommendation_says_when_its_pick_is_unadjusted():
    rows = [("MCLMC", 1e5, "ok", 0.01, 1e5, "ok"), ("NUTS", 1e5, "ok", 0.05, 1e5, "ok")]
    assert "MCLMC is unadjusted (no accept/reject step)" in recommendation(_table(rows))
    rows[0] = ("MCLMC", 1e5, "ok", 0.08, 1e5, "ok")  # NUTS is picked: nothing to say
    assert "unadjusted" not in recommendation(_table(rows))


def test_nuts_on_a_learned_transform_has_its_own_row_where_a_flow_is_fitted():
    """``NUTS (flow)`` joins the panel at budgets that pay for its fits (9,000 gradients with 2
    chains) on targets of up to ``FLOW_MAX_DIM`` dimensions, and can be asked for by name."""
    from workbench.comparison import check_methods, grid_for
    from workbench.study.panel import FLOW_MAX_DIM, FLOW_NUTS

    def rows(dim, budgets, methods=None):
        target = wb.targets.gaussian(dim)
        cells = grid_for({"factory": "gaussian", "dim": dim}, target, budgets, range(1), methods)
        return [(c.grad_budget, c.method) for c in cells if c.labels["method"] == FLOW_NUTS]

    assert rows(10, (5_000,)) == []
    ((budget, spec),) = rows(10, (5_000, 10_000))
    assert budget == 10_000 and spec["method"] == "NUTS" and spec["metric"] == "flow"
    assert rows(FLOW_MAX_DIM + 1, (10_000,)) == []
    assert len(rows(10, (10_000,), methods=[FLOW_NUTS])) == 1
    assert check_methods([FLOW_NUTS]) == [FLOW_NUTS]


SCALED_FILE = '''
import os
import numba

SCALE = float(os.environ["WB_TEST_SCALE"])
dim = 2


@numba.njit
def inner(theta, grad_out):
    lp = 0.0
    for i in range(theta.size):
        lp -= 0.5 * (theta[i] / SCALE) ** 2
        grad_out[i] = -theta[i] / SCALE ** 2
    return lp


@numba.njit
def logp_grad(theta, grad_out, data):
    return inner(theta, grad_out)
'''


def test_compare_a_file_whose_density_reads_a_global_from_the_environment_samples_each_scale(tmp_path):
    """The same file and code with another value of a global its density's callee reads is another
    posterior: neither the compiled adapter nor compare's caches may serve the first one's."""
    import os
    import subprocess
    import sys

    source = tmp_path / "scaled.py"
    source.write_text(SCALED_FILE)
    sds = {}
    for scale in ("1", "10"):
        run = subprocess.run([sys.executable, "-m", "workbench", "compare", f"{source}:logp_grad", "--quick",
                              "--methods", "NUTS", "--budgets", "10000", "--executor", "serial", "--no-progress",
                              "--out", str(tmp_path / "out")],
                             env={**os.environ, "WB_TEST_SCALE": scale}, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        assert "0 cached" in run.stdout  # the first scale's cells are not this one's
        refs = sorted((tmp_path / "out" / ".cache" / "_references").glob("*.npz"), key=lambda p: p.stat().st_mtime)
        with np.load(refs[-1]) as z:
            sds[scale] = z["draws"].reshape(-1, 2).std(axis=0)
    # 10,000 reference draws: the sd's relative Monte Carlo error is below 3% even at an ESS of 1,000
    assert np.allclose(sds["1"], 1.0, rtol=0.1) and np.allclose(sds["10"], 10.0, rtol=0.1), sds
