"""PyMC models as targets (``Target.from_pymc``, the ``pymc`` extra) and the bundled posteriors.

PyMC is installed by the README's test command (the ``test`` extra), so these run in CI.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import workbench as wb
from workbench.errors import TargetError
from workbench.pymc_model import parameter_names

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def _eight_schools():
    with pm.Model(coords={"school": list("ABCDEFGH")}) as model:
        y = pm.Data("y", Y)
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        eta = pm.Normal("eta", 0, 1, dims="school")
        theta = pm.Deterministic("theta", mu + tau * eta, dims="school")
        pm.Normal("obs", theta, SIGMA, observed=y)
    return model


def _matrix_model():
    """A matrix-valued and a bounded vector variable: the joined vector's order matters."""
    with pm.Model() as model:
        w = pm.Normal("w", 0, 1, shape=(2, 3))
        s = pm.HalfNormal("s", 1, shape=2)
        u = pm.Uniform("u", -1, 2)
        pm.Normal("obs", w.sum(axis=1) * u, s, observed=np.array([0.3, -0.4]))
    return model


def _as_point(model, theta):
    """The joined vector as PyMC's dict of value variables."""
    point, i = {}, 0
    for v in model.value_vars:
        shape = model.initial_point()[v.name].shape
        n = int(np.prod(shape))
        point[v.name] = theta[i:i + n].reshape(shape)
        i += n
    return point


def _vector_prior():
    """One vector variable, nothing observed: PyTensor fuses its log density's sum into an
    elemwise op that returns a new array, which must be compiled with Numba's runtime."""
    with pm.Model() as model:
        pm.Normal("mu", 0, 1, shape=8)
    return model


def _ar2():
    """An AR(2) series written as a user would: observed NumPy slices, scalar parameters."""
    y = np.cumsum(np.random.default_rng(0).normal(size=60)) * 0.1
    with pm.Model() as model:
        c = pm.Normal("c", 0.0, 2.0)
        phi = pm.Normal("phi", 0.0, 0.5, shape=2)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("obs", c + phi[0] * y[1:-1] + phi[1] * y[:-2], sigma, observed=y[2:])
    return model


@pytest.mark.parametrize("build", [_eight_schools, _matrix_model, _vector_prior, _ar2],
                         ids=["eight_schools", "matrix", "vector_prior", "ar2"])
def test_from_pymc_equals_pymcs_own_logp_and_gradient(build):
    model = build()
    target = wb.Target.from_pymc(model)
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    rng = np.random.default_rng(0)
    for _ in range(5):
        theta = target.initial_point + rng.standard_normal(target.dim)
        lp, g = target.logp_and_grad(theta)
        point = _as_point(model, theta)
        assert lp == pytest.approx(float(logp(point)), rel=1e-12, abs=1e-10)
        np.testing.assert_allclose(g, dlogp(point), rtol=1e-10, atol=1e-10)
    assert target.build_info["compile_seconds"] > 0
    assert target.build_info["gradient_check"]["checked"]


def test_names_initial_point_and_constrained_draws():
    model = _eight_schools()
    target = wb.Target.from_pymc(model, name="schools")
    assert target.name == "schools" and target.dim == 10
    assert target.param_names[:3] == ("mu", "tau_log__", "eta[A]")
    np.testing.assert_allclose(target.initial_point[1], np.log(5.0))  # PyMC's initial point
    draws = np.random.default_rng(1).standard_normal((3, 4, 10))
    c = target.constrain(draws)
    assert set(c) == {"mu", "tau", "eta", "theta"}
    assert c["eta"].shape == (3, 4, 8) and c["tau"].shape == (3, 4)
    np.testing.assert_allclose(c["tau"], np.exp(draws[..., 1]))
    np.testing.assert_allclose(c["theta"], draws[..., :1] + np.exp(draws[..., 1:2]) * draws[..., 2:])
    with pytest.raises(TargetError, match="shape"):
        target.constrain(np.zeros((5, 9)))


def test_matrix_variables_are_named_in_c_order():
    target = wb.Target.from_pymc(_matrix_model())
    assert target.param_names == ("w[0,0]", "w[0,1]", "w[0,2]", "w[1,0]", "w[1,1]", "w[1,2]",
                                  "s_log__[0]", "s_log__[1]", "u_interval__")
    c = target.constrain(np.zeros(9))
    assert c["w"].shape == (2, 3) and c["u"] == pytest.approx(0.5)  # the middle of (-1, 2)


def test_parameter_names_use_coordinates_only_when_they_fit():
    class V:
        def __init__(self, name):
            self.name = name

    names = parameter_names([V("a"), V("b")], {"a": (2,), "b": (2,)}, {"a": [["x", "y"]], "b": [["only"]]})
    assert names == ("a[x]", "a[y]", "b[0]", "b[1]")


