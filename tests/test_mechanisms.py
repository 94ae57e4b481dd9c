"""Laplace and Gaussian mechanisms: draws, sensitivity, analytic calibration."""

from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np
import pytest
from scipy import integrate, stats

from ldpsim.privacy.mechanisms import (
    MECHANISMS,
    Gaussian,
    Laplace,
    RandomizedResponse,
    classical_gaussian_sigma,
    gaussian,
    gaussian_delta,
    laplace,
    sensitivity,
)


@numba.njit
def _laplace_draws(gen, scale, n):
    out = np.empty(n)
    for i in range(n):
        out[i] = laplace(gen, scale)
    return out


@numba.njit
def _gaussian_draws(gen, sigma, n):
    out = np.empty(n)
    for i in range(n):
        out[i] = gaussian(gen, sigma)
    return out


# (jitted filler, plain-Python draw, scipy law of one draw given the scale,
#  4th central moment / variance^2: 6 for Laplace, 3 for the normal, i.e.
#  scipy.stats.laplace.stats(moments="k") = 3 and norm's 0 excess kurtosis, + 3)
DRAWS = {
    "laplace": (_laplace_draws, laplace.py_func, lambda b: stats.laplace(scale=b), 6.0),
    "gaussian": (_gaussian_draws, gaussian.py_func, lambda s: stats.norm(scale=s), 3.0),
}
# a scale of each kind as the mechanisms compute it (Laplace b = 4, Gaussian sigma = 7.46)
SCALES = {"laplace": Laplace(1.0, 4.0).scale, "gaussian": Gaussian(1.0, 1e-5, 2.0).sigma}


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_draws_pass_ks_test_against_their_law(kind):
    fill, _, law, _ = DRAWS[kind]
    scale = SCALES[kind]
    x = fill(np.random.default_rng(2024), scale, 200_000)
    assert stats.kstest(x, law(scale).cdf).pvalue > 1e-3


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("wrong", [0.95, 1.05])
def test_ks_test_rejects_a_scale_5_percent_off(kind, wrong):
    # the test above has power: the same draws fail against a 5% wrong scale
    fill, _, law, _ = DRAWS[kind]
    scale = SCALES[kind]
    x = fill(np.random.default_rng(2024), scale, 200_000)
    assert stats.kstest(x, law(wrong * scale).cdf).pvalue < 1e-3


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_draws_unbiased_with_stated_variance(kind):
    fill, _, _, kurtosis = DRAWS[kind]
    mech = Laplace(1.0, 4.0) if kind == "laplace" else Gaussian(1.0, 1e-5, 2.0)
    n = 1_000_000
    x = fill(np.random.default_rng(77), SCALES[kind], n)
    var = mech.variance  # 2 b^2 resp. sigma^2
    assert var == pytest.approx(2 * mech.scale**2 if kind == "laplace" else mech.sigma**2, rel=1e-15)
    assert abs(x.mean()) < 4 * math.sqrt(var / n)  # 4 Monte Carlo SEs
    # SE of the sample variance: sqrt((mu4 - var^2) / n), mu4 = kurtosis var^2
    se_var = math.sqrt((kurtosis - 1.0) * var**2 / n)
    assert abs(x.var() - var) < 4 * se_var


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_jitted_draws_equal_python_twin(kind):
    fill, draw_py, _, _ = DRAWS[kind]
    scale = SCALES[kind]
    jitted = fill(np.random.default_rng(5), scale, 2_000)
    gen = np.random.default_rng(5)
    plain = np.array([draw_py(gen, scale) for _ in range(2_000)])
    np.testing.assert_array_equal(jitted, plain)


