"""Run health: the warnings a sampler result carries, against ArviZ's own numbers."""

import arviz as az
import numpy as np
import pytest

import workbench as wb
from workbench import diagnostics as D


def test_chain_diagnostics_are_arviz_numbers():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 500, 3)).cumsum(axis=1) * 0.05 + rng.normal(size=(4, 500, 3))
    energy = rng.normal(size=(4, 500))
    diag = D.chain_diagnostics(x, {"energy": energy, "diverging": np.zeros((4, 500), bool)})
    assert diag.ess_bulk_min == pytest.approx(np.min(az.ess(x, method="bulk")), rel=1e-12)
    assert diag.r_hat_max == pytest.approx(np.max(az.rhat(x)), rel=1e-12)
    assert diag.bfmi_min == np.min(az.bfmi(energy))
    assert diag.divergences == 0 and np.isnan(diag.tree_depth_saturated)


def test_a_healthy_run_has_no_warnings():
    res = wb.methods.NUTS(progress=False).run(wb.targets.gaussian(5), seed=0)
    assert D.health_messages(D.ChainDiagnostics(**res.info["diagnostics"])) == []
    assert D.health_flags(res.messages) == "ok"


def test_an_unhealthy_run_says_so():
    # NUTS with the diagonal metric on the banana, without raising its target on divergences:
    # divergences in the arms, chains that disagree (11 of the first 12 seeds flag all three)
    res = wb.methods.NUTS(metric="diag", progress=False, adapt_target=False).run(wb.targets.banana(), seed=3)
    flags = D.health_flags(res.messages)
    assert "divergences" in flags and "R-hat" in flags and "low ESS" in flags
    assert any("divergent transitions" in m and "target_accept" in m for m in res.messages)


def test_saturated_trees_and_short_runs_are_flagged():
    res = wb.methods.NUTS(max_depth=2, warmup=200, draws=200, progress=False).run(
        wb.targets.gaussian(20, scales="logspace"), seed=0)
    assert res.info["diagnostics"]["tree_depth_saturated"] > 0.5
    assert "tree depth" in D.health_flags(res.messages)


def test_low_e_bfmi_is_flagged():
    # energies that barely move between draws: the momentum resampling cannot explore the energy
    energy = np.cumsum(np.random.default_rng(1).normal(size=(2, 400)), axis=1)
    diag = D.chain_diagnostics(np.random.default_rng(2).normal(size=(2, 400, 2)), {"energy": energy})
    assert diag.bfmi_min < 0.2
    assert any(m.startswith("E-BFMI") for m in D.health_messages(diag))


def test_reference_standard():
    good = D.ChainDiagnostics(4, 1000, 1.002, 2000.0, 1500.0, 0, np.nan, 0.9)
    assert D.passes_reference_standard(good) == (True, "")
    bad = good._replace(r_hat_max=1.077, ess_bulk_min=35.0, divergences=3)
    passes, why = D.passes_reference_standard(bad)
    assert not passes and "R-hat 1.077" in why and "ESS 35" in why and "3 divergences" in why
    low_energy = good._replace(bfmi_min=0.12)
    assert D.passes_reference_standard(low_energy) == (False, "E-BFMI 0.12 (needs > 0.2)")
    assert D.passes_reference_standard(good._replace(bfmi_min=np.nan))[0]  # no energies: not checked


def test_the_low_ess_warning_says_it_plainly():
    from workbench.diagnostics import ChainDiagnostics, health_messages

    diag = ChainDiagnostics(chains=4, draws=1000, r_hat_max=1.0, ess_bulk_min=162.0, ess_tail_min=365.0,
                            divergences=0, tree_depth_saturated=0.0, bfmi_min=1.0)
    (message,) = health_messages(diag)
    assert message.startswith("low ESS: the smallest bulk ESS is 162 and the smallest tail ESS is 365, "
                              "below the 400 needed (100 per chain x 4 chains)")
