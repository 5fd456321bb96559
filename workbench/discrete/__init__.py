"""The survey's discrete examples, exact and by simulation (bayesian-inference-survey.md).

- ``burglary``: the burglary Bayesian network (sec. 3-4): exact P(B | J, M) by enumeration,
  the naive-Bayes calculation from the survey's count table, and rejection sampling and
  likelihood weighting (importance sampling on a discrete space) converging to the exact value.
- ``markov``: the 5-state Markov chain of sec. 5.1.2: its stationary distribution by linear
  algebra and by simulation.
"""

from . import burglary, markov

__all__ = ["burglary", "markov"]
