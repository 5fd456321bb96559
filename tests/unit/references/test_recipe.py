"""workbench/references/recipe.py: the ladder of remedies (posteriordb's recipe), the
reparametrised form, the cross-check, and identified quantities."""

import numpy as np
import pytest

import workbench as wb
from workbench import references as R
from workbench.diagnostics import ChainDiagnostics
from workbench.references.recipe import disagreement, remedied


def _diag(divergences=0, ess=1000.0, bfmi=1.0, r_hat=1.0, chains=4, draws=1000):
    return ChainDiagnostics(chains=chains, draws=draws, r_hat_max=r_hat, ess_bulk_min=ess, ess_tail_min=ess,
                            divergences=divergences, tree_depth_saturated=0.0, bfmi_min=bfmi)


def test_the_recipe_is_posteriordbs():
    """10 chains; divergences raise target_accept 0.9 -> 0.95 -> 0.99 -> 0.999 and double the
    warmup up to 10,000; short ESS buys the draws the ESS per draw says are needed."""
    spec = {"method": "NUTS", "chains": 4, "warmup": 1000, "draws": 2500, "target_accept": 0.9}
    first = remedied(spec, _diag(divergences=3))
    assert first["chains"] == 10 and first["target_accept"] == 0.95 and first["warmup"] == 2000
    second = remedied(first, _diag(divergences=1, chains=10))
    third = remedied(second, _diag(divergences=1, chains=10))
    assert (second["target_accept"], third["target_accept"]) == (0.99, 0.999)
    assert remedied({**third, "warmup": 8000}, _diag(divergences=1))["warmup"] == 10_000
    # ESS 200 from 4 x 1,000 draws: 0.05 per draw, so 1.5 x 400 / 0.05 = 12,000 draws (1,200 a
    # chain), and at least twice the draws run (4 x 2,500 x 2 = 20,000: 2,000 a chain)
    short = remedied(spec, _diag(ess=200.0))
    assert short["draws"] == 2000 and short["warmup"] == 2000
    assert remedied(spec, _diag(ess=20.0))["draws"] == 12_000
    assert remedied(spec, _diag(bfmi=0.1))["warmup"] == 2000


def test_a_failing_reference_climbs_the_ladder_and_is_marked(tmp_path):
    # 40 draws per chain cannot reach 400 ESS at first: the ladder tries the flow, then buys more
    # draws, up to its last run
    tiny = {"method": "NUTS", "chains": 2, "warmup": 50, "draws": 40, "progress": False}
    t = wb.targets.gaussian(dim=2).replace(truth=None, spec={"factory": "custom"})
    ref = R.build_reference(t, tiny, max_runs=3)
    assert ref.runs == 3 and ref.method["metric"] == "flow"
    assert ref.method["chains"] == 10 and ref.method["draws"] > 40
    failing = R.build_reference(t, tiny, max_runs=1)
    assert failing.runs == 1 and not failing.passes and "ESS" in failing.why_not
    res = wb.methods.Exact(draws=200).run(wb.targets.gaussian(dim=2), seed=0)
    with pytest.warns(UserWarning, match="fails posteriordb's standard"):
        wb.metrics.evaluate(res, wb.targets.gaussian(dim=2), reference=failing)


def test_centred_eight_schools_gets_its_reference_from_the_non_centred_form():
    """The centred form diverges; the second rung runs the non-centred form and maps it back,
    and the reference passes and says which form made it, checked by an independent run."""
    t = wb.posteriors.load("eight_schools_centered")
    ref = R.build_reference(t, {**R.DEFAULT_REFERENCE, "draws": 1000})
    assert ref.passes, ref.why_not
    assert ref.runs == 2 and ref.form.startswith("non-centred")
    assert "non-centred" in ref.remedy()
    assert ref.cross_check["max_mcse"] <= R.CROSS_CHECK_MCSE
    # the draws are of the centred coordinates: theta_j has the spread of the school effects
    assert ref.draws.shape[1] == 10 and 3.0 < ref.sd[2] < 15.0


def test_the_banana_gets_its_reference_from_flow_nuts():
    """The default run fails on the banana's arms (R-hat 1.016, bulk ESS 265 with this seed); the next rung, the same
    run with metric="flow", passes and is cross-checked by another flow run."""
    t = wb.targets.banana().replace(truth=None, spec={"factory": "custom"})
    ref = R.build_reference(t, {**R.DEFAULT_REFERENCE, "draws": 1000}, seed=0)
    assert ref.passes, ref.why_not
    assert ref.runs == 2 and ref.method["metric"] == "flow"
    assert ref.cross_check["method"]["metric"] == "flow"


def test_disagreement_is_the_largest_difference_in_mcse():
    a = {"mean": np.array([0.0, 1.0]), "sd": np.array([1.0, 1.0]), "mcse_mean": np.array([0.03, 0.03]),
         "mcse_sd": np.array([0.04, 0.04])}
    b = {**a, "mean": np.array([0.0, 1.3])}
    z, worst = disagreement(a, b, ("a", "b"))
    assert z == pytest.approx(0.3 / np.hypot(0.03, 0.03)) and worst == "mean of b"


def test_a_bnn_reference_is_checked_on_its_outputs_not_its_weights():
    """Chains of a BNN sit in equivalent modes (a hidden unit's signs flipped: tanh is odd, so the
    network is the same): R-hat on the weights fails, on the network's outputs it passes. The
    chains are made equivalent exactly, from one chain: chains of one run may also sit in modes
    that are not equivalent (seeds 0-7: the outputs' R-hat 1.00-1.28), and which seeds do depends
    on the CPU (the mode search's L-BFGS-B sums in the order of OpenBLAS's kernel for it)."""
    t = wb.targets.bnn(n_data=20, widths=[3])
    assert t.param_names[:9] == ("W0[0,0]", "W0[0,1]", "W0[0,2]", "b0[0]", "b0[1]", "b0[2]",
                                 "W1[0,0]", "W1[1,0]", "W1[2,0]")
    one = wb.methods.NUTS(chains=4, warmup=500, draws=500, metric="diag", progress=False).run(t, seed=0).draws[0]

    def flipped(unit):  # the unit's input weight, bias and output weight change sign
        x = one.copy()
        x[:, [unit, 3 + unit, 6 + unit]] *= -1.0
        return x

    chains = np.stack([one] + [flipped(unit) for unit in range(3)])
    assert wb.diagnostics.chain_diagnostics(chains).r_hat_max > 1.05  # the labelling differs between chains
    assert wb.diagnostics.chain_diagnostics(t.identified(chains)).r_hat_max < 1.02  # the outputs agree
    ref = R.build_reference(t, {"method": "NUTS", "chains": 4, "warmup": 200, "draws": 200, "metric": "diag",
                                "progress": False}, max_runs=1, check=False)
    by_chain = ref.draws.reshape(4, 200, t.dim)  # the reference keeps its draws chain after chain
    on_outputs = wb.diagnostics.chain_diagnostics(t.identified(by_chain))
    assert ref.diagnostics.r_hat_max == pytest.approx(on_outputs.r_hat_max, rel=1e-12)
    assert ref.diagnostics.r_hat_max != pytest.approx(wb.diagnostics.chain_diagnostics(by_chain).r_hat_max)
