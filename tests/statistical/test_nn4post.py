"""nn4post mixture VI: the hand-derived gradient, known optima, the paper's fixes, mini-batches."""

import math

import numpy as np
import pytest
from scipy import integrate

import workbench as wb
from tests import user_functions as uf
from workbench.approximations import GaussianMixture


def test_mean_field_converges_to_the_known_optimum_on_a_correlated_gaussian():
    """KL(q||p) for a Gaussian p: means exact, variances 1 / (Sigma^-1)_jj."""
    t = wb.targets.gaussian(3, scales=[1.0, 2.0, 0.5], correlation=0.6)
    res = wb.methods.MeanFieldVI(steps=6000, samples=20, learning_rate=0.02, lr_final=0.01, converge_tol=0).run(t, seed=0)
    optimum = 1.0 / np.diag(np.linalg.inv(t.truth.cov))
    q = res.approximation
    assert np.all(np.abs(q.means[0] - t.truth.mean) < 0.05 * np.sqrt(optimum))
    np.testing.assert_allclose(q.scales[0] ** 2, optimum, rtol=0.05)
    # N_c x samples per step, after the mode search's own gradients, then the k-hat check's and the
    # search for peaks q missed (methods/peaks.py)
    assert res.cost.grad_evals == (6000 * 20 + res.info["mode_search"]["grad_evals"] + res.info["khat_grad_evals"]
                                   + res.info["peaks_grad_evals"])


def _by_peak(q, truth):
    """Each peak's weight, mean and sd as q represents it: the components nearest a peak are
    pooled (two components may share one peak), and the pooled mean and sd are compared
    with the peak's in units of its sd. Returns (weights, max mean error / sd, max |sd ratio - 1|)."""
    mu_t, s_t = truth.extras["component_means"], truth.extras["component_scales"]
    nearest = np.argmin(((q.means[:, None, :] - mu_t[None]) ** 2).sum(-1), axis=1)
    weights = np.zeros(len(mu_t))
    mean_err = scale_err = 0.0
    for k in range(len(mu_t)):
        w = q.weights[nearest == k]
        weights[k] = w.sum()
        if weights[k] < 0.02:
            continue
        w = w / w.sum()
        m, s = q.means[nearest == k], q.scales[nearest == k]
        pooled_mean = w @ m
        pooled_sd = np.sqrt(w @ (s**2 + m**2) - pooled_mean**2)
        mean_err = max(mean_err, np.max(np.abs(pooled_mean - mu_t[k]) / s_t[k]))
        scale_err = max(scale_err, np.max(np.abs(pooled_sd / s_t[k] - 1)))
    return weights, mean_err, scale_err


def test_mixture_recovers_separated_peaks_and_one_component_lands_on_one():
    m = wb.targets.gaussian_mixture(2, weights=[0.2, 0.3, 0.5], means=[-4.0, 0.0, 4.0], scales=[0.8, 1.0, 1.2])
    res = wb.methods.NN4Post(
        n_components=5, steps=4000, init="box", init_range=6 * math.sqrt(2), lr_final=0.02, learning_rate=0.1,
        frozen_fix="clip", converge_tol=0,
    ).run(m, seed=1)
    weights, mean_err, scale_err = _by_peak(res.approximation, m.truth)
    np.testing.assert_allclose(weights, [0.2, 0.3, 0.5], atol=0.05)
    assert mean_err < 0.1 and scale_err < 0.1
    one = wb.methods.MeanFieldVI(steps=3000, init="box", init_range=6.0, converge_tol=0).run(m, seed=0)
    dist = np.linalg.norm(one.approximation.means[0] - m.truth.extras["component_means"], axis=1)
    assert dist.min() < 0.3 and np.sort(dist)[1] > 3  # on one peak, far from the others


