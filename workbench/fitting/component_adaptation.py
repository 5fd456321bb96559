"""NN4Post's start from the modes the search found, and the adaptation that moves dead or
duplicate components to modes q does not cover (between windows of the fit)."""

from __future__ import annotations

import math

import numpy as np

from .. import modes as M
from ..approximations import GaussianMixture
from ..target import Target
from .importance_weights import compute_log_ratios

ADAPT_WIDEN = 3.0
REMOVED_WEIGHT = 1e-12


def softplus_inv(s):
    s = np.asarray(s, dtype=float)
    return s + np.log(-np.expm1(-s))


def components_from_modes(search: M.ModeSearch, k: int, rng,
                          spare_weight: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, means, sds) of k components placed on the modes of a search.

    The best k modes by Laplace evidence get a component each, at the mode, with its mean-field
    sds; weights are the modes' shares of the evidence. With fewer modes than components, each
    spare component starts one local sd from the heaviest mode in a random direction, with the
    negligible weight ``spare_weight``: the component adaptation then moves it to a mode the
    search missed, or removes it, unless the fit gives it weight (a non-Gaussian peak).

    Why not share the mode's weight among its components: components sharing a peak each carry
    their own Monte Carlo noise, and together they fit the peak worse than one component does,
    by more the larger d is. The ELBO then gives that peak less than its mass: measured on the
    nn4post paper's 3-peak benchmark at N_d = 10^4 (main weight 0.70), the main peak ended at
    0.67 with its weight shared three ways and at 0.698 with the spares negligible.
    """
    modes = search.modes[:k]
    log_z = np.array([m.log_z for m in modes])
    w = np.exp(log_z - np.logaddexp.reduce(log_z))
    mu = [m.x for m in modes]
    sd = [m.sd for m in modes]
    weights = list(w)
    for _ in range(k - len(modes)):
        z = rng.standard_normal(modes[0].x.size)
        mu.append(modes[0].x + modes[0].sd * z / np.linalg.norm(z))
        sd.append(modes[0].sd)
        weights.append(spare_weight)
    a = np.log(np.maximum(np.array(weights), 1e-6))  # a mode of negligible evidence still gets a finite logit
    return a - a.mean(), np.array(mu), np.array(sd)


class ComponentAdapter:
    """Moves dead or duplicate components to modes q does not cover yet, between windows of the fit.

    Variational boosting (Miller, Foti and Adams 2017) adds components where the residual
    log p - log q is large; GMMVI (Arenz et al. 2023) deletes components of negligible weight
    and adds new ones at the draw where q is worst. Here the number of components is fixed:
    a component whose weight stayed below ``c_accuracy`` for two windows is the one that moves.
    Its new place is the optimum of an L-BFGS ascent from the candidate (a draw of q with its
    scales widened threefold) with the largest log p - log q; if that optimum is a mode no live
    component covers, the component moves there with the mode's Laplace scales and a weight from its Laplace evidence against the
    current ELBO (the mass q already holds), and its optimiser moments restart at zero;
    otherwise it is removed (GMMVI's deletion): its weight goes to the component it duplicates
    and it stays frozen at a negligible weight.
    """

    def __init__(self, method, target: Target, rng):  # method: the NN4Post fit it adapts
        self.method, self.target, self.rng = method, target, rng
        k = method.n_components
        self.below = np.zeros(k, dtype=int)
        self.tries = np.zeros(k, dtype=int)
        self.moves: list[dict] = []

    def _weights(self, a, r):
        z = r * (a - (a.mean() if self.method.gauge == "fix_c" else 0.0))
        return np.exp(z - np.logaddexp.reduce(z))

    def step(self, params, lr_scale, state, r, t, elbo, budget_left) -> int:
        """Adapt after step t; returns the gradient evaluations spent."""
        m, target = self.method, self.target
        self.t = t
        k, d = m.n_components, target.dim
        a = params[:k]
        mu = params[k : k + k * d].reshape(k, d)
        zeta = params[k + k * d :].reshape(k, d)
        c = self._weights(a, r)
        sigma = np.logaddexp(0.0, zeta)
        active = lr_scale[:k] > 0  # removed components are frozen (step scale 0)
        free = c < m.c_accuracy
        for i in range(k):
            for l in range(k):
                if active[l] and l != i and c[l] > c[i] and np.sum(((mu[i] - mu[l]) / sigma[l]) ** 2) < 4.0:
                    free[i] = True
        self.below = np.where(free, self.below + 1, 0)
        due = [i for i in range(k) if self.below[i] >= 2 and self.tries[i] < m.adapt_tries and active[i]]
        if not due:
            return 0
        cost = m.adapt_draws + M.min_grad_evals(d)
        if budget_left is not None and budget_left < cost:
            return 0
        q = GaussianMixture(c, mu, sigma)
        # candidates from q widened threefold, ranked by log p - log q under q itself: q's own
        # draws see only its tails, the wider ones also the mass just beyond them
        x = np.ascontiguousarray(GaussianMixture(c, mu, ADAPT_WIDEN * sigma).sample(m.adapt_draws, self.rng))
        log_ratio = compute_log_ratios(target, q, x)
        spent = m.adapt_draws
        live = active & ~free
        n_par = params.size
        for i in due:
            self.tries[i] += 1
            self.below[i] = 0
            j = int(np.argmax(log_ratio))
            if not math.isfinite(log_ratio[j]):
                break
            log_ratio[j] = -math.inf  # the next component starts from the next-worst draw
            # the ascent leaves room for the curvature at its optimum, which is then held to the rest
            reserve = M.curvature_grad_evals(d)
            if budget_left is not None and budget_left - spent < reserve + 2:
                break
            limit = M.LBFGS_MAX_CALLS_PER_DIM * (d + 20) if budget_left is None else budget_left - spent - reserve
            x_opt, lp, calls = M._ascend(target, x[j], limit)
            spent += calls
            covered = not math.isfinite(lp) or any(
                np.sum(((x_opt - mu[l]) / sigma[l]) ** 2) < 4.0 * d for l in range(k) if live[l] and l != i
            )
            sd = None
            if not covered:
                room = math.inf if budget_left is None else budget_left - spent
                sd, log_z, calls = M.laplace_summary(target, x_opt, lp, room)
                spent += calls
            if sd is None:
                self._remove(i, a, c, r, mu, sigma, lr_scale, state, n_par)
                continue
            # weight: the new mode's mass against the mass q holds already (about exp(ELBO))
            c_new = float(np.clip(1.0 / (1.0 + math.exp(min(elbo - log_z, 700.0))), 0.1 / k, 0.5))
            others = np.delete(r * a, i)
            a[i] = (math.log(c_new / (1.0 - c_new)) + float(np.logaddexp.reduce(others))) / r
            mu[i] = x_opt
            zeta[i] = softplus_inv(sd)  # with scale_steps, the kernel steps its mean in these sds
            for block in (np.array([i]), np.arange(k + i * d, k + (i + 1) * d),
                          np.arange(k + k * d + i * d, k + k * d + (i + 1) * d)):
                state[block] = 0.0
                state[n_par + block] = 0.0
            state[2 * n_par + 2] = 0  # the stopping rule's count of stale windows restarts
            live[i] = True
            self.moves.append({"step": t, "component": i, "kind": "moved", "weight": c_new,
                               "to": x_opt.tolist() if d <= 20 else None, "log_z": float(log_z)})
        return spent

    def _remove(self, i, a, c, r, mu, sigma, lr_scale, state, n_par) -> None:
        """Remove component i: its weight goes to the heaviest live component it duplicates (if
        any); its parameters are frozen (step scale 0) at a weight of 1e-12. Sharing a peak is a
        flat direction of the loss: a duplicate left free, or frozen at a weight the other a's can
        drift past, shares the peak again."""
        k = len(a)
        c = self._weights(a, r)  # as they are now: an earlier removal in this window changed them
        twins = [l for l in range(k) if l != i and lr_scale[l] > 0 and c[l] > c[i]
                 and np.sum(((mu[i] - mu[l]) / sigma[l]) ** 2) < 4.0]
        c_new = c.copy()
        if twins:
            heir = max(twins, key=lambda l: c[l])
            c_new[heir] += c[i]
        c_new[i] = REMOVED_WEIGHT
        c_new /= c_new.sum()
        z = np.log(c_new)
        a[:] = (z - z.mean()) / r
        d = mu.shape[1]
        lr_scale[i] = 0.0
        lr_scale[k + i * d : k + (i + 1) * d] = 0.0
        lr_scale[k + k * d + i * d : k + k * d + (i + 1) * d] = 0.0
        state[:k] = 0.0
        state[n_par : n_par + k] = 0.0
        self.moves.append({"step": self.t, "component": i, "kind": "removed", "weight": float(c[i]),
                           "merged_into": int(heir) if twins else None})