@pytest.mark.parametrize("tau", [0.5, 0.9])
def test_sensitivity_of_quantile_regression_gradient(tau):
    # 000, Section 4 "Quantile Regression": g = (-tau + 1{...}) X, |X_j| <= m,
    # so |g_j| <= max(tau, 1 - tau) m; the paper's Laplace scale is
    # 2 max(tau, 1 - tau) m d / eps and S_LDP = 2 (4 max^2 m^2 d^2 / eps^2) I.
    m, d, eps = 1.0, 4, 1.0
    top = max(tau, 1 - tau)
    delta_l1 = sensitivity([top * m] * d, "l1")
    assert delta_l1 == pytest.approx(2 * top * m * d)  # 4.0 at tau = 0.5
    mech = Laplace(eps, delta_l1)
    assert mech.scale == pytest.approx(2 * top * m * d / eps)
    assert mech.variance == pytest.approx(2 * 4 * top**2 * m**2 * d**2 / eps**2)
    if tau == 0.5:
        assert (delta_l1, mech.scale) == (4.0, 4.0)


def test_sensitivity_l2():
    # opposite corners of the box: 2 ||bounds||_2
    assert sensitivity([0.5] * 4, "l2") == pytest.approx(2.0)
    assert sensitivity(np.array([3.0, 4.0]), "l2") == pytest.approx(10.0)
    assert sensitivity(np.array([3.0, 4.0]), "l1") == pytest.approx(14.0)
    assert sensitivity(2.5, "l1") == 5.0  # a scalar is one coordinate
    assert isinstance(sensitivity([1, 2], "l2"), float)


@pytest.mark.parametrize(
    "bounds, norm",
    [
        ([1.0, -0.5], "l1"),
        ([1.0, math.nan], "l2"),
        ([math.inf], "l1"),
        ([], "l1"),
        ([[1.0, 2.0]], "l1"),
        ([1.0], "linf"),
        ([1.0], "L1"),
    ],
)
def test_sensitivity_rejects_bad_input(bounds, norm):
    with pytest.raises(ValueError) as info:
        sensitivity(bounds, norm)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Laplace(0.0, 1.0),
        lambda: Laplace(-1.0, 1.0),
        lambda: Laplace(math.nan, 1.0),
        lambda: Laplace(1.0, 0.0),
        lambda: Laplace(1.0, math.inf),
        lambda: Gaussian(1.0, 0.0, 1.0),
        lambda: Gaussian(1.0, 1.0, 1.0),
        lambda: Gaussian(1.0, 1e-5, -1.0),
        lambda: Gaussian(0.0, 1e-5, 1.0),
        lambda: gaussian_delta(-1.0, 1.0, 1.0),
        lambda: classical_gaussian_sigma(1.0, 0.0, 1.0),
    ],
)
def test_impossible_parameters_raise(make):
    with pytest.raises(ValueError) as info:
        make()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 10.0, 50.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10])
@pytest.mark.parametrize("sens", [1.0, 2.5])
def test_analytic_sigma_attains_target_delta(epsilon, delta, sens):
    sigma = Gaussian(epsilon, delta, sens).sigma
    achieved = gaussian_delta(sigma, epsilon, sens)
    assert achieved == pytest.approx(delta, rel=1e-9, abs=0)
    assert achieved <= delta  # rounded to the private side
    # smallest such sigma: 1e-9 less noise already breaks the target
    assert gaussian_delta(sigma * (1 - 1e-9), epsilon, sens) > delta


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 0.6, 0.9, 0.99])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10])
def test_analytic_sigma_below_classical(epsilon, delta):
    # Dwork & Roth Thm A.1 holds for eps < 1; the exact calibration needs less noise
    analytic = Gaussian(epsilon, delta, 1.0).sigma
    classical = classical_gaussian_sigma(epsilon, delta, 1.0)
    assert analytic < classical
    assert gaussian_delta(classical, epsilon, 1.0) < delta  # the classical one is private too


def test_analytic_sigma_reference_value():
    # eps = 1, delta = 1e-5, D = 1: sigma = 3.7306316348159418, derived
    # independently of ldpsim (i) by scipy.integrate.quad of the privacy-loss
    # tail E[(1 - e^(eps - L))_+], L ~ N(eta, 2 eta), eta = D^2 / (2 sigma^2),
    # solved for delta = 1e-5 by brentq (3.7306316348159423), and (ii) by
    # mpmath.findroot at 40 digits on Balle & Wang's Thm 8 (3.73063163481594183).
    # The classical calibration gives sqrt(2 ln 125000) = 4.8448.
    assert Gaussian(1.0, 1e-5, 1.0).sigma == pytest.approx(3.7306316348159418, rel=1e-12)
    assert Gaussian(1.0, 1e-5, 3.0).sigma == pytest.approx(3 * 3.7306316348159418, rel=1e-12)
    assert classical_gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(4.844805262605389, rel=1e-12)


