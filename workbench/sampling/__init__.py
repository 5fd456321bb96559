"""What the MCMC samplers share, above their compiled kernels (``workbench/mcmc/``) and below the
methods (``workbench/methods/``): the chain sampler's settings and template (one kernel per
chain on threads, the output cut into a :class:`Result` with ArviZ's health checks:
``chain_sampler.py``), and the phased warmup of ``metric="flow"`` and ``"auto"``
(``flow_metric.py``) with the report it assembles from its phases (``phase_result.py``), and
``"auto"``'s weighing of a target's other form, a non-centred hierarchy (``reparametrized.py``).

Names that recur across the layers: ``mcmc/chains.py`` is the compiled HMC/NUTS chain (a
kernel); ``sampling/chain_sampler.py`` runs any such kernel per chain (Python);
``methods/hmc.py`` is the method a user calls.
"""
