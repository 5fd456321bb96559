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


def test_the_chain_is_two_kernels_one_without_a_map_for_diagonal_metrics(monkeypatch):
    """Under a diagonal metric NUTS runs the kernel compiled for transform=None (one NUTS tree,
    a third of the compile time); under low-rank and dense, the one compiled for a map."""
    from numba import types

    from workbench.jit import KERNELS

    assert KERNELS["workbench.mcmc.chains._hamiltonian_chain_diag"] is K.hamiltonian_chain_diag
    assert KERNELS["workbench.mcmc.chains._hamiltonian_chain"] is K.hamiltonian_chain
    assert K.hamiltonian_chain_diag.compiled().signatures[0][7] == types.none
    assert K.hamiltonian_chain.compiled().signatures[0][7] == K.TRANSFORM_TYPE
    used = []
    from workbench.methods import hmc

    real = hmc.start_chains
    monkeypatch.setattr(hmc, "start_chains", lambda method, kernel, *a: used.append(kernel) or real(method, kernel, *a))
    target = wb.targets.gaussian(dim=3)
    for metric in ("diag", "diag_stan", "low_rank", "dense"):
        wb.methods.NUTS(metric=metric, chains=1, warmup=50, draws=50, progress=False).run(target, seed=0)
    assert used == [K.hamiltonian_chain_diag] * 2 + [K.hamiltonian_chain] * 2