@pytest.mark.slow
def test_mixture_recovers_three_peaks_in_ten_dimensions_with_restarts():
    """In 10-d a single random start often misses a peak (sec. 7.1.1); restarts ranked by the
    ELBO find all three, and -ELBO = KL(q || p) (the target is normalised) comes out near 0."""
    m = wb.targets.gaussian_mixture(10, weights=[0.2, 0.3, 0.5], means=[-2.0, 0.0, 2.0], scales=[0.8, 1.0, 1.2])
    res = wb.methods.NN4Post(
        n_components=5, restarts=6, steps=4000, init="box", adapt_components=False, learning_rate=0.1, lr_final=0.02,
        frozen_fix="clip", converge_tol=0
    ).run(m, seed=0)
    weights, mean_err, scale_err = _by_peak(res.approximation, m.truth)
    np.testing.assert_allclose(weights, [0.2, 0.3, 0.5], atol=0.05)
    assert mean_err < 0.1 and scale_err < 0.1
    assert -res.log_z < 0.02
    # the kept restart is the best, and a restart that missed the lightest peak lost about -log(0.8)
    elbos = res.info["restart_elbos"]
    assert res.log_z == pytest.approx(max(elbos)) and res.info["best_restart"] == int(np.argmax(elbos))
    assert any(abs(e - math.log(0.8)) < 0.02 for e in elbos)
    assert res.cost.grad_evals == 6 * 4000 * 5 * 10 + res.info["khat_grad_evals"] + res.info["peaks_grad_evals"]


def test_clip_a_stops_the_fading_a_but_not_its_weight_problem_1():
    """A component started far from the only peak fades. clip_a zeroes dL/da_i once a_i is
    below a_min = ln(C_ACCURACY) + logsumexp(a), so a_i stops falling; but the other a_j keep
    rising, which raises a_min and lowers c_i anyway: the paper's Problem 1 (sec. 3.2.3)."""
    t = wb.targets.gaussian(2)
    start = GaussianMixture([0.5, 0.5], [[0.0, 0.0], [30.0, 30.0]], np.ones((2, 2)))
    common = dict(n_components=2, steps=2000, init_from=start, converge_tol=0, optimizer="gd", learning_rate=0.01,
                  adapt_components=False)
    plain = wb.methods.NN4Post(frozen_fix="none", **common).run(t, seed=0)
    clipped = wb.methods.NN4Post(frozen_fix="clip_a", c_accuracy=1e-3, **common).run(t, seed=0)
    a_plain, a_clip = plain.info["params"][:2], clipped.info["params"][:2]
    assert a_plain.sum() == pytest.approx(0.0, abs=1e-9)  # plain GD on a softmax keeps sum(a)
    assert a_clip[1] > a_plain[1] + 1.0  # the fading a_1 was stopped ...
    assert a_clip[0] > a_plain[0] + 0.5  # ... while a_0 kept rising (Problem 1)
    assert clipped.stats["min_c"][-1] < 1e-3  # so c_1 still fell below C_ACCURACY


def test_mean_grad_gauge_recovers_the_peaks_like_fix_c():
    m = wb.targets.gaussian_mixture(2, weights=[0.3, 0.7], means=[-3.0, 3.0], scales=1.0)
    common = dict(n_components=2, steps=3000, init="box", init_range=5.0, converge_tol=0, lr_final=0.05)
    for gauge in ("mean_grad", "fix_c", "none"):
        res = wb.methods.NN4Post(gauge=gauge, **common).run(m, seed=0)
        weights, _, _ = _by_peak(res.approximation, m.truth)
        np.testing.assert_allclose(weights, [0.3, 0.7], atol=0.03, err_msg=gauge)


def test_dynamic_r_schedule_is_recorded_and_holds_the_weights_while_small():
    m = wb.targets.gaussian_mixture(2, weights=[0.3, 0.7], means=[-3.0, 3.0], scales=1.0)
    res = wb.methods.NN4Post(
        n_components=2, steps=1000, rescale="dynamic", r_start=0.01, r_warm=0.3, r_ramp=0.2, init="box", init_range=5.0,
        converge_tol=0,
    ).run(m, seed=0)
    r = res.stats["r"]
    np.testing.assert_allclose(r[:300], 0.01)
    np.testing.assert_allclose(r[300:500], 0.01 + 0.99 * np.arange(200) / 200)
    np.testing.assert_allclose(r[500:], 1.0)
    # while r is small, the weights stay near their start (1/2 each), under Adam too
    assert np.all(np.abs(res.stats["min_c"][:300] - 0.5) < 0.02)
    weights, _, _ = _by_peak(res.approximation, m.truth)
    np.testing.assert_allclose(weights, [0.3, 0.7], atol=0.05)


