"""workbench/errors.py: the point in error messages, and the density error's fields."""

import numpy as np

from workbench.errors import DensityError, format_point


def test_format_point_is_short_and_says_how_many_values_it_left_out():
    assert format_point(np.array([1.0, 2.5])) == "[1, 2.5]"
    assert format_point(np.arange(10.0), max_items=3) == "[0, 1, 2, ... (10 values)]"


def test_density_error_keeps_where_it_happened():
    err = DensityError("NUTS on t: boom", method="NUTS", chain=2, iteration=7, point=np.array([1.0, 2.0]))
    assert (err.method, err.chain, err.iteration) == ("NUTS", 2, 7) and err.point.tolist() == [1.0, 2.0]
    assert isinstance(err, Exception) and "boom" in str(err)
