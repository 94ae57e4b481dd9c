"""The data keys the mechanisms' comparison (configs/mechanisms*.yaml) needs: the mean model's ``law`` and the
regression models' ``dim``.

* ``law: beta(a, b)`` (integers): its spelling, its draw (``G_a / (G_a + G_b)`` from products of
  uniforms) against the Beta law through the kernel (mean, variance, deciles, 4 SE), the oracle's ``S``
  for every mechanism against a quadrature over the law, and NPRR's rounding term;
* ``dim`` of the regression models: 000's coefficients at the default, the cycle beyond, the
  logistic model's quadrature limit;
* both keys added after runs were committed: at their old value they leave every seed as it was
  (``late_path_keys``), at another value they change it.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from scipy import integrate, stats

import ldpsim
from ldpsim.engine.errors import ConfigError
from ldpsim.models import truth as truth_module
from ldpsim.models.linear import LinearModel
from ldpsim.models.logistic import LogisticModel
from ldpsim.models.mean import BetaLaw, MeanModel, draw_law, parse_law, rounding_term
from ldpsim.models.regression import COEF, coefficients
from ldpsim.privacy.mechanisms import LDP_MECHANISMS
from ldpsim.studies import STUDIES

#: Tolerance of every Monte Carlo comparison, in standard errors.
Z = 4.0


def _gen(*key) -> np.random.Generator:
    return np.random.Generator(np.random.SFC64(zlib.crc32(repr(key).encode())))


# --- the law key ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, canonical", [("uniform", "uniform"), (" Uniform ", "uniform"),
                                             ("beta(2, 5)", "beta(2, 5)"), ("beta(2,5)", "beta(2, 5)"),
                                             ("BETA( 50 , 50.0 )", "beta(50, 50)")])
def test_law_spellings(text, canonical):
    assert parse_law("law", text) == canonical


@pytest.mark.parametrize("bad", ["beta(2.5, 5)", "beta(0, 3)", "beta(150, 60)", "gamma(2, 5)", "beta(a, b)", 3,
                                 "beta(inf, 2)"])
def test_bad_laws_are_refused_in_one_line(bad):
    with pytest.raises(ConfigError) as err:
        parse_law("law", bad)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"law = {bad!r}") and "beta(a, b)" in message


def test_law_refused_through_the_config_names_the_key():
    with pytest.raises(ConfigError, match=r"law = 'beta\(1, 0\)'"):
        ldpsim.load_config(dict(model="mean", law="beta(1, 0)", n=100, reps=2))


def _estimate(model, samples):
    # truth.py's estimator without its caches: mean and S of the privatized gradient at theta*, through the kernel
    theta = np.asarray(model.theta_star(), dtype=float)
    return truth_module.summarize_sums(theta, truth_module.raw_sums(model.kernel_params(), theta, samples))


@pytest.mark.parametrize("law, a, b", [("beta(2, 5)", 2, 5), ("beta(1, 1)", 1, 1), ("beta(50, 50)", 50, 50)])
def test_beta_draws_through_the_kernel_have_the_beta_mean_and_variance(law, a, b):
    # non-private: the gradient theta* - X has mean 0 and variance Var X = ab / ((a + b)^2 (a + b + 1)), 4 SE
    model = MeanModel(epsilon=math.inf, law=law)
    assert model.theta_star()[0] == a / (a + b)
    est = _estimate(model, 1 << 18)
    assert abs(est.mean[0]) < Z * est.mean_se[0]
    assert abs(est.S[0, 0] - stats.beta(a, b).var()) < Z * est.S_se[0, 0]
    assert model.gradient_covariance()[0, 0] == pytest.approx(stats.beta(a, b).var(), rel=1e-14)


def test_the_beta_draw_has_the_beta_deciles():
    # the draw (products of uniforms, then a log ratio) as the twins run it, in plain Python on a numpy
    # generator (the kernel draws the same numbers: test_lanes_and_twin_agree_on_the_new_keys); each
    # decile's empirical CDF within 4 binomial SEs of Beta(2, 5)'s
    gen = np.random.Generator(np.random.SFC64(7))
    x = np.array([draw_law(BetaLaw(2, 5), gen) for _ in range(40_000)])
    q = stats.beta(2, 5).ppf(np.linspace(0.1, 0.9, 9))
    p = np.linspace(0.1, 0.9, 9)
    emp = (x[:, None] <= q[None, :]).mean(axis=0)
    assert (np.abs(emp - p) < Z * np.sqrt(p * (1 - p) / len(x))).all(), emp
    assert (x > 0).all() and (x < 1).all()


@pytest.mark.parametrize("G", [1, 2, 6, 51])
def test_rounding_term_against_a_fine_midpoint_rule(G):
    # E[f (1 - f)], f the fractional part of G (1 - X), X ~ Beta(2, 5); and exactly 1/6 for the uniform law
    x = (np.arange(2_000_000) + 0.5) / 2_000_000
    f = G * x - np.floor(G * x)
    want = np.mean(f * (1 - f) * stats.beta(5, 2).pdf(x))  # the law of 1 - X
    assert rounding_term("beta(2, 5)", G) == pytest.approx(want, rel=1e-7)
    assert rounding_term("uniform", G) == 1 / 6


@pytest.mark.parametrize("name", LDP_MECHANISMS)
def test_mean_model_oracle_on_beta_is_a_quadrature(name):
    # S = Var X + (1/4) E[Var(M(t) | t)], t = 1 - 2X, X ~ Beta(2, 5): the conditional variance integrated against
    # t's density, cell by cell of NPRR's grid (the rounding term is a parabola per cell)
    model = MeanModel(epsilon=2.0, mechanism=name, law="beta(2, 5)")
    mech = model.mechanism
    dist = stats.beta(2, 5)

    def integrand(t):  # t = 1 - 2x: x = (1 - t) / 2, dx = dt / 2
        return mech.conditional_covariance([t])[0, 0] * dist.pdf((1.0 - t) / 2.0) / 2.0

    edges = np.linspace(-1.0, 1.0, mech.G + 1) if name == "nprr" else np.array([-1.0, 1.0])
    integral = sum(integrate.quad(integrand, lo, hi, epsabs=0, epsrel=1e-12)[0] for lo, hi in zip(edges[:-1], edges[1:]))
    assert model.gradient_covariance()[0, 0] == pytest.approx(dist.var() + integral / 4, rel=1e-9)


@pytest.mark.slow  # a truth kernel per record (18 s each, cold); the fast tier checks the Beta draw non-private
@pytest.mark.parametrize("name", ["piecewise", "laplace", "nprr"])
def test_mean_model_on_beta_kernel_gradient_has_the_stated_covariance(name):
    # end to end through released_scalar: mean 0 and S within 4 SE (2^20 observations)
    model = MeanModel(epsilon=2.0, mechanism=name, law="beta(2, 5)")
    est = _estimate(model, 1 << 20)
    assert abs(est.mean[0]) < Z * est.mean_se[0]
    assert abs(est.S[0, 0] - model.gradient_covariance()[0, 0]) < Z * est.S_se[0, 0]


# --- the dim key of the regression models ---------------------------------------------------------------


def test_default_dim_gives_000s_coefficients():
    assert tuple(coefficients(3)) == COEF
    np.testing.assert_array_equal(coefficients(4), [0, 0, 1, -1, 0])
    np.testing.assert_array_equal(coefficients(7), [0, 0, 1, -1, 0, 1, -1, 0])
    model = LinearModel(epsilon=1.0)
    assert model.dim == 4 and tuple(model.theta_star()) == COEF


def test_linear_model_at_dim_4_has_five_coordinates_everywhere():
    model = LinearModel(epsilon=2.0, mechanism="piecewise_d", dim=4)
    assert model.dim == 5 and model.mechanism.dim == 5
    assert model.hessian().shape == model.gradient_covariance().shape == (5, 5)
    assert model.kernel_params().x.shape == (5,)
    loaded = ldpsim.load_config(dict(model="linear", dim=4, n=100, reps=2))
    assert [s.dim for s in loaded.settings] == [4]


def test_logistic_dim_beyond_its_quadrature_is_refused():
    with pytest.raises(ValueError, match=r"dim = 6 is outside \[1, 5\] for model 'logistic': its G is a quadrature"):
        LogisticModel(epsilon=1.0, dim=6)
    assert LogisticModel(epsilon=1.0, dim=4).hessian().shape == (5, 5)


@pytest.mark.slow  # a truth kernel for d = 5 (compiled): CI's slow tier
@pytest.mark.parametrize("name", ["laplace", "piecewise_d", "duchi_l2"])
def test_linear_model_at_dim_4_kernel_gradient_has_the_stated_covariance(name):
    model = LinearModel(epsilon=2.0, mechanism=name, dim=4)
    est = _estimate(model, 1 << 18)
    assert (np.abs(est.mean) < Z * est.mean_se).all()
    assert (np.abs(est.S - model.gradient_covariance()) < Z * est.S_se).all(), (est.S, model.gradient_covariance())


# --- seeds: the keys came late --------------------------------------------------------------------------


@pytest.mark.parametrize("model, key, old, new", [("mean", "law", "uniform", "beta(2, 5)"),
                                                  ("linear", "dim", 3, 4), ("quantile_regression", "dim", 3, 5)])
def test_late_keys_keep_the_old_seeds_and_change_the_new(model, key, old, new):
    def seed(**extra):
        return ldpsim.load_config(dict(model=model, n=100, reps=2, **extra)).settings[0].seed_key

    assert seed() == seed(**{key: old})
    assert seed(**{key: new}) != seed()


def test_dim_of_the_online_models_keeps_its_default():
    loaded = ldpsim.load_config(dict(model="huber_mallows", n=100, reps=2))
    assert loaded.settings[0].dim == 5


@pytest.mark.slow  # path kernels for a new law record at 1 and 4 lanes: CI's slow tier
@pytest.mark.parametrize("model, extra", [("mean", dict(law="beta(2, 5)", mechanism="nprr")),
                                          ("linear", dict(dim=4, mechanism="piecewise_d"))])
def test_lanes_and_twin_agree_on_the_new_keys(model, extra):
    loaded = ldpsim.load_config(dict(model=model, epsilon=1.0, n=2000, reps=6, methods=["BB"], seed=11, **extra))
    study = STUDIES["coverage"]
    for s in loaded.settings:
        one = study.run_chunk(s, loaded.options, loaded.seed, 0, 6, lanes=1)
        four = study.run_chunk(s, loaded.options, loaded.seed, 0, 6, lanes=4)
        twin = study.run_chunk(s, loaded.options, loaded.seed, 0, 6, twin=True)
        for key in one:
            np.testing.assert_array_equal(four[key], one[key], err_msg=key)
            np.testing.assert_array_equal(twin[key], one[key], err_msg=key)
        assert len(np.unique(one["theta_bar"][:, 0])) == 6


def test_a_users_mechanism_seeds_by_its_name_not_its_path(tmp_path):
    # the canonical value of a user's mechanism holds its file's absolute path; a clone elsewhere (CI's) must draw
    # the same numbers: the seed names the mechanism by its class's name (results/staircase reproduces anywhere)
    import shutil
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "examples" / "staircase.py"
    moved = tmp_path / "elsewhere" / "staircase.py"
    moved.parent.mkdir()
    shutil.copy(here, moved)

    def seed(path):
        return ldpsim.load_config(dict(model="mean", mechanism=f"{path}:Staircase", n=100, reps=2)).settings[0].seed_key

    assert seed(here) == seed(moved)
    assert seed(here) != ldpsim.load_config(dict(model="mean", mechanism="laplace", n=100, reps=2)).settings[0].seed_key
