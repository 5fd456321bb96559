"""workbench/sampling/metric_choice.py: the first fit's held-out losses choose the preconditioner,
and the warmup after the first phase follows the choice."""

import numpy as np
import pytest

from workbench.mcmc.flow import Coupling, Flow
from workbench.mcmc.flow_fit import FlowFit
from workbench.sampling.metric_choice import (
    LOW_RANK_WARMUP,
    NOT_FOUND_WARMUP,
    NOTHING_FITS,
    WHITENED_WARMUP_STAGED,
    first_choice,
    low_rank_warmup,
    nothing_fits,
)


def _fit(diagonal: float, low_rank: float, flow: float, layers: int = 1, dim: int = 10) -> FlowFit:
    """A first fit with these held-out losses and ``layers`` kept layers."""
    kept = (Coupling.identity(np.array([1]), np.array([[0]])),) * layers
    return FlowFit(Flow(np.zeros(dim), np.ones(dim), kept), diagonal, flow, [], 600, 1.0, low_rank)


# the losses (diagonal, low-rank, flow), the layers the flow kept, the choice, and the choice
# without the flow (metric="auto" above AUTO_FLOW_MAX_DIM)
@pytest.mark.parametrize(("losses", "layers", "expected", "without_flow"), [
    ((0.5, 0.4, 0.1), 1, "diag", "diag"),             # easy: 0.05 per coordinate
    ((40.0, 0.1, 20.0), 1, "low_rank", "low_rank"),   # a correlated Gaussian
    ((40.0, 30.0, 5.0), 1, "flow", "low_rank"),       # a banana: the flow halves the best linear loss
    ((8.0, 7.9, 6.0), 1, "diag", "diag"),             # nothing helps enough, and the diagonal metric fits
    ((40.0, 39.0, 30.0), 1, "flow", "diag"),          # no linear map fits (LINEAR_MISFIT): the flow goes on learning
    ((30.0, 20.0, 15.0), 1, "flow", "low_rank"),      # ... also where the low-rank metric beats the diagonal one
    ((30.0, 20.0, 25.0), 1, "low_rank", "low_rank"),  # ... but not a flow that fits worse than the low-rank metric
    ((40.0, 39.0, 40.0), 0, "flow", "diag"),          # no layer learnt yet from draws that fit badly: go on learning
    ((0.5, 0.5, 0.5), 0, "diag", "diag"),             # no layer, and none needed
    ((1.6e7, 1.5e7, 1e7), 1, "low_rank", "low_rank"),  # nothing fits: the low-rank metric learns its own
    ((1.6e7, np.nan, 1e7), 1, "low_rank", "low_rank"),  # ... also where the low-rank fit failed
])
def test_the_first_fit_chooses_the_preconditioner(losses, layers, expected, without_flow):
    fit = _fit(*losses, layers=layers)
    assert first_choice(fit, 10, consider_low_rank=True) == expected
    assert first_choice(fit, 10, consider_low_rank=False) != "low_rank"
    assert first_choice(fit, 10, consider_low_rank=True, flow_allowed=False) == without_flow


@pytest.mark.parametrize(("per_coordinate", "staged", "share"), [
    (0.5, False, LOW_RANK_WARMUP),                 # the low-rank metric's usual warmup after the first phase
    (0.5, True, WHITENED_WARMUP_STAGED),          # ... MAMS's, tuned in stages on the whitened posterior
    (2 * NOTHING_FITS, False, NOT_FOUND_WARMUP),  # the chains had not found the posterior: a whole warmup
    (2 * NOTHING_FITS, True, NOT_FOUND_WARMUP),
])
def test_the_low_rank_warmup_is_whole_where_nothing_fit_the_first_draws(per_coordinate, staged, share):
    fit = _fit(per_coordinate * 10, per_coordinate * 10, per_coordinate * 10)
    assert nothing_fits(fit, 10) == (per_coordinate > NOTHING_FITS)
    assert low_rank_warmup(fit, 10, staged) == share
    assert NOT_FOUND_WARMUP > max(LOW_RANK_WARMUP, WHITENED_WARMUP_STAGED)