def test_init_from_a_laplace_fit_and_warm_start_from_a_mixture():
    t = wb.targets.gaussian(3, scales=[1.0, 2.0, 0.5])
    lap = wb.methods.Laplace().run(t, seed=0)
    tiny = dict(steps=1, learning_rate=1e-9, converge_tol=0)
    one = wb.methods.MeanFieldVI(init_from=lap, **tiny).run(t, seed=0).approximation
    np.testing.assert_allclose(one.means[0], lap.approximation.mean, atol=1e-6)
    np.testing.assert_allclose(one.scales[0], np.sqrt(np.diag(lap.approximation.cov)), rtol=1e-6)
    # several components: centred on the Laplace mean, spread by its sds
    three = wb.methods.NN4Post(n_components=3, init_from=lap, **tiny).run(t, seed=0).approximation
    z = (three.means - lap.approximation.mean) / np.sqrt(np.diag(lap.approximation.cov))
    assert np.all(np.abs(z) < 4) and np.std(z) > 0.3
    # a mixture of the same size is a warm start: weights, means and scales carried over
    start = GaussianMixture([0.2, 0.3, 0.5], np.arange(9.0).reshape(3, 3), np.full((3, 3), 0.7))
    warm = wb.methods.NN4Post(n_components=3, init_from=start, **tiny).run(t, seed=0).approximation
    np.testing.assert_allclose(warm.weights, start.weights, atol=1e-6)
    np.testing.assert_allclose(warm.means, start.means, atol=1e-6)
    np.testing.assert_allclose(warm.scales, start.scales, rtol=1e-6)
    # the same start as a JSON-able dict (how study specs give it)
    spec = {"weights": start.weights.tolist(), "means": start.means.tolist(), "scales": start.scales.tolist()}
    from_dict = wb.methods.NN4Post(n_components=3, init_from=spec, **tiny).run(t, seed=0).approximation
    np.testing.assert_allclose(from_dict.means, start.means, atol=1e-6)
    with pytest.raises(ValueError, match="init_from"):
        wb.methods.NN4Post(n_components=3, init_from=start, **tiny).run(wb.targets.gaussian(2), seed=0)


def test_early_stopping_when_the_elbo_stops_improving():
    t = wb.targets.gaussian(2)
    stopped = wb.methods.MeanFieldVI(steps=20_000, converge_window=100, converge_patience=3).run(t, seed=0)
    assert stopped.info["steps"] < 20_000 and stopped.info["steps"] % 100 == 0
    assert any("stopped improving" in m for m in stopped.messages)
    assert abs(stopped.log_z - t.truth.log_z) < 0.05  # stopped near the optimum, not early
    full = wb.methods.MeanFieldVI(steps=3000, converge_tol=0).run(t, seed=0)
    assert full.info["steps"] == 3000 and not any("stopped" in m or "not converged" in m for m in full.messages)


def test_frozen_out_fix_revives_a_component_started_at_weight_1e_20():
    m = wb.targets.gaussian_mixture(2, weights=[0.4, 0.6], means=[-4.0, 4.0], scales=1.0)
    common = dict(n_components=2, steps=3000, init_weights=[1.0, 1e-20], init="box", init_range=5.0, adapt_components=False,
                  converge_tol=0)
    frozen = wb.methods.NN4Post(frozen_fix="none", **common).run(m, seed=3)
    fixed = wb.methods.NN4Post(frozen_fix="clip", **common).run(m, seed=3)
    assert frozen.approximation.weights.min() < 1e-6
    assert np.sort(fixed.approximation.weights) == pytest.approx([0.4, 0.6], abs=0.05)