def test_to_arviz_shows_the_models_own_variables():
    model = _eight_schools()
    target = wb.Target.from_pymc(model)
    res = wb.methods.NUTS(chains=2, warmup=200, draws=200).run(target, seed=3)
    tree = res.to_arviz(target)
    post = tree["posterior"]
    assert set(post.data_vars) == {"mu", "tau", "eta", "theta"}
    assert list(post["theta"].coords["school"].values) == list("ABCDEFGH")
    assert float(post["tau"].min()) > 0
    np.testing.assert_allclose(tree["unconstrained_posterior"]["theta_unconstrained"].values, res.draws)
    assert "posterior" in res.to_arviz().children  # without the target: theta as before


def test_a_model_is_compiled_once_unless_its_data_change():
    model = _eight_schools()
    first = wb.Target.from_pymc(model)
    assert wb.Target.from_pymc(model) is first  # the same graph and data: no second compile
    renamed = wb.Target.from_pymc(model, name="schools")
    assert renamed.name == "schools" and renamed.logp_grad is first.logp_grad
    with model:
        pm.set_data({"y": np.arange(8.0)})
    changed = wb.Target.from_pymc(model)
    assert changed is not first
    theta = first.initial_point + 0.1
    assert changed.logp(theta) != pytest.approx(first.logp(theta))  # the new data reach the density
    np.testing.assert_allclose(first.data[1], Y)  # and the first target keeps its own


def test_discrete_free_variables_are_refused():
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        pm.Normal("obs", k, 1.0, observed=1.0)
    with pytest.raises(TargetError, match=r"discrete free variables \['k'\].*continuous"):
        wb.Target.from_pymc(model)


def test_bad_models_are_refused_clearly():
    with pytest.raises(TargetError, match="needs a pymc.Model, got str"):
        wb.Target.from_pymc("model.py")
    with pm.Model() as empty:
        pass
    with pytest.raises(TargetError, match="no free variables"):
        wb.Target.from_pymc(empty)


def test_the_examples_pymc_file_is_the_numba_examples_model():
    from pathlib import Path

    from workbench.targets.specs import load_source

    examples = Path(__file__).resolve().parents[2] / "examples"
    by_hand = load_source(f"{examples / 'user_target.py'}:logp_grad")
    from_pymc = load_source(f"{examples / 'pymc_model.py'}:model")
    assert from_pymc.name == "pymc_model.model" and from_pymc.param_names == ("a", "b")
    for theta in ([0.3, 0.8], [-1.0, 2.0]):
        np.testing.assert_allclose(by_hand.logp_and_grad(theta)[1], from_pymc.logp_and_grad(theta)[1], rtol=1e-10)


def _covariance_model(n=8):
    """A latent field with an MvNormal prior whose covariance depends on two constrained
    parameters: far out in the unconstrained space the covariance stops being positive
    definite and PyMC's parameter check fails."""
    x = np.linspace(0.0, 1.0, n)
    sq = (x[:, None] - x[None, :]) ** 2
    with pm.Model() as model:
        ls = pm.Gamma("ls", 2.0, 20.0)
        amp = pm.HalfNormal("amp", 1.0)
        cov = amp**2 * pm.math.exp(-0.5 * sq / ls**2) + 1e-6 * np.eye(n)
        f = pm.MvNormal("f", mu=np.zeros(n), cov=cov)
        pm.Poisson("y", pm.math.exp(f), observed=np.arange(n) % 3)
    return model


def _exploding_scale_model():
    """A scale exp(100 ls): ls = -10 underflows it to 0, and PyMC's check ``sigma > 0`` fails."""
    with pm.Model() as model:
        ls = pm.Normal("ls", 0.0, 1.0)
        pm.Normal("y", 0.0, pm.math.exp(100.0 * ls), observed=np.array([0.1, -0.3]))
    return model


@pytest.mark.parametrize("build", [_covariance_model, _exploding_scale_model], ids=["covariance", "scale"])
def test_failed_parameter_checks_are_minus_infinity_as_in_pymc(build):
    """Compiled through PyMC's own path, a failed parameter check is -inf (PyMC's samplers
    see the same), never an exception; everywhere else the value is PyMC's own."""
    model = build()
    target = wb.Target.from_pymc(model)
    logp = model.compile_logp()
    rng = np.random.default_rng(1)
    points = [rng.uniform(-r, r, target.dim) for r in (1.0, 5.0, 20.0, 50.0) for _ in range(5)]
    points += [np.full(target.dim, -50.0), np.full(target.dim, 50.0), np.full(target.dim, -10.0)]
    n_inf = 0
    for theta in points:
        lp, _ = target.logp_and_grad(theta)  # must not raise
        expected = float(logp(_as_point(model, theta)))
        if np.isneginf(expected):
            assert np.isneginf(lp) or np.isnan(lp)
            n_inf += 1
        else:
            assert lp == pytest.approx(expected, rel=1e-9, abs=1e-8)
    assert n_inf > 0  # the points do reach where the checks fail


