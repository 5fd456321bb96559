"""A user's PyMC model as `workbench compare` reads it (needs `pip install "workbench[pymc]"`).

    workbench compare examples/pymc_model.py:model --quick

The same Poisson regression as user_target.py, written in PyMC.
"""

import numpy as np
import pymc as pm

_rng = np.random.default_rng(1)
_x = np.linspace(-1.0, 1.0, 40)
_counts = _rng.poisson(np.exp(0.5 + 1.2 * _x))

with pm.Model() as model:
    x = pm.Data("x", _x)
    a = pm.Normal("a", 0.0, 1.0)
    b = pm.Normal("b", 0.0, 1.0)
    pm.Poisson("counts", pm.math.exp(a + b * x), observed=_counts)
