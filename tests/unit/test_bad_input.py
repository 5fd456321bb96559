"""A pass over every public entry point with bad input (wrong types, shapes, NaN, inf, zero and
negative values): each is refused with an error that names the argument and says what is
expected, never a raw NumPy, SciPy or Numba error from deep inside.

The sweeps cover every setting of every method from its annotation; the table covers target
constructors, ``Target``/``Target.from_numba``, ``run``, metrics, approximations and the CLI."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from tests.user_functions import iso_logp_grad
from workbench import cli
from workbench.errors import NonFiniteDensityError, TargetError
from workbench.methods import available, method_class

NAN, INF = math.nan, math.inf
G2 = None
NEEDS = {  # settings a method cannot be built without
    "IndependenceMH": {"proposal": wb.approximations.Gaussian(np.zeros(2), np.eye(2))},
    "RejectionSampling": {"proposal": wb.approximations.Gaussian(np.zeros(2), np.eye(2))},
}
# a value of the wrong type for each annotation
WRONG_TYPE = {"int": [1.5, "3", True, None, [1]], "float": ["0.5", None, [0.1], True],
              "bool": ["yes", 1, None], "str": [3, None, ["diag"]]}


def g2():
    global G2
    if G2 is None:
        G2 = wb.targets.gaussian(2)
    return G2


def _typed_settings():
    for name in available():
        cls = method_class(name)
        for f in dataclasses.fields(cls):
            kinds = [k.strip() for k in str(f.type).split("|")]
            main = [k for k in kinds if k in WRONG_TYPE]
            if len(main) == 1 and set(kinds) <= {main[0], "None"}:
                for bad in WRONG_TYPE[main[0]]:
                    if bad is None and "None" in kinds:
                        continue
                    yield pytest.param(cls, f.name, bad, id=f"{name}.{f.name}={bad!r}")


@pytest.mark.parametrize("cls, setting, bad", list(_typed_settings()))
def test_every_setting_of_every_method_refuses_a_value_of_the_wrong_type(cls, setting, bad):
    with pytest.raises(ValueError, match=rf"\b{setting}\b must be"):
        cls(**{**NEEDS.get(cls.__name__, {}), setting: bad})


# settings where a non-finite or negative number has a meaning
ALLOWED = {("HMC", "max_energy_error", INF), ("NUTS", "max_energy_error", INF), ("RejectionSampling", "log_m", -1.0),
           ("BatchAndMatch", "learning_rate", INF)}  # the score-matching limit


def _numeric_settings():
    for name in available():
        cls = method_class(name)
        for f in dataclasses.fields(cls):
            kinds = str(f.type)
            bads = [NAN, INF, -1.0] if "float" in kinds else [-1] if kinds.startswith("int") else []
            for bad in bads:
                if (name, f.name, bad) not in ALLOWED and not (name == "MeanFieldVI" and f.name == "n_components"):
                    yield pytest.param(cls, f.name, bad, id=f"{name}.{f.name}={bad!r}")


@pytest.mark.parametrize("cls, setting, bad", list(_numeric_settings()))
def test_every_numeric_setting_refuses_nan_inf_and_negative_values_by_name(cls, setting, bad):
    with pytest.raises(ValueError, match=rf"\b{setting}\b"):
        cls(**{**NEEDS.get(cls.__name__, {}), setting: bad})


@pytest.mark.parametrize("budget", ["10000", 1.5, -5, 0, NAN, [1000], True])
@pytest.mark.parametrize("method", ["NUTS", "RandomWalkMH", "MeanFieldVI", "NN4Post", "Laplace", "Exact", "SMC",
                                    "Pathfinder", "FullRankVI", "ImportanceSampling"])
def test_run_refuses_a_bad_grad_budget_by_name(method, budget):
    m = method_class(method)(**NEEDS.get(method, {}))
    with pytest.raises(ValueError, match=r"grad_budget for grad_evals\) must be a positive integer"):
        m.run(g2(), seed=0, grad_budget=budget)


@pytest.mark.parametrize("call, error, message", [
    # run's other arguments
    (lambda: wb.methods.NUTS().run(None), TargetError, "NUTS.run needs a workbench Target, got NoneType"),
    (lambda: wb.methods.NUTS().run(g2(), seed="a"), ValueError, "seed must be a non-negative integer"),
    (lambda: wb.methods.NUTS().run(g2(), seed=-1), ValueError, "seed must be a non-negative integer"),
    (lambda: wb.methods.NUTS(init=[0.0, 0.0, 0.0]).run(g2(), seed=0), ValueError, r"init must have shape \(2,\) or \(4, 2\)"),
    (lambda: wb.methods.NUTS(init=[NAN, 0.0]).run(g2(), seed=0), NonFiniteDensityError,
     "starting point of chain 0 .* is not finite"),
    (lambda: wb.methods.RandomWalkMH(init="abc").run(g2(), seed=0), ValueError, "init='abc' is not a starting point"),
    (lambda: wb.methods.NUTS(init_jitter=INF), ValueError, "init_jitter must be a finite number >= 0"),
    (lambda: wb.methods.NUTS(metric="full"), ValueError, "metric must be one of"),
    (lambda: wb.methods.ImportanceSampling(proposal=3), ValueError, "the proposal int lacks logpdf and sample"),
    (lambda: wb.methods.ImportanceSampling(proposal=wb.approximations.Gaussian(np.zeros(3), np.eye(3))).run(g2(), seed=0),
     ValueError, "the proposal draws points of dimension 3, the target has 2"),
    (lambda: wb.methods.ImportanceSampling(resample=1), ValueError,
     "resample must be None, 'multinomial' or 'systematic', got 1"),
    (lambda: wb.Budget(draws="a"), ValueError, r"Budget.draws .* must be a positive integer"),
    # built-in targets
    (lambda: wb.targets.gaussian("a"), TargetError, "dim must be an integer >= 1, got 'a'"),
    (lambda: wb.targets.gaussian(2.5), TargetError, "dim must be an integer >= 1, got 2.5"),
    (lambda: wb.targets.gaussian(3, correlation="x"), TargetError, "correlation must be a number"),
    (lambda: wb.targets.gaussian(3, correlation=NAN), TargetError, "correlation=nan is outside"),
    (lambda: wb.targets.gaussian(3, mean=[1, 2]), TargetError, r"mean has shape \(2,\), expected \(3,\)"),
    (lambda: wb.targets.gaussian(2, mean=["a", "b"]), TargetError, "mean must be 2 numbers"),
    (lambda: wb.targets.gaussian(3, scales=[1, -1, 1]), TargetError, "scales"),
    (lambda: wb.targets.gaussian_mixture(2, n_components=0), TargetError, "n_components must be an integer >= 1"),
    (lambda: wb.targets.gaussian_mixture(2, n_components=2, weights=[-1, 2]), TargetError, "weights must be positive"),
    (lambda: wb.targets.gaussian_mixture(2, n_components=2, means=np.zeros((3, 2))), TargetError, r"means has shape \(3, 2\)"),
    (lambda: wb.targets.banana(twist=NAN), TargetError, "twist must be a finite number"),
    (lambda: wb.targets.funnel(dim=0), TargetError, "dim must be an integer >= 1"),
    (lambda: wb.targets.logistic_regression("x"), TargetError, "unknown dataset 'x'"),
    (lambda: wb.targets.logistic_regression(n_data=10, dim=2, prior_sd=0.0), TargetError, "prior_sd must be positive"),
    (lambda: wb.targets.logistic_regression("custom", X=np.ones((5, 2)), y=np.ones(4)), TargetError,
     "X must be \\(n, p\\) with n = len\\(y\\)"),
    (lambda: wb.targets.logistic_regression("custom", X=np.ones((5, 2)), y=np.full(5, 3.0)), TargetError, r"y in \{0, 1\}"),
    (lambda: wb.targets.bnn(n_data=10, widths="a"), TargetError, "widths must be a list of positive integers"),
    (lambda: wb.targets.bnn(n_data=10, widths=[0]), TargetError, "widths must be positive integers"),
    (lambda: wb.targets.bnn(x=np.zeros(3), y=np.zeros(4), sigma=1.0), TargetError, "x has 3 rows but y has 4 values"),
    (lambda: wb.targets.eight_schools(centered="x"), TargetError, "centered must be True or False"),
    (lambda: wb.targets.rotated_gaussian(dim=2), TargetError, "variances must be a list of at most dim=2 numbers"),
    (lambda: wb.targets.posterior("nope"), TargetError, "unknown posterior 'nope'; bundled posteriors"),
    (lambda: wb.targets.posterior("eight_schools_centered", backend="x"), TargetError, "backend must be one of"),
    # user targets
    (lambda: wb.Target.from_numba(iso_logp_grad, dim="a", data=(np.ones(2),)), TargetError, "dim must be an integer, got 'a'"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=np.ones(2)), TargetError, "data must be a tuple of NumPy arrays"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=("ab",)), TargetError,
     "data\\[0\\] is not a numeric array \\(dtype <U2\\)"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=([[1], [1, 2]],)), TargetError,
     "data\\[0\\] is not a rectangular array"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=(np.ones(2),), initial_point=[0.0]), TargetError,
     r"initial_point has shape \(1,\), expected \(2,\)"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=(np.ones(2),), initial_point=["a", "b"]), TargetError,
     "initial_point must be 2 numbers"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=(np.ones(2),), initial_point=[NAN, 0.0]),
     NonFiniteDensityError, "initial point .* is not finite"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=(np.ones(2),), param_names=3), TargetError,
     "param_names must be a list of 2 names"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=(np.ones(2),), param_names=["a"]), TargetError,
     "1 param_names given for dim=2"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2, data=(np.ones(2),), name=3), TargetError,
     "name must be a non-empty string"),
    (lambda: wb.Target.from_numba(None, dim=2), TargetError, "logp_grad must be a Numba function, got NoneType"),
    (lambda: wb.Target.from_numba(iso_logp_grad, dim=2), TargetError, "logp_grad could not be compiled"),
    (lambda: wb.Target.from_logp(lambda t, d: 0.0, dim=2), TargetError, "logp must be a Numba function"),
    (lambda: wb.Target.from_pymc(3), TargetError, "from_pymc needs a pymc.Model, got int"),
    (lambda: wb.Target(name="x", dim=-1, logp_grad=iso_logp_grad, data=(np.ones(2),)), TargetError, "dim must be >= 1"),
    (lambda: wb.Target(name="x", dim=2, logp_grad=iso_logp_grad, data=(np.ones(2),), truth=3), TargetError,
     "truth must be a wb.Truth"),
    (lambda: wb.Target(name="x", dim=2, logp_grad=iso_logp_grad, data=(np.ones(2),), truth=wb.Truth(mean=np.zeros(3))),
     TargetError, r"truth.mean has shape \(3,\), expected \(2,\)"),
    (lambda: wb.check_gradient(None), TargetError, "check_gradient needs a workbench Target, got NoneType"),
    (lambda: wb.check_gradient(g2(), points=np.zeros((2, 3))), TargetError, r"points must have shape \(n, 2\)"),
    (lambda: wb.check_gradient(g2(), points="abc"), TargetError, r"points must be an array \(n, 2\)"),
    # metrics
    (lambda: wb.metrics.evaluate(None, g2()), TypeError, "evaluate needs a Result .* as result, got NoneType"),
    (lambda: wb.metrics.evaluate(_exact(), None), TypeError, "evaluate needs a workbench Target as target"),
    (lambda: wb.metrics.evaluate(_exact(), wb.targets.gaussian(3)), ValueError, "result has dim 2, target .* has dim 3"),
    (lambda: wb.metrics.evaluate(_exact(), g2(), reference=np.zeros(5)), ValueError, r"reference must be \(n, 2\)"),
    (lambda: wb.metrics.evaluate(_exact(), g2(), reference="abc"), ValueError, r"reference must be an array \(n, 2\)"),
    (lambda: wb.metrics.evaluate(_exact(), g2(), n_projections=0), ValueError, "n_projections must be an integer >= 1"),
    (lambda: wb.metrics.evaluate(_exact(), g2(), n_reference=-5), ValueError, "n_reference must be an integer >= 1"),
    (lambda: wb.reference(None), TypeError, "reference needs a workbench Target"),
    (lambda: wb.compare(3), TargetError, "compare needs a Target or a name"),
    (lambda: wb.compare(g2(), budgets=[-1]), ValueError, "budgets must be integers >= 100"),
    (lambda: wb.compare(g2(), seeds=0), ValueError, "seeds must be an integer >= 1"),
    # approximations
    (lambda: wb.approximations.Gaussian(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]])), ValueError,
     "cov is not positive definite \\(its smallest eigenvalue is -1\\)"),
    (lambda: wb.approximations.Gaussian(np.zeros(2), np.eye(3)), ValueError, r"cov has shape \(3, 3\), expected \(2, 2\)"),
    (lambda: wb.approximations.Gaussian(np.zeros((2, 2)), np.eye(2)), ValueError, r"mean must be a vector \(1-d\)"),
    (lambda: wb.approximations.Gaussian("ab", np.eye(2)), ValueError, "mean must be an array of numbers"),
    (lambda: wb.approximations.Gaussian(np.zeros(2), np.eye(2)).sample(-1), ValueError, "n must be an integer >= 0"),
    (lambda: wb.approximations.Gaussian(np.zeros(2), np.eye(2)).logpdf(np.zeros((4, 3))), ValueError,
     r"x must have shape \(n, 2\)"),
    (lambda: wb.approximations.StudentT(np.zeros(2), np.eye(2), df="5"), ValueError, "df must be > 0"),
    (lambda: wb.approximations.StudentT(np.zeros(2), np.eye(2), df=NAN), ValueError, "df must be > 0"),
    (lambda: wb.approximations.GaussianMixture([-0.5, 1.5], np.zeros((2, 2)), np.ones((2, 2))), ValueError,
     "weights of a mixture must be non-negative and not all zero, got"),
    (lambda: wb.approximations.GaussianMixture([0.5, 0.5], np.zeros((3, 2)), np.ones((2, 2))), ValueError,
     r"weights \(2,\), means \(3, 2\), scales \(2, 2\) disagree"),
    (lambda: wb.approximations.GaussianMixture([0.5, 0.5], np.zeros((2, 2)), np.ones((2, 2))).logpdf(np.zeros(3)),
     ValueError, r"x must have shape \(n, 2\)"),
    (lambda: wb.posteriors.load("x"), TargetError, "unknown posterior 'x'"),
])
def test_bad_input_is_refused_with_a_message_naming_it(call, error, message):
    with pytest.raises(error, match=message):
        call()


def _exact():
    return wb.methods.Exact(chains=2, draws=50).run(g2(), seed=0)


@pytest.mark.parametrize("args, message", [
    (["compare", "nonexist"], "unknown target 'nonexist': give a built-in target"),
    (["compare", "gaussian(dim=-1)"], "dim must be an integer >= 1, got -1"),
    (["compare", "examples/user_target.py:nope"], "user_target.py defines no 'nope'"),
    (["compare", "/nonexistent.py:f"], "no file '/nonexistent.py'"),
    (["study", "nope"], "unknown study 'nope'"),
    (["report", "nope"], "unknown study 'nope'"),
])
def test_the_command_line_names_what_is_wrong(args, message, capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert cli.main(args) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["compare", "gaussian", "--budgets", "abc"], "budgets are integers separated by commas"),
    (["compare", "gaussian", "--budgets", "-5"], "budgets must be integers >= 100"),
    (["compare", "gaussian", "--seeds", "0"], "--seeds must be >= 1"),
    (["study", "accuracy", "--workers", "0"], "--workers must be >= 1"),
])
def test_the_command_line_refuses_bad_options(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(args)
    assert exc.value.code == 2 and message in capsys.readouterr().err


# ------------------------------------------------------------------ the unclear errors a new user met


@pytest.mark.parametrize("call, kind, message", [
    (lambda: wb.Target.from_logp(uf.iso_logp, dim=None, data=(np.ones(2),)), TargetError, r"dim must be an integer >= 1.*None"),
    (lambda: wb.Target.from_logp(uf.iso_logp, dim=2, data=(np.ones(2),), rel_step=0), TargetError,
     r"rel_step must be a number in \(0, 1\).*got 0"),
    (lambda: wb.check_gradient(wb.targets.gaussian(2), n_points=0), TargetError, r"n_points must be an integer >= 1.*got 0"),
    (lambda: wb.check_gradient(wb.targets.gaussian(2), n_points=-1), TargetError, r"n_points must be an integer >= 1.*got -1"),
    (lambda: wb.targets.gaussian_mixture(dim=2, n_components=2.5), TargetError, r"n_components must be an integer >= 1, got 2.5"),
    (lambda: wb.targets.gaussian_mixture(dim=2, separation=-1), TargetError, r"separation must be a finite number > 0.*got -1"),
    (lambda: wb.targets.gaussian_mixture(dim=2, separation=float("nan")), TargetError, r"separation must be .*got nan"),
    (lambda: wb.targets.banana(twist="x"), TargetError, r"twist must be a finite number.*got 'x'"),
    (lambda: wb.approximations.GaussianMixture(np.zeros(2), np.zeros((2, 2)), np.ones((2, 2))), ValueError,
     r"weights of a mixture must be non-negative and not all zero"),
    (lambda: wb.approximations.GaussianMixture(np.ones(2), np.zeros((2, 2)), np.ones((2, 2))).marginal(5), ValueError,
     r"coordinate k must be an integer in \[0, 2\).*got 5"),
    (lambda: wb.targets.gaussian_mixture(dim=2).truth.marginal_pdf(5, np.zeros(3)), TargetError, r"in \[0, 2\), got 5"),
    (lambda: wb.methods.NN4Post(init_from=wb.approximations.Gaussian(np.zeros(5), np.eye(5))).run(wb.targets.gaussian(3), seed=0),
     ValueError, r"init_from has dimension 5, the target 'gaussian_isotropic' has 3"),
    (lambda: wb.Result("m", "t", np.zeros((1, 4, 2)), wb.result.Cost(0, 0, 0.0, 0.0), ("a",)), ValueError,
     r"param_names has 1 names for draws of dimension 2"),
])
def test_the_errors_a_new_user_met_name_the_argument(call, kind, message):
    with pytest.raises(kind, match=message):
        call()
