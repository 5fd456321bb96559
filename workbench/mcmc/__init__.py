"""Numba building blocks of the MCMC samplers, one module per concern.

- ``metric``: the mass matrix: kinetic energy, momentum draws, the linear map of dense and low-rank metrics
- ``integrators``: the leapfrog step (and fused forms: n steps for HMC, a NUTS leaf)
- ``step_size``: dual averaging and the initial step-size heuristic
- ``adaptation``: the warmup schedule and the metric estimators (diagonal, Stan's, low-rank, dense)
- ``termination``: the generalised no-U-turn criterion, checked leaf by leaf
- ``trajectory``: the NUTS transition (iterative doubling, multinomial sampling) and HMC's
- ``chains``: the whole-chain kernels the samplers in ``workbench.methods`` run
"""
