"""Sequential Monte Carlo with adaptive tempering: the ladder (``tempering.py``), the
reference distribution (``reference.py``) and the MCMC moves (``mutation.py``). The method
itself is ``workbench.methods.SMC``."""