def test_nuts_samples_through_failed_parameter_checks():
    """NUTS from starts far out (where the checks fail on the way) runs to the end: a -inf
    density is a rejected proposal, not an exception."""
    target = wb.Target.from_pymc(_exploding_scale_model())
    res = wb.methods.NUTS(chains=2, warmup=200, draws=200, init=np.array([[-0.2], [0.3]])).run(target, seed=3)
    assert res.draws.shape == (2, 200, 1)
    assert np.all(np.isfinite(res.draws))


def test_a_density_that_cannot_be_finite_is_refused_naming_the_term():
    with pm.Model() as model:
        pm.Normal("a")
        pm.Potential("never", pm.math.constant(-np.inf))
    with pytest.raises(TargetError, match=r"'never' \(-inf\)"):
        wb.Target.from_pymc(model)


@pytest.mark.filterwarnings("ignore:Numba will use object mode")
def test_an_op_without_a_numba_implementation_is_refused_naming_it():
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class DoubleInPython(Op):
        def make_node(self, x):
            x = pt.as_tensor_variable(x)
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = np.asarray(inputs[0] * 2.0)

        def pullback(self, inputs, outputs, output_grads):
            return [2.0 * output_grads[0]]

    with pm.Model() as model:
        a = pm.Normal("a", shape=2)
        pm.Potential("p", -DoubleInPython()(a).sum() ** 2)
    with pytest.raises(TargetError, match="no implementation of the Op.*DoubleInPython"):
        wb.Target.from_pymc(model)


def test_a_fresh_pytensor_cache_compiles_models_whose_fused_sums_allocate(tmp_path):
    """In a process whose PyTensor cache is empty (CI, a user's first run), a model whose log
    density PyTensor fuses into an allocating reduction (a vector prior, an AR(2) likelihood)
    compiles: the adapter is built with Numba's runtime at once, because a first attempt
    without it left a failed typing that the retry met. (In a warm cache the compiled op is
    loaded and the bug hides, hence the subprocess.)"""
    import os
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import numpy as np, pymc as pm, workbench as wb
        import tests.unit.test_pymc_model as T
        for build in (T._vector_prior, T._ar2):
            model = build()
            target = wb.Target.from_pymc(model)
            lp, g = target.logp_and_grad(target.initial_point)
            point = T._as_point(model, target.initial_point)
            assert abs(lp - float(model.compile_logp()(point))) < 1e-8, build.__name__
        print("compiled")
    """)
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path}"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=root,
                          timeout=600)
    assert proc.returncode == 0 and "compiled" in proc.stdout, proc.stderr[-2000:]


def test_observed_values_as_data_give_the_same_density_and_a_generative_form():
    """With observed_as_data the observed values are inputs of the compiled density (a new data
    set is a new data tuple, never a new compile), the density is the model's, PyMC's forward
    sampler simulates (parameters on the unconstrained space), and the log-likelihood is the
    data's part of the density."""
    pm = pytest.importorskip("pymc")
    from workbench.targets.specs import simulated_target

    rng = np.random.default_rng(0)
    x = np.linspace(-1, 1, 15)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        a = pm.Normal("a", 0.0, 1.0)
        scale = pm.HalfNormal("scale", 1.0)
        pm.Poisson("counts", pm.math.exp(a + scale * xd), observed=rng.poisson(2.0, 15))
    plain = wb.Target.from_pymc(model)
    t = wb.Target.from_pymc(model, observed_as_data=True)
    point = t.initial_point + 0.2
    assert t.logp(point) == pytest.approx(plain.logp(point), rel=1e-10)
    assert len(t.data) == len(plain.data) + 1 and t.generative is not None
    one, two = simulated_target(t, 0, 1), simulated_target(t, 0, 2)
    assert one.kernel_logp_grad is two.kernel_logp_grad  # one compiled adapter for every simulation
    theta = one.truth.extras["simulated"]
    assert theta.shape == (2,) and np.isfinite(one.logp(theta))
    ll = t.generative.log_likelihood
    change = one.logp(theta) - two.logp(theta)
    assert change == pytest.approx(float(ll(theta[None], one.data)[0] - ll(theta[None], two.data)[0]), rel=1e-9)
    variables = t.generative.variables(theta[None])
    assert variables["scale"][0] == pytest.approx(np.exp(theta[1]))