def _delta_by_privacy_loss_tail(sigma, epsilon, sens):
    """delta(eps) = E[(1 - e^(eps - L))_+] for the privacy loss L ~ N(eta, 2 eta)."""
    eta = sens**2 / (2 * sigma**2)
    sd = math.sqrt(2 * eta)
    law = stats.norm(eta, sd)
    top = max(epsilon, eta) + 40 * sd
    points = [eta] if eta > epsilon else None
    value, _ = integrate.quad(
        lambda loss: -math.expm1(epsilon - loss) * law.pdf(loss),
        epsilon, top, epsabs=0, epsrel=1e-12, limit=500, points=points,
    )
    return value


@pytest.mark.parametrize(
    "epsilon, delta", [(0.1, 1e-5), (0.5, 1e-3), (1.0, 1e-5), (2.0, 1e-10), (10.0, 1e-5), (50.0, 1e-5)]
)
def test_gaussian_delta_matches_privacy_loss_integral(epsilon, delta):
    # an evaluation of delta independent of the closed form: quad of the loss tail
    sigma = Gaussian(epsilon, delta, 1.0).sigma
    for s in (0.8 * sigma, sigma, 1.25 * sigma):
        reference = _delta_by_privacy_loss_tail(s, epsilon, 1.0)
        assert gaussian_delta(s, epsilon, 1.0) == pytest.approx(reference, rel=1e-9)


def test_infinite_epsilon_adds_no_noise():
    lap = Laplace(math.inf, 4.0)
    gau = Gaussian(math.inf, 1e-5, 2.0)
    assert (lap.scale, lap.variance, gau.sigma, gau.variance) == (0.0, 0.0, 0.0, 0.0)
    assert gaussian_delta(1.0, math.inf, 1.0) == 0.0
    assert classical_gaussian_sigma(math.inf, 1e-5, 1.0) == 0.0
    assert gaussian_delta(0.0, 1.0, 1.0) == 1.0  # no noise at finite eps: no guarantee
    assert "no privacy" in lap.guarantee and "no privacy" in gau.guarantee


def test_names_and_guarantees():
    assert (RandomizedResponse.name, Laplace.name, Gaussian.name) == MECHANISMS[:3]
    from ldpsim.privacy.mechanisms import CLASSES, LDP_MECHANISMS

    assert MECHANISMS[3:] == LDP_MECHANISMS == tuple(CLASSES)  # the LDP releases, after the additive ones
    # class-level names are not dataclass fields: positional construction as specified
    for cls in (RandomizedResponse, Laplace, Gaussian):
        assert "name" not in {f.name for f in dataclasses.fields(cls)}
    assert Laplace(1, 4).guarantee == "epsilon = 1 LDP (Laplace, l1 sensitivity 4)"
    assert Gaussian(1.0, 1e-5, 2.0).guarantee == "(epsilon = 1, delta = 1e-05) LDP (Gaussian, l2 sensitivity 2)"
    assert RandomizedResponse(0.5).guarantee == "epsilon = 0.5 LDP (randomized response)"
    assert RandomizedResponse(math.inf).guarantee == "no privacy (epsilon = inf, randomized response off)"


# --- the registry (issue 43): one entry per mechanism, declared by its family's module, every list read from it ---


