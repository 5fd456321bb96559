"""workbench/calibration/page.py: what a method's figure shows, and narrow tables."""

import numpy as np
import pandas as pd

from workbench.calibration import page


class _Result:
    quantities = ("a", "b", "c", "log_lik")
    p_values = pd.DataFrame({"a": [0.5, 0.001], "b": [0.2, 0.3], "c": [0.4, 0.002], "log_lik": [0.6, 0.7]},
                            index=["NUTS", "MeanFieldVI"])
    flagged = {"NUTS": [], "MeanFieldVI": ["a", "c"]}


def test_a_methods_figure_shows_its_flagged_quantities_then_log_lik_then_the_smallest_p():
    assert page.shown_quantities(_Result, "MeanFieldVI")[:3] == ["a", "c", "log_lik"]
    assert page.shown_quantities(_Result, "NUTS")[:2] == ["log_lik", "b"]


def test_the_pvalue_table_has_quantities_as_rows_and_methods_as_columns():
    table = page.p_value_table(_Result.p_values, _Result.flagged)
    assert list(table.columns) == ["quantity", "NUTS", "MeanFieldVI"]
    assert list(table["quantity"][:2]) == ["a", "c"] and table.loc[0, "MeanFieldVI"] == "0.001"
    assert np.all(table.map(lambda v: len(str(v)) < 20))
