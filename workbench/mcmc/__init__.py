"""Numba building blocks of the MCMC samplers, one module per concern.

- ``metric``: the mass matrix's kinetic energy, momentum draws and velocities (diagonal, dense)
- ``integrators``: the leapfrog step
- ``step_size``: dual averaging and the initial step-size heuristic
- ``mass_adaptation``: Stan-style windowed and gradient-based (nutpie-like) diagonal adaptation
- ``trajectory``: the NUTS tree (multinomial, generalised no-U-turn criterion)
- ``chains``: the whole-chain kernels the samplers in ``workbench.methods`` run
"""
