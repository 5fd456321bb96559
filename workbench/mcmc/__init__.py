"""Numba building blocks of the MCMC samplers, one module per concern.

- ``metric``: the mass matrix's kinetic energy and momentum draws (diagonal, dense)
- ``integrators``: the leapfrog step (and fused forms: n steps for HMC, a NUTS leaf)
- ``step_size``: dual averaging and the initial step-size heuristic
- ``mass_adaptation``: Stan-style windowed and gradient-based (nutpie-like) diagonal adaptation
- ``termination``: the generalised no-U-turn criterion, checked leaf by leaf
- ``trajectory``: the NUTS transition (iterative doubling, multinomial sampling) and HMC's
- ``chains``: the whole-chain kernels the samplers in ``workbench.methods`` run
"""
