"""workbench/targets/sp500.py: Inference Gym's S&P 500 stochastic volatility posterior: its data
are the Gym's, its gradient is its density's, and NUTS on it agrees with the Gym's ground truth
(Stan, 50,000 draws) within Monte Carlo error."""

import numpy as np
import pytest

import workbench as wb
from workbench.targets import sp500


def test_the_returns_are_the_last_hundred_daily_changes_of_the_closing_price_centred():
    y = sp500.centred_returns()
    changes = np.diff(np.array(sp500.CLOSING_PRICES))
    assert y.shape == (100,) and abs(y.mean()) < 1e-9
    np.testing.assert_allclose(y, changes - changes.mean())


def test_the_gradient_is_the_densitys():
    t = wb.posteriors.load("stochastic_volatility_sp500")
    rng = np.random.default_rng(0)
    for _ in range(3):
        theta = np.concatenate([[2.5, 8.0, np.log(0.5)], 8.0 + rng.standard_normal(100)])
        _, g = t.logp_and_grad(theta)
        h = 1e-6
        for k in (0, 1, 2, 3, 50, 102):
            e = np.zeros(t.dim)
            e[k] = h
            fd = (t.logp(theta + e) - t.logp(theta - e)) / (2 * h)
            assert g[k] == pytest.approx(fd, rel=1e-5, abs=1e-5)


@pytest.mark.slow
def test_nuts_agrees_with_the_gyms_ground_truth_within_monte_carlo_error():
    import arviz as az

    t = wb.posteriors.load("stochastic_volatility_sp500")
    res = wb.methods.NUTS(chains=4, warmup=1000, draws=2000, progress=False).run(t, seed=0)
    values = sp500.constrained(res.draws)
    for name, truth in sp500.GYM_MEANS.items():
        x = values[name]
        ess = float(np.asarray(az.ess(az.from_dict({"posterior": {"q": x}}))["q"]))
        error = np.hypot(x.std() / np.sqrt(ess), sp500.GYM_SDS[name] / np.sqrt(50_000))
        assert abs(x.mean() - truth) < 4 * error, (name, x.mean(), truth, error)
        assert x.std() == pytest.approx(sp500.GYM_SDS[name], rel=0.25)
