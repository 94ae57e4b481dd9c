"""The quantile model's ``law`` key: ``normal`` (the default, every run before the key) or ``cauchy``.

* the default leaves every seed and record as it was (``late_path_keys``): seed keys of quantile settings
  computed at fb13cd4, the commit before the key, are held here;
* the Cauchy records run through the lanes kernels (1 lane; 8 in the slow tier) and the plain-Python twin to
  the bit, and through the looks' kernel (to 1e-9 at earlier looks, as tests/test_looks.py), with randomized
  response and at ``epsilon = inf``;
* the draw ``tan(pi (U - 1/2))`` has the standard Cauchy law (quantiles within 4 SE of scipy's);
* ``theta*``, ``G``, ``S`` and ``Sigma`` against the closed forms, and the privatized gradient's mean and
  variance at ``theta*`` through the kernel (4 SE);
* a law that is not one is refused in one line naming the key and the laws allowed;
* the oracle interval covers near its level on Cauchy data.

The Cauchy settings here are loaded as a user's config would be (``law: cauchy``); the normal one beside
each is the same config with the default law.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from scipy import stats

import ldpsim
from ldpsim.engine.errors import ConfigError
from ldpsim.models import truth as truth_module
from ldpsim.models.quantile import (CauchyLaw, NormalLaw, QuantileModel, QuantileParams, QuantilePlain, QuantileRR,
                                    draw_cauchy, parse_law)
from ldpsim.recursion.keys import path_seed_key
from ldpsim.studies import STUDIES

#: Tolerance of every Monte Carlo comparison, in standard errors.
Z = 4.0
LOG3 = 1.0986122886681098  # log((1 + r) / (1 - r)) at r = 1/2


def _cauchy_setting(**extra):
    """A loaded quantile config of two settings, normal then Cauchy data, and its Cauchy setting."""
    loaded = ldpsim.load_config(dict(model="quantile", law=["normal", "cauchy"], **extra))
    assert [s.law for s in loaded.settings] == ["normal", "cauchy"]
    return loaded, loaded.settings[1]


# --- the default: seeds and records as before the key -------------------------------------------------


# seed keys printed by ldpsim.load_config(...).settings[0].seed_key at fb13cd4 (the commit before the key)
@pytest.mark.parametrize("extra, before", [
    (dict(), 7715663853781291448),
    (dict(tau=0.3, epsilon=LOG3), 3528545680309848417),
    (dict(tau=0.8, epsilon=math.inf, n=5000, c=0.5, gamma=0.6), 13352599697837803071),
])
def test_the_default_law_keeps_the_seeds_of_the_runs_before_the_key(extra, before):
    setting = ldpsim.load_config(dict(model="quantile", **{"n": 100, "reps": 2, **extra})).settings[0]
    assert setting.law == "normal"
    assert setting.seed_key == before
    values = setting.as_dict()
    assert path_seed_key({**values, "law": "normal"}) == before  # the default spelled out: the same seed
    assert path_seed_key({**values, "law": "cauchy"}) != before  # another law: another seed


def test_the_law_is_blank_for_other_models_and_their_seeds_stay():
    # the mean model's own law and default are untouched; the logistic model reads no law
    assert ldpsim.load_config(dict(model="mean", n=100, reps=2)).settings[0].law == "uniform"
    assert ldpsim.load_config(dict(model="logistic", n=100, reps=2)).settings[0].law is None


@pytest.mark.parametrize("epsilon, gradient", [(LOG3, QuantileRR), (math.inf, QuantilePlain)])
def test_each_law_is_a_part_of_the_record_with_the_same_gradient_constants(epsilon, gradient):
    default = QuantileModel(0.3, epsilon).kernel_params()
    assert type(default) is QuantileParams and type(default.gradient) is gradient
    assert default.law == NormalLaw() and QuantileModel(0.3, epsilon, law="normal").kernel_params() == default
    other = QuantileModel(0.3, epsilon, law="cauchy").kernel_params()
    assert other.law == CauchyLaw() and other.gradient == default.gradient  # same numbers: only the draw differs
    assert repr(QuantileModel(0.3, epsilon)) == f"QuantileModel(tau=0.3, epsilon={epsilon})"
    assert repr(QuantileModel(0.3, epsilon, law="cauchy")) == f"QuantileModel(tau=0.3, epsilon={epsilon}, law='cauchy')"


# --- kernel and twin ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lanes", [1, pytest.param(8, marks=pytest.mark.slow)])  # 8: a kernel compile more
@pytest.mark.parametrize("epsilon", [LOG3, math.inf], ids=["rr", "inf"])
def test_cauchy_lanes_kernels_equal_the_twin(epsilon, lanes):
    loaded, setting = _cauchy_setting(tau=0.3, epsilon=epsilon, n=4000, reps=6, seed=11, gamma=0.6, B=50,
                                      methods=["BB", "BM", "SN", "oracle"])
    study = STUDIES["coverage"]
    kernel = study.run_chunk(setting, loaded.options, loaded.seed, 0, 6, lanes=lanes)
    twin = study.run_chunk(setting, loaded.options, loaded.seed, 0, 6, twin=True)
    assert set(kernel) == set(twin)
    for key in kernel:
        np.testing.assert_array_equal(twin[key], kernel[key], err_msg=key)
    assert len(np.unique(kernel["theta_bar"][:, 0])) == 6
    # and they are Cauchy paths: not the normal setting's (same tau, epsilon, n; another seed and draw)
    normal = loaded.settings[0]
    assert not np.array_equal(study.run_chunk(normal, loaded.options, loaded.seed, 0, 6, lanes=1)["theta_bar"],
                              kernel["theta_bar"])


@pytest.mark.parametrize("epsilon", [LOG3, math.inf], ids=["rr", "inf"])
def test_cauchy_looks_equal_the_twin(epsilon):
    # the methods and looks of configs/cs_quantile.yaml, small
    loaded, setting = _cauchy_setting(tau=0.3, epsilon=epsilon, n=4000, reps=6, seed=11, gamma=0.6, B=50,
                                      methods=["BB", "BM", "SN", "oracle", "AsympCS", "AsympCS_oracle"], looks=5,
                                      first_look=400)
    study = STUDIES["coverage"]
    kernel = study.run_chunk(setting, loaded.options, loaded.seed, 0, 6)
    twin = study.run_chunk(setting, loaded.options, loaded.seed, 0, 6, twin=True)
    assert set(kernel) == set(twin)
    for key in kernel:
        if key == "look_bounds":  # the twin sums each earlier look's blocks from their definition (1e-15 relative)
            np.testing.assert_allclose(twin[key], kernel[key], rtol=1e-9, atol=1e-12, err_msg=key)
        else:
            np.testing.assert_array_equal(twin[key], kernel[key], err_msg=key)


# --- the draw ----------------------------------------------------------------------------------------


def test_the_cauchy_draw_has_the_cauchy_quantiles():
    # 2e5 draws of the registered observe function, as the twin runs it (the kernel draws the same numbers:
    # test_cauchy_kernel_at_1_and_8_lanes_equals_the_twin); the sample p-quantile has SE sqrt(p (1 - p) / m) / f(x_p)
    gen = np.random.Generator(np.random.SFC64(zlib.crc32(b"cauchy draws")))
    law = CauchyLaw()
    m = 200_000
    x = np.array([draw_cauchy(law, gen) for _ in range(m)])
    assert np.isfinite(x).all()
    p = np.array([0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99])
    want = stats.cauchy.ppf(p)
    se = np.sqrt(p * (1 - p) / m) / stats.cauchy.pdf(want)
    got = np.quantile(x, p)
    assert (np.abs(got - want) < Z * se).all(), (got - want) / se
    # heavy tails, not a normal's: about 2 m / (pi 100) draws beyond |x| > 100
    beyond = np.mean(np.abs(x) > 100.0)
    tail = 2.0 * stats.cauchy.sf(100.0)
    assert abs(beyond - tail) < Z * math.sqrt(tail * (1 - tail) / m)


# --- the truth ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tau", [0.3, 0.5, 0.8])
@pytest.mark.parametrize("epsilon", [LOG3, math.inf])
def test_cauchy_truth_against_the_closed_forms(tau, epsilon):
    model = QuantileModel(tau, epsilon, law="cauchy")
    x = math.tan(math.pi * (tau - 0.5))  # F^-1(tau) of F(x) = 1/2 + atan(x) / pi
    f = 1.0 / (math.pi * (1.0 + x * x))
    s_ldp = 0.0 if math.isinf(epsilon) else math.exp(epsilon) / math.expm1(epsilon) ** 2
    s = tau * (1.0 - tau) + s_ldp
    assert model.theta_star()[0] == pytest.approx(x, rel=1e-14, abs=1e-15)
    assert model.hessian()[0, 0] == pytest.approx(f, rel=1e-14)
    assert model.gradient_covariance()[0, 0] == pytest.approx(s, rel=1e-14)
    assert model.sigma()[0, 0] == pytest.approx(s / f**2, rel=1e-13)
    assert model.sigma(4)[0, 0] == pytest.approx(s / f**2 / 4, rel=1e-13)
    # G is the derivative of the risk gradient E g(theta) = F(theta) - tau: a central difference of atan's
    h = 1e-5
    derivative = (math.atan(x + h) - math.atan(x - h)) / (2.0 * h) / math.pi
    assert model.hessian()[0, 0] == pytest.approx(derivative, rel=1e-8)
    # S does not depend on the law: the normal model's
    assert model.gradient_covariance()[0, 0] == QuantileModel(tau, epsilon).gradient_covariance()[0, 0]


def test_the_cauchy_median_has_the_textbook_variance():
    # the sample median of Cauchy data: asymptotic variance pi^2 / 4 (f(0) = 1 / pi, tau (1 - tau) = 1/4)
    model = QuantileModel(0.5, math.inf, law="cauchy")
    assert model.theta_star()[0] == 0.0
    assert model.sigma()[0, 0] == pytest.approx(math.pi**2 / 4.0, rel=1e-15)


@pytest.mark.parametrize("tau", [0.3, 0.8])
def test_cauchy_gradient_through_the_kernel_has_mean_0_and_variance_s(tau):
    # the privatized gradient at theta*, drawn by the truth kernel: mean 0 and variance S, within 4 SE
    model = QuantileModel(tau, LOG3, law="cauchy")
    theta = np.asarray(model.theta_star(), dtype=float)
    est = truth_module.summarize_sums(theta, truth_module.raw_sums(model.kernel_params(), theta, 1 << 18))
    assert abs(est.mean[0]) < Z * est.mean_se[0]
    assert abs(est.S[0, 0] - model.gradient_covariance()[0, 0]) < Z * est.S_se[0, 0]


# --- refusals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, canonical", [("normal", "normal"), ("cauchy", "cauchy"), (" Cauchy ", "cauchy"),
                                             ("NORMAL", "normal")])
def test_law_spellings(text, canonical):
    assert parse_law("law", text) == canonical
    assert QuantileModel(0.5, 1.0, law=text).law == canonical


def test_no_law_is_the_normal_law():
    assert QuantileModel(0.5, 1.0).law == QuantileModel(0.5, 1.0, law=None).law == "normal"


@pytest.mark.parametrize("bad", ["student", "t(3)", "uniform", "beta(2, 5)", "", 3, 1.5, ["cauchy"], True])
def test_bad_laws_are_refused_in_one_line(bad):
    for refuse in (lambda: parse_law("law", bad), lambda: QuantileModel(0.5, 1.0, law=bad)):
        with pytest.raises(ConfigError) as info:
            refuse()
        message = str(info.value)
        assert "\n" not in message and message.startswith(f"law = {bad!r} ")
        assert "quantile model" in message and message.endswith("allowed: normal (default), cauchy")


def test_a_bad_law_is_refused_by_the_config_loader_in_one_line():
    # the loader's key refuses it, naming every model's laws; the mean model's law on the quantile model too
    with pytest.raises(ConfigError) as info:
        ldpsim.load_config(dict(model="quantile", law="student", n=100, reps=2))
    assert "\n" not in str(info.value) and str(info.value).startswith("law = 'student'")
    with pytest.raises(ConfigError, match=r"^law = 'beta\(2, 5\)' is not a law of the quantile model"):
        ldpsim.load_config(dict(model="quantile", law="beta(2, 5)", n=100, reps=2))


# --- coverage --------------------------------------------------------------------------------------


def test_the_oracle_interval_covers_near_its_level_on_cauchy_data():
    # 400 replications of the Cauchy median, epsilon = log 3, n = 1e5, gamma = 0.6: the oracle interval
    # theta_bar +- z sqrt(Sigma / n) covers theta* = 0 within 4 binomial SEs of 0.9
    reps = 400
    loaded, setting = _cauchy_setting(tau=0.5, epsilon=LOG3, n=100_000, reps=reps, seed=20261129, gamma=0.6,
                                      methods=["oracle"])
    out = STUDIES["coverage"].run_chunk(setting, loaded.options, loaded.seed, 0, reps)
    assert out["ok"].all()
    lo, hi = out["bounds"][:, 0, 0, 0], out["bounds"][:, 0, 0, 1]
    covered = np.mean((lo <= 0.0) & (0.0 <= hi))
    assert abs(covered - 0.9) < Z * math.sqrt(0.9 * 0.1 / reps), covered
    # and its half-length is z_0.95 sqrt(Sigma / n), Sigma = (1/4 + S_LDP) pi^2
    sigma = (0.25 + math.exp(LOG3) / math.expm1(LOG3) ** 2) * math.pi**2
    np.testing.assert_allclose((hi - lo) / 2.0, stats.norm.ppf(0.95) * math.sqrt(sigma / 100_000), rtol=1e-12)


def test_the_normal_laws_quantile_and_density_are_scipy_stats_numbers():
    """theta* and f(theta*) of the normal law without importing scipy.stats: the same doubles as stats.norm's."""
    from ldpsim.models.quantile import law_density, law_quantile

    for tau in [0.5, 0.9, 0.1, 0.3, 0.8, 0.05, 0.95, 0.001, 0.999, *np.linspace(0.01, 0.99, 199)]:
        x = stats.norm.ppf(tau)
        assert law_quantile("normal", tau) == x and law_density("normal", law_quantile("normal", tau)) == stats.norm.pdf(x)
        assert law_quantile("cauchy", tau) == stats.cauchy.ppf(tau)
        assert law_density("cauchy", stats.cauchy.ppf(tau)) == stats.cauchy.pdf(stats.cauchy.ppf(tau))
