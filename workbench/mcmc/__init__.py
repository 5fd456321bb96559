"""Numba building blocks of the MCMC samplers, one module per concern.

- ``metric``: the mass matrix: kinetic energy, momentum draws, the linear map of dense and low-rank metrics
- ``integrators``: the leapfrog step (and fused forms: n steps for HMC, a NUTS leaf)
- ``step_size``: dual averaging and the initial step-size heuristic
- ``adaptation``: the warmup schedule and the metric estimators (diagonal, Stan's, low-rank, dense)
- ``termination``: the generalised no-U-turn criterion, checked leaf by leaf
- ``trajectory``: the NUTS transition (iterative doubling, multinomial sampling) and HMC's
- ``chains``: the whole-chain kernels the samplers in ``workbench.methods`` run

This package holds the compiled kernels only. Modules of the same name elsewhere are the
Python around them: ``mcmc/metropolis.py`` is the random-walk and independence kernels,
``methods/metropolis.py`` the methods a user calls; ``mcmc/microcanonical.py`` the MAMS and
MCLMC kernels, ``methods/microcanonical.py`` their methods and tuning schedules;
``mcmc/chains.py`` the HMC/NUTS chain kernel, ``sampling/chain_sampler.py`` what runs any
chain kernel on threads.
"""
