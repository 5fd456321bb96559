"""workbench/running/memory.py: a run that cannot fit in memory is refused before it starts,
naming each large array."""

import pytest

import workbench as wb
from workbench.running import memory


def test_a_run_that_cannot_fit_in_memory_is_refused_before_it_starts(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 10**9)  # a machine with 1 GB free
    t = wb.targets.gaussian(dim=20_000)
    with pytest.raises(memory.TooLargeError, match=r"NUTS on 'gaussian_isotropic' \(d = 20,000\) would need about 1.92 GB "
                                              r"\(chain draws 0.96 GB, kept draws 0.96 GB\); 1 GB are available"):
        wb.methods.NUTS(chains=3, warmup=1000, draws=1000).run(t, seed=0)
    with pytest.raises(memory.TooLargeError, match=r"FullRankVI .*\(fit \(d\^2 parameters\) 35.2 GB"):
        wb.methods.FullRankVI().run(t, seed=0)
    with pytest.raises(memory.TooLargeError, match=r"BatchAndMatch .*\(update \(d x d matrices\) 32 GB"):
        wb.methods.BatchAndMatch().run(t, seed=0)
    # what fits is not refused: Exact's 2 x 100 draws are 32 MB
    assert wb.methods.Exact(chains=2, draws=100).run(t, seed=0).draws.shape == (2, 100, 20_000)
