"""workbench/discrete/burglary.py: the survey's burglary network, exact answers and simulations within 4 Monte Carlo SEs."""

import itertools

import pytest

from workbench.discrete import burglary


def test_joint_distribution_sums_to_one():
    total = sum(burglary.joint(*s) for s in itertools.product((0, 1), repeat=5))
    assert total == pytest.approx(1.0, abs=1e-15)


def test_exact_burglary_posterior_is_the_surveys():
    assert round(burglary.posterior_burglary(True, True), 3) == 0.284
    assert burglary.posterior_burglary(True, True) == pytest.approx(0.284171835, abs=1e-9)
    # the survey's other rows of P(B | J, M)
    assert burglary.posterior_burglary(True, False) == pytest.approx(0.005129858, abs=1e-9)
    assert burglary.posterior_burglary(False, False) == pytest.approx(9.01844e-05, rel=1e-5)


def test_naive_bayes_reproduces_the_survey_from_the_consistent_table():
    corrected = burglary.naive_bayes_burglary(burglary.survey_count_table(corrected=True))
    assert corrected["score_burglary"] == pytest.approx(0.0005602976065, rel=1e-10)
    assert corrected["score_no_burglary"] == pytest.approx(0.0005674753209, rel=1e-9)
    assert corrected["posterior"] == pytest.approx(0.4968177484, rel=1e-9)
    printed = burglary.naive_bayes_burglary(burglary.survey_count_table(corrected=False))
    assert printed["posterior"] == pytest.approx(0.0601, abs=5e-4)  # the printed row, literally


@pytest.mark.parametrize("estimator, n", [(burglary.rejection_sampling, 4_000_000), (burglary.likelihood_weighting, 1_000_000)])
def test_simulations_converge_to_the_exact_posterior(estimator, n):
    exact = burglary.posterior_burglary(True, True)
    res = estimator(n, seed=3)
    assert abs(res["estimate"] - exact) < 4 * res["se"] and res["se"] < 0.02


