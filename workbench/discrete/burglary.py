"""The burglary network of the survey (sec. 3.2 and 4.2), with its conditional tables.

B (burglary, P = 0.001) and E (earthquake, P = 0.002) cause A (alarm); John (J) and Mary (M)
call depending on A. The joint is P(B) P(E) P(A | B, E) P(J | A) P(M | A) (eq. 11).

**Exact**: ``posterior_burglary(j=True, m=True)`` enumerates the 2^5 joint states: 0.284172,
as the survey gives (0.284171835).

**Naive Bayes from the count table** (survey sec. 3.2, reported 0.4968177484): the survey
builds 10^8 events and counts calls per class. Its printed 'Nothing' row is inconsistent
with its own probabilities: it has 100,000,000 events (the other classes already take
290,000 of the 10^8, leaving 99,710,000), 997,100 alarms (0.001 x 99,710,000 = 99,710) and
49,805,145.5 calls from John without an alarm (0.05 x 99,610,290 = 4,980,514.5); both are
10x too large. ``survey_count_table(corrected=True)`` rebuilds the table from the
probabilities; it reproduces the survey's intermediate numbers (0.0005602976065 and
0.0005674753209) and its 0.4968177484 exactly, so that is the table the survey actually
used. The printed row taken literally gives P(J | not B) = 0.507 instead of 0.051 and a
posterior of 0.060. Either way naive Bayes is far from the exact 0.284: it treats J and M as
independent given B, while both depend on the alarm.

**Simulation**: rejection sampling (forward-sample the network, keep the samples that match
the evidence) and likelihood weighting (fix J and M, weight each sample by
P(j | A) P(m | A)); both return an estimate and its Monte Carlo standard error.
"""

from __future__ import annotations

import math

import numpy as np

P_B = 0.001
P_E = 0.002
# P(A = true | B, E), indexed [b, e]
P_A = np.array([[0.001, 0.29], [0.94, 0.95]])
# P(J = true | A), P(M = true | A), indexed [a]
P_J = np.array([0.05, 0.90])
P_M = np.array([0.01, 0.70])


def joint(b: int, e: int, a: int, j: int, m: int) -> float:
    """P(B=b, E=e, A=a, J=j, M=m) by the chain rule of the network (eq. 11)."""
    pb = P_B if b else 1 - P_B
    pe = P_E if e else 1 - P_E
    pa = P_A[b, e] if a else 1 - P_A[b, e]
    pj = P_J[a] if j else 1 - P_J[a]
    pm = P_M[a] if m else 1 - P_M[a]
    return pb * pe * pa * pj * pm


def posterior_burglary(j: bool = True, m: bool = True) -> float:
    """Exact P(B = true | J = j, M = m) by enumerating the hidden variables A and E."""
    weight = [sum(joint(b, e, a, int(j), int(m)) for e in (0, 1) for a in (0, 1)) for b in (0, 1)]
    return weight[1] / (weight[0] + weight[1])


def survey_count_table(corrected: bool = True) -> dict:
    """The survey's 10^8-event count table: per class (events, J calls, M calls).

    ``corrected=False`` is the table as printed; ``True`` rebuilds the 'Nothing' row from the
    conditional probabilities (see the module docstring).
    """
    classes = {  # events, alarmed, unalarmed, J|alarmed, J|unalarmed, M|alarmed, M|unalarmed
        "burglary": (90_000, 84_600, 5_400, 76_140, 270, 59_220, 54),
        "earthquake": (190_000, 55_100, 134_900, 49_590, 6_745, 38_570, 1_349),
        "burglary+earthquake": (10_000, 9_500, 500, 8_550, 25, 6_650, 5),
        "nothing": (100_000_000, 997_100, 99_610_290, 897_390, 49_805_145.5, 697_970, 996_102.9),
    }
    if corrected:
        n = 100_000_000 - 290_000  # the burglary, earthquake and both classes take 290,000
        alarmed, quiet = n * P_A[0, 0], n * (1 - P_A[0, 0])
        classes["nothing"] = (n, alarmed, quiet, P_J[1] * alarmed, P_J[0] * quiet, P_M[1] * alarmed, P_M[0] * quiet)
    return {k: {"events": v[0], "john": v[3] + v[4], "mary": v[5] + v[6]} for k, v in classes.items()}


def naive_bayes_burglary(table: dict, prior: float = P_B) -> dict:
    """Naive-Bayes P(B | J, M) from a count table (survey eq. 10): J and M independent given B.

    Returns the unnormalised scores and the posterior, as the survey reports them.
    """
    burglary = [table["burglary"], table["burglary+earthquake"]]
    other = [table["earthquake"], table["nothing"]]
    n_b = sum(c["events"] for c in burglary)
    n_o = sum(c["events"] for c in other)
    score_b = (sum(c["john"] for c in burglary) / n_b) * (sum(c["mary"] for c in burglary) / n_b) * prior
    score_o = (sum(c["john"] for c in other) / n_o) * (sum(c["mary"] for c in other) / n_o) * (1 - prior)
    return {"score_burglary": score_b, "score_no_burglary": score_o, "posterior": score_b / (score_b + score_o)}


def _forward_sample(n: int, rng: np.random.Generator):
    b = rng.random(n) < P_B
    e = rng.random(n) < P_E
    a = rng.random(n) < P_A[b.astype(int), e.astype(int)]
    j = rng.random(n) < P_J[a.astype(int)]
    m = rng.random(n) < P_M[a.astype(int)]
    return b, e, a, j, m


def rejection_sampling(n: int, seed: int = 0) -> dict:
    """P(B | j, m) by forward sampling n times and keeping the samples with J = M = true."""
    rng = np.random.default_rng(seed)
    b, _, _, j, m = _forward_sample(n, rng)
    keep = j & m
    k = int(keep.sum())
    p = float(b[keep].mean()) if k else math.nan
    return {"estimate": p, "se": math.sqrt(p * (1 - p) / k) if k else math.nan, "accepted": k}


def likelihood_weighting(n: int, seed: int = 0) -> dict:
    """P(B | j, m) by sampling B, E, A from the network and weighting by P(j | A) P(m | A)."""
    rng = np.random.default_rng(seed)
    b = rng.random(n) < P_B
    e = rng.random(n) < P_E
    a = rng.random(n) < P_A[b.astype(int), e.astype(int)]
    w = P_J[a.astype(int)] * P_M[a.astype(int)]
    p = float(np.sum(w * b) / np.sum(w))
    ess = float(np.sum(w) ** 2 / np.sum(w * w))
    # self-normalised IS: var ~ sum w_i^2 (b_i - p)^2 / (sum w)^2
    se = float(np.sqrt(np.sum(w * w * (b - p) ** 2)) / np.sum(w))
    return {"estimate": p, "se": se, "ess": ess}
