"""What every method's run is made of, whatever the method: the :class:`Method` contract and
its ``run`` entry point, the checks of its settings, its clock, the threads its kernels run on
(with a progress bar and Ctrl-C), the memory it may take, the faults of the density it meets,
the phases of a run made of several, and the mode search that starts chains at distinct peaks.

The methods themselves are in ``workbench/methods/``; what only the MCMC samplers share is in
``workbench/sampling/``, what only the fitted approximations share in ``workbench/fitting/``.
"""
