"""workbench/gradient_check.py: the gradient against central differences."""

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench.errors import TargetError

PREC = (np.array([1.0, 4.0, 9.0]),)


def test_check_gradient_reports_worst_relative_error():
    t = wb.Target.from_numba(uf.iso_logp_grad, dim=3, data=PREC)
    chk = wb.check_gradient(t, points=np.ones((2, 3)))
    assert chk.max_rel_error < 1e-9 and chk.errors.shape == (2,)


def test_check_gradient_catches_a_wrong_gradient():
    # same density as iso, but the "precision" handed to the gradient is off by 10% in
    # one coordinate: check_gradient must see it
    t = wb.Target.from_numba(uf.iso_logp_grad, dim=3, data=PREC)
    wrong = t.replace(data=(np.array([1.0, 4.0, 9.0]),))
    assert wb.check_gradient(wrong).max_rel_error < 1e-9

    from workbench.gradient_check import finite_difference_gradient

    x = np.array([0.5, -1.0, 2.0])
    fd = finite_difference_gradient(t, x)
    np.testing.assert_allclose(fd, [-0.5, 4.0, -18.0], rtol=1e-9)
    # a deliberately wrong analytic gradient
    g_bad = t.logp_and_grad(x)[1] * np.array([1.0, 1.0, 1.1])
    assert np.max(np.abs(g_bad - fd)) / max(1.0, np.abs(fd).max()) > 0.05


def test_gradient_check_allows_for_round_off_of_a_large_density():
    # log p ~ -1e6 and curvature 1e4: a right gradient must pass, a 1% wrong one must not
    mu = np.array([50.0, -20.0])
    t = wb.Target.from_numba(uf.steep_gaussian, dim=2, data=(mu,), initial_point=mu + 0.01)
    assert t.build_info["gradient_check"]["checked"]
    with pytest.raises(TargetError, match="coordinate 1"):
        wb.Target.from_numba(uf.iso_off_in_last, dim=2, data=(np.array([1e4, 1e4]),),
                             initial_point=np.array([50.0, -20.0]), name="mine")


def test_gradient_check_is_skipped_with_a_note_above_its_size_limit(monkeypatch):
    import workbench.gradient_check as target_module

    monkeypatch.setattr(target_module, "GRADIENT_CHECK_MAX_DIM", 2)
    with pytest.warns(UserWarning, match="gradient check skipped: d = 3 > 2"):
        t = wb.Target.from_numba(uf.iso_wrong_sign, dim=3, data=PREC)
    assert not t.build_info["gradient_check"]["checked"]


def test_gradient_check_works_where_the_density_ends_near_the_start():
    # log p = -inf outside a disc: points that fall outside are pulled in, not fatal
    t = wb.Target.from_numba(uf.gaussian_in_a_disc, dim=2, initial_point=np.array([5.9, 0.0]))
    assert t.build_info["gradient_check"]["points"] >= 1
