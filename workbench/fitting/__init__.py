"""What the methods that fit an approximation share (Laplace, Pathfinder, the VI methods, and
importance sampling, whose weights they all check themselves by), above their kernels
(``workbench/vi/``) and below the methods (``workbench/methods/``): importance weights and
PSIS (``importance_weights.py``), the health of a fit (``health.py``), where a mixture fit
starts (``mixture_start.py``) and how its components adapt (``component_adaptation.py``), and
GMMVI's state (``gmmvi_state.py``).

Names that recur across the layers: ``vi/pathfinder.py`` is Pathfinder's path and curvature
(kernels); ``methods/pathfinder.py`` is the method a user calls.
"""