def test_every_list_of_mechanism_names_is_read_from_the_registry():
    from ldpsim.privacy import mechanisms as m, online
    from ldpsim.recursion.keys import MECHANISM_NAMES

    assert m.MECHANISMS == ("rr", "laplace", "gaussian", "duchi", "piecewise", "hybrid", "nprr", "duchi_linf",
                            "duchi_l2", "harmony", "piecewise_d", "hybrid_d")
    assert m.LDP_MECHANISMS == m.MECHANISMS[3:] == tuple(m.CLASSES)
    assert m.ONE_DIMENSIONAL == ("duchi", "piecewise", "hybrid", "nprr")
    assert m.ONLINE_MECHANISMS == ("gdp", "laplace", "gaussian", "gaussian_classical")  # the default first
    assert m.PER_USER_MECHANISMS == ("gdp", "laplace", "gaussian_classical")
    assert online.ONLINE_MECHANISMS is m.ONLINE_MECHANISMS and online.PER_USER_MECHANISMS is m.PER_USER_MECHANISMS
    assert MECHANISM_NAMES == m.names() == m.MECHANISMS + ("gdp", "gaussian_classical")
    assert online.BUDGET_KEY == {name: "mu" if name == "gdp" else "epsilon"
                                 for name in m.ONLINE_MECHANISMS + m.LDP_MECHANISMS}


def test_each_entry_is_its_family_modules_and_names_its_class():
    from ldpsim.privacy import mechanisms as m

    for entry in m.entries():
        assert entry.cls.name == entry.name, entry
        assert entry.cls.__module__ == f"ldpsim.privacy.mechanisms.{entry.family}"
        assert entry.text and "|" not in entry.text  # a docs row
        if entry.kind == "release":  # a release is a BoundedMechanism whose record is registered, audited somewhere
            mech = entry.cls(1.0, np.ones(entry.audit_dims[0]))
            assert isinstance(mech, m.BoundedMechanism) and type(mech.record()) in m.release.registry
            assert mech.per_coordinate == entry.one_dimensional
        else:
            assert not entry.audit_dims and not entry.one_dimensional
    assert {e.family for e in m.entries()} == {"rr", "laplace_noise", "gaussian_noise", "gdp_noise", "duchi",
                                                "piecewise", "hybrid", "nprr", "harmony", "sampled"}


def test_the_registry_refuses_a_second_entry_of_a_name_and_a_release_without_its_audit():
    from ldpsim.privacy.mechanisms import registry

    with pytest.raises(ValueError, match="'duchi' is registered twice"):
        registry.register("duchi", Laplace, "again", "additive")
    with pytest.raises(ValueError, match="a release needs the dimensions it is audited at"):
        registry.MechanismEntry("x", "f", Laplace, "text", "release")
    with pytest.raises(ValueError, match="kind must be one of"):
        registry.MechanismEntry("x", "f", Laplace, "text", "noise")
    with pytest.raises(ValueError, match="an online mechanism, and only one, has a calibration"):
        registry.MechanismEntry("x", "f", Laplace, "text", "additive", online=True)
    calibration = registry.OnlineCalibration(make=lambda budget, dim, sensitivity, delta: None)
    with pytest.raises(ValueError, match="a per-user mechanism, and only one, has a calibration with a numerator"):
        registry.MechanismEntry("x", "f", Laplace, "text", "additive", online=True, per_user=True,
                                calibration=calibration)


def test_the_online_models_calibration_is_read_from_the_entries():
    # each online mechanism's calibration to D and per-user form live in its family's module (OnlineCalibration):
    # ldpsim/privacy/online.py names no mechanism, and a mechanism reads delta where its entry says so
    import ast
    import inspect

    from ldpsim.privacy import mechanisms as m, online

    tree = ast.parse(inspect.getsource(online))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}
    assert not strings & set(m.ONLINE_MECHANISMS), strings & set(m.ONLINE_MECHANISMS)
    for name in m.PER_USER_MECHANISMS:
        calibration = m.REGISTRY[name].calibration
        law = online.BudgetLaw(1.0, 2.0)
        mech = online.online_mechanism(name, 3, 2.0, law, delta=1e-5)
        assert type(online.online_noise_record(mech)) is calibration.per_user_record
        assert calibration.per_user_record.__module__ == m.REGISTRY[name].cls.__module__ or name == "gdp"
        # the mean variance over users: factor x numerator^2 x E[b^-2], the constant budget's at each b
        at = [online.online_mechanism(name, 3, 2.0, b, delta=1e-5).variance * b**2 for b in (1.0, 1.7)]
        assert at[0] == pytest.approx(at[1]) and mech.variance == pytest.approx(at[0] * law.inverse_moment(2))
    assert {n for n in m.names() if m.REGISTRY[n].delta} == {"gaussian", "gaussian_classical"}
