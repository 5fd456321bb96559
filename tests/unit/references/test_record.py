"""workbench/references/record.py: a Reference round-trips through its info and says how it
was made."""

import math

import numpy as np

from workbench.diagnostics import ChainDiagnostics
from workbench.references import Reference


def test_a_reference_round_trips_through_its_info():
    diag = ChainDiagnostics(4, 100, 1.001, 900.0, 800.0, 0, math.nan, 0.9)
    summary = {"mean": np.zeros(2), "sd": np.ones(2), "mcse_mean": np.full(2, 0.01), "mcse_sd": np.full(2, 0.02)}
    ref = Reference(draws=np.zeros((400, 2)), method={"method": "NUTS", "chains": 10, "target_accept": 0.99}, seed=3,
                    runs=3, grad_evals=1000, diagnostics=diag, passes=True, form="non-centred",
                    cross_check={"method": {"method": "NUTS"}, "max_mcse": 1.5, "worst": "mean of a"}, summary=summary)
    back = Reference.from_info(ref.info(), ref.draws, summary)
    assert back.info() == ref.info()
    assert back.diagnostics.chains == 10 and back.form == "non-centred"
    assert "run 3 (passed)" in ref.remedy() and "non-centred form" in ref.remedy()
    np.testing.assert_array_equal(back.sd, np.ones(2))
