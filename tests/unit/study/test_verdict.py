"""The index's verdict map: the most accurate healthy method per target and budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench.study.style import FAMILY_FILLS
from workbench.study.verdict import health_audit, health_audit_text, verdict_html, verdict_table


def _table():
    rows = []

    def add(target, budget, method, w1, health="ok", seeds=(0, 1), status="ok"):
        for seed in seeds:
            rows.append({"target": target, "grad_budget": budget, "method": method, "seed": seed,
                         "w1_mean": w1 * (1 + 0.1 * seed), "health": health, "status": status})

    add("g", 1e4, "NUTS", 0.05)
    add("g", 1e4, "MeanFieldVI", 0.02, health="not converged")  # closer, but flagged
    add("g", 1e4, "Exact", 0.001)                                  # the floor, never a verdict
    add("g", 1e5, "NUTS", 0.02)
    add("g", 1e5, "SMC", 0.01, health="ok")
    add("g", 1e5, "SMC (rwm)", 0.005, status="error")              # a failed run is no verdict
    add("f", 1e5, "HMC", 0.3, health="divergences")
    rows.append({"target": "f", "grad_budget": 1e5, "method": "IS", "seed": 0, "w1_mean": 0.01,
                 "health": "ok", "status": "ok"})
    rows.append({"target": "f", "grad_budget": 1e5, "method": "IS", "seed": 1, "w1_mean": 0.01,
                 "health": "Pareto k-hat", "status": "ok"})           # one flagged seed: not healthy
    add("l", np.nan, "Laplace", 0.02)                                 # no budget: not in the map
    return pd.DataFrame(rows)


def test_the_verdict_is_the_best_healthy_method_per_target_and_budget():
    v = verdict_table(_table()).set_index(["target", "grad_budget"])
    assert list(v.index) == [("g", 10_000), ("g", 100_000), ("f", 100_000)]  # table order, budgets ascending
    g4 = v.loc[("g", 10_000)]
    assert g4["method"] == "NUTS" and g4["family"] == "MCMC" and g4["score"] == pytest.approx(0.0525)
    assert g4["closest"] == "MeanFieldVI" and g4["healthy_methods"] == 1
    g5 = v.loc[("g", 100_000)]
    assert g5["method"] == "SMC" and g5["family"] == "importance and SMC" and g5["runner_up"] == "NUTS"
    f = v.loc[("f", 100_000)]
    assert f["method"] == "" and f["healthy_methods"] == 0


def test_the_map_colours_cells_by_family_and_names_a_closer_flagged_run():
    page = verdict_html(_table(), link="quick/accuracy/index.html")
    assert "href='quick/accuracy/index.html'" in page
    assert FAMILY_FILLS["MCMC"] in page and FAMILY_FILLS["importance and SMC"] in page
    assert "closer but flagged: MeanFieldVI" in page and "no healthy run" in page
    assert "Exact" not in page and "Laplace" not in page


def test_a_table_without_the_columns_is_named():
    with pytest.raises(ValueError, match="w1_mean"):
        verdict_table(pd.DataFrame({"target": ["a"], "method": ["NUTS"]}))


def test_the_headline_counts_the_wins_at_the_largest_budget():
    from workbench.study.verdict import verdict_headline

    assert verdict_headline(_table()) == ("At 100,000 gradients, of 2 targets, the most accurate healthy method, "
                                          "ahead of the next by more than the noise, is SMC on 1; on 1 no run was "
                                          "healthy.")


def test_methods_within_the_noise_of_each_other_are_level_not_ranked():
    """One seed each, 0.020 against 0.024 with exact draws scoring 0.015: the difference is below
    the noise floor, so neither is named the winner; a third at 0.05 is behind them."""
    from workbench.study.verdict import verdict_words

    rows = [{"target": "t", "grad_budget": 1e4, "method": m, "seed": 0, "w1_mean": w, "health": "ok", "status": "ok"}
            for m, w in (("NUTS", 0.020), ("MAMS", 0.024), ("MCLMC", 0.05))]
    rows.append({"target": "t", "grad_budget": np.nan, "method": "Exact", "seed": 0, "w1_mean": 0.015,
                 "health": "ok", "status": "ok"})
    v = verdict_table(pd.DataFrame(rows)).iloc[0]
    assert v["noise_floor"] == 0.015 and v["level"] == "MAMS"
    assert verdict_words(v) == "level: NUTS, MAMS"
    assert "level: NUTS, MAMS" in verdict_html(pd.DataFrame(rows))
    # over seeds, a spread larger than the floor makes a gap level too
    spread = [{**r, "seed": s, "w1_mean": r["w1_mean"] * (1 + 0.5 * s)} for r in rows[:2] for s in (0, 1, 2)]
    gap = pd.DataFrame(spread + rows[3:])
    assert verdict_table(gap).iloc[0]["level"] == "MAMS"


def test_a_best_healthy_run_half_a_posterior_sd_off_is_no_accurate_run():
    from workbench.study.verdict import verdict_words

    rows = [{"target": "t", "grad_budget": 1e4, "method": "NUTS", "seed": 0, "w1_mean": 0.5, "health": "ok",
             "status": "ok"}]
    v = verdict_table(pd.DataFrame(rows)).iloc[0]
    assert not v["accurate"] and verdict_words(v) == "no accurate healthy run (best NUTS 0.5 > 0.1)"
    assert "no accurate healthy run" in verdict_html(pd.DataFrame(rows)) and "<b>NUTS</b>" not in verdict_html(pd.DataFrame(rows))


def test_the_health_audit_counts_large_errors_flagged_and_false_alarms():
    """A large error flagged by the method's own diagnostics counts; one flagged only by the
    study's truth ("far from the answer") is silent, as a user without the truth sees it; a
    flag on an accurate run is a false alarm."""
    rows = [("SMC", 0.9, "few particles", 10_000), ("NUTS", 1.4, "far from the answer", 100_000),
            ("NUTS", 0.03, "R-hat", 10_000), ("MAMS", 0.02, "ok", 10_000), ("Exact", 0.9, "ok", None),
            ("NN4Post", 0.7, "ok", float("nan"))]
    table = pd.DataFrame([{"target": "t", "method": m, "status": "ok", "mean_err_max": e, "health": h, "grad_budget": b}
                          for m, e, h, b in rows])
    audit = health_audit(table)
    assert (audit["large"], audit["large_flagged"], audit["small"], audit["small_flagged"]) == (3, 1, 2, 1)
    assert audit["large_flags"] == {"few particles": 1} and audit["small_flags"] == {"R-hat": 1}
    assert audit["silent"] == ["t / NUTS / 100,000 gradients", "t / NN4Post / no budget"]
    text = health_audit_text(table)
    assert "large errors flagged: 1 of 3" in text and "Flags on accurate runs (every mean within 0.1 sds): 1 of 2" in text
