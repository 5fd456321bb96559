"""Sequential Monte Carlo with adaptive tempering: the ladder (``tempering.py``), the
reference distribution (``reference.py``), the MCMC moves and how the particles set them up
(``mutation.py``), the budget of a run (``budget.py``) and a run's own health signals
(``health.py``). The method itself, which runs the ladder, is ``workbench.methods.SMC``
(``methods/smc.py``)."""