@pytest.mark.parametrize("factor, expected_ratio", [(True, 1.0), (False, math.sqrt(10))])
def test_mini_batches_need_the_n_d_over_n_m_factor(factor, expected_ratio):
    t = wb.targets.linear_regression(n_data=200, dim=3, noise_sd=1.0, prior_sd=10.0, seed=0)
    res = wb.methods.MeanFieldVI(
        steps=6000, batch_size=20, batch_factor=factor, learning_rate=0.01, lr_final=0.05, converge_tol=0
    ).run(t, seed=0)
    mean_field_sd = np.sqrt(1.0 / np.diag(np.linalg.inv(t.truth.cov)))
    np.testing.assert_allclose(res.approximation.scales[0] / mean_field_sd, expected_ratio, rtol=0.1)


def test_analytic_marginals_integrate_to_one_match_draws_and_subset():
    q = GaussianMixture([0.2, 0.8], [[-2.0, 1.0, 0.0], [3.0, -1.0, 2.0]], [[0.5, 1.0, 2.0], [1.5, 0.3, 1.0]])
    x = q.sample(200_000, 0)
    for k in range(3):
        assert integrate.quad(lambda v, k=k: q.marginal_pdf(k, v), -30, 30, limit=200)[0] == pytest.approx(1.0, abs=1e-8)
        hist, edges = np.histogram(x[:, k], bins=40, density=True)
        mid = 0.5 * (edges[1:] + edges[:-1])
        assert np.max(np.abs(hist - q.marginal_pdf(k, mid))) < 0.02
    sub = q.marginal([0, 2])
    np.testing.assert_allclose(sub.logpdf(x[:5, [0, 2]]), np.log([
        np.sum(q.weights * np.prod(np.exp(-0.5 * ((p - q.means[:, [0, 2]]) / q.scales[:, [0, 2]]) ** 2)
                                   / (np.sqrt(2 * np.pi) * q.scales[:, [0, 2]]), axis=1)) for p in x[:5, [0, 2]]
    ]))
    target = wb.targets.mixture_target(sub)  # the transfer argument: a marginal reused as a target
    assert wb.check_gradient(target).max_rel_error < 1e-6 and target.dim == 2


def test_nan_is_a_rejected_step_and_the_fit_stays_finite():
    """The fit is pushed against a wall where the density turns NaN: the steps whose draws
    cross it are rejected (the rate halved), the fit ends with finite parameters inside."""
    t = wb.Target.from_numba(uf.exploding, dim=1, name="exploding")
    res = wb.methods.MeanFieldVI(steps=5000, learning_rate=0.1, init="box", init_range=0.1,
                                 converge_tol=0).run(t, seed=0)
    assert res.info["rejected_steps"] > 0 and any("rejected" in m for m in res.messages)
    assert np.all(np.isfinite(res.approximation.means)) and res.approximation.means[0, 0] < 3.0




def _peak_weights(q, target):
    """The weight q puts on each peak: components pooled by their nearest peak."""
    centres = target.truth.extras["component_means"]
    nearest = np.argmin(((q.means[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    return np.array([q.weights[nearest == j].sum() for j in range(len(centres))])


@pytest.mark.parametrize("dim", [100, 1000])
def test_defaults_find_the_papers_three_peaks_with_their_weights(dim):
    """The nn4post benchmark (sec. 7.1.1): weights 0.05 / 0.25 / 0.70 at -3, 0, +3 times ones.
    From the defaults every peak gets its weight to 0.02 (benchmarks/vi_speed.py runs N_d = 10^4)."""
    t = wb.targets.gaussian_mixture(dim, weights=[0.05, 0.25, 0.70], means=[-3.0, 0.0, 3.0], scales=math.log(2))
    res = wb.methods.NN4Post(progress=False, steps=2000).run(t, seed=1)
    assert res.info["mode_search"]["modes"] == 3
    np.testing.assert_allclose(_peak_weights(res.approximation, t), [0.05, 0.25, 0.70], atol=0.02)
