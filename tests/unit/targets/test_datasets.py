"""workbench/targets/datasets.py: the real data sets load offline."""

import numpy as np

import workbench as wb

T = wb.targets


def test_real_data_sets_load_offline_with_names():
    lin = T.linear_regression("diabetes")
    assert lin.dim == 11 and lin.n_data == 442 and lin.param_names[:3] == ("intercept", "age", "sex")
    log = T.logistic_regression("breast_cancer")
    assert log.dim == 31 and log.n_data == 569 and log.truth is None
    X = log.data[0]
    np.testing.assert_allclose(X[:, 1:].mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(X[:, 1:].std(0), 1, atol=1e-12)
