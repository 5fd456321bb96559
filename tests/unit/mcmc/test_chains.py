"""workbench/mcmc/chains.py: the settings a chain is compiled for, and its statistics."""

import pytest

import workbench as wb
from workbench.mcmc import chains as K


def test_settings_are_cast_to_the_one_compiled_type():
    values = {f: 1 for f in K.HamiltonianSettings._fields}
    s = K.hamiltonian_settings(**values)
    assert type(s.n_warmup) is int and type(s.step_size) is float and type(s.warmup_grad_cap) is int
    with pytest.raises(TypeError, match="needs"):
        K.hamiltonian_settings(n_warmup=1)


def test_every_statistic_a_chain_writes_is_named():
    assert len(K.STAT_NAMES) == K.S_NAN + 1
    res = wb.methods.NUTS(chains=1, warmup=50, draws=20, progress=False).run(wb.targets.gaussian(2), seed=0)
    assert {"accept_prob", "step_size", "tree_depth", "n_steps", "energy", "diverging"} <= set(res.stats)
