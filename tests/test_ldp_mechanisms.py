"""The LDP mechanisms of bounded gradients (ldpsim/privacy/mechanisms/): laws, constants, kernels, references.

* each release is unbiased with the stated conditional covariance (Monte
  Carlo through the kernel, 4 SE), and the stated variances are those of the
  textbook laws (exact moments of the point masses and uniforms they are made of);
* Duchi et al.'s l-infinity mechanism by exact enumeration of its output law: its constant, its
  correlation, its covariance, and its privacy, which the sharing of the ties decides at even d;
* exact privacy of the discrete laws (l-infinity, NPRR) and of PM's density;
* the kernels draw what their plain-Python twins draw, and lanes what one lane draws;
* the public implementations in tests/data/mechanism_references.json
  (mad-lab-fau/sok-ldp-data-analysis at df6372a, WannabeSmith/nprr at 36edeca);
* the models' ``S`` with these mechanisms (mean: a quadrature; regression: Monte Carlo).
"""

from __future__ import annotations

import json
import math
import zlib
from fractions import Fraction
from itertools import product
from pathlib import Path

import numba
import numpy as np
import pytest
from scipy import integrate, stats

import ldpsim
from ldpsim.engine.dialect.rng import kernel_rng, local_rng, release_rng
from ldpsim.models import truth as truth_module
from ldpsim.models.linear import LinearModel
from ldpsim.models.mean import MeanModel
from ldpsim.privacy.mechanisms import LDP_MECHANISMS, make_ldp_mechanism
from ldpsim.privacy.mechanisms.bounded import BoundedMechanism
from ldpsim.privacy.mechanisms.duchi import (Duchi, duchi_bound, duchi_variance, DuchiL2, DuchiLinf, linf_constant,
                                             linf_correlation)
from ldpsim.privacy.mechanisms.hybrid import hybrid_alpha, hybrid_threshold, hybrid_variance
from ldpsim.privacy.mechanisms.kernel import release
from ldpsim.privacy.mechanisms.nprr import NPRR, nprr_entropy_rule, nprr_epsilon
from ldpsim.privacy.mechanisms.piecewise import Piecewise, piecewise_c, piecewise_variance
from ldpsim.privacy.mechanisms.sampled import piecewise_d_k, PiecewiseD
from ldpsim.studies import STUDIES

REFERENCES = json.loads((Path(__file__).parent / "data" / "mechanism_references.json").read_text())

ONE_D = ("duchi", "piecewise", "hybrid", "nprr")
MULTI = ("harmony", "duchi_linf", "duchi_l2", "piecewise_d", "hybrid_d")
#: Unequal bounds (duchi_l2 weights its input by bounds / ||bounds||_2; the others ignore them).
BOUNDS = np.array([1.0, 2.0, 0.5, 3.0, 0.25])
#: Draws per Monte Carlo check (the fast tier).
N = 200_000
#: Tolerance of every Monte Carlo comparison, in standard errors.
Z = 4.0


def _gen(*key) -> np.random.Generator:
    # a seed from the test's parameters (crc32: the same in every process, unlike hash())
    return np.random.Generator(np.random.SFC64(zlib.crc32(repr(key).encode())))


# --- drawing: the kernel and its plain-Python twin --------------------------------------


@numba.njit(cache=True, error_model="numpy")
def _draws(record, stream, t, n):
    # n releases of t (d,) through release on the record, one per row (audit.py's _vector_counts pattern)
    gen = local_rng(stream)
    d = t.shape[0]
    out = np.empty((n, d))
    work = np.empty(d)
    for i in range(n):
        for j in range(d):
            work[j] = t[j]
        release(record, gen, work)
        for j in range(d):
            out[i, j] = work[j]
    release_rng(stream, gen)
    return out


def _draws_twin(record, gen, t, n):
    out = np.empty((n, t.shape[0]))
    for i in range(n):
        work = np.array(t, dtype=float)
        release(record, gen, work)
        out[i] = work
    return out


def _draw(mech_or_record, t, n, gen):
    record = mech_or_record.record(lanes=1) if isinstance(mech_or_record, BoundedMechanism) else mech_or_record
    return _draws(record, kernel_rng(gen), np.asarray(t, dtype=float), n)


#: Events of probability above RARE / N show up in N draws but with probability e^-RARE = 1e-4 (as 4 SE do).
RARE = -math.log(1e-4)


def _moment_errors(x, t, cov, z=Z) -> list[str]:
    """The moments of the draws ``x`` (N, d) that disagree, beyond ``z`` SEs, with mean ``t`` and covariance ``cov``.

    Means: SE from the sample sd. Covariances: ``mean((X_j - t_j)(X_k - t_k))`` (unbiased for ``cov`` when the
    mean is ``t``: no term from estimating the mean) with the SE of that average from the sample sd of the
    products (the fourth moments). A sample SE misses events too rare to have happened (at eps = 12.5 Harmony's
    minority sign has probability 2e-6: 0.4 of them in 2e5 draws, and then (X - t)^2 is almost constant, with a
    sample SE of 3e-8 against a contribution of 2e-5 to its mean): each comparison also allows the most that
    unseen events could move it, RARE / N times the range of the statistic. The values are bounded by the
    largest |X_j| drawn, as every law here is symmetric in sign (+-D, +-d D, +-B, hemispheres, [-C, C]) and the
    rare values are mirrors of common ones.
    """
    n, d = x.shape
    errors = []
    mean = x.mean(axis=0)
    se = x.std(axis=0, ddof=1) / math.sqrt(n)
    reach = np.abs(x).max(axis=0) + np.abs(t)  # bounds |X_j - t_j|
    for j in range(d):
        if abs(mean[j] - t[j]) > z * se[j] + RARE * 2 * reach[j] / n:
            errors.append(f"mean[{j}] = {mean[j]:.6g}, want {t[j]:.6g} (SE {se[j]:.3g})")
    dev = x - t
    for j in range(d):
        for k in range(j, d):
            prod = dev[:, j] * dev[:, k]
            got, se_jk = prod.mean(), prod.std(ddof=1) / math.sqrt(n)
            if abs(got - cov[j, k]) > z * se_jk + RARE * 2 * reach[j] * reach[k] / n:
                errors.append(f"cov[{j},{k}] = {got:.6g}, want {cov[j, k]:.6g} (SE {se_jk:.3g})")
    return errors


# --- 1. unbiased, with the stated covariance ----------------------------------------------


T_1D = (-1.0, -0.5, 0.0, 0.5, 1.0)
EPS_1D = (0.5, 2.0, 8.0)  # 0.5: below the Hybrid mechanism's threshold (0.609), where HM is Duchi's mechanism


@pytest.mark.parametrize("t", T_1D)
@pytest.mark.parametrize("epsilon", EPS_1D)
@pytest.mark.parametrize("name", ONE_D)
def test_one_dimensional_release_is_unbiased_with_its_variance(name, epsilon, t):
    mech = make_ldp_mechanism(name, epsilon, [1.0])
    x = _draw(mech, [t], N, _gen(name, epsilon, t))
    assert _moment_errors(x, np.array([t]), mech.conditional_covariance([t])) == []


@pytest.mark.parametrize("name", ONE_D)
def test_one_dimensional_mechanisms_split_epsilon_over_coordinates(name):
    # on a vector each coordinate is released alone at epsilon / d: covariance diag(Var_1(eps / d, t_j))
    mech = make_ldp_mechanism(name, 3.0, BOUNDS[:3])
    one = make_ldp_mechanism(name, 1.0, [1.0])
    t = np.array([0.3, -1.0, 0.8])
    cov = mech.conditional_covariance(t)
    np.testing.assert_allclose(np.diag(cov), [one.conditional_covariance([v])[0, 0] for v in t], rtol=1e-13)
    assert mech.coordinate_epsilon == 1.0 and "each of 3 coordinates at epsilon = 1" in mech.guarantee
    assert _moment_errors(_draw(mech, t, N, _gen(name, "split")), t, cov) == []


VECTORS = {
    "spread": lambda d: np.linspace(-1.0, 1.0, d),  # corners, and 0 for odd d
    "inside": lambda d: np.array([0.3, -0.7, 0.9, 0.05, -0.5])[:d],
}
EPS_MULTI = (1.0, 8.0, 12.5)  # piecewise_d's k = floor(eps / 2.5): 1, 3, 5 (then min(d, k))


@pytest.mark.parametrize("vector", list(VECTORS))
@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("epsilon", EPS_MULTI)
@pytest.mark.parametrize("name", MULTI)
def test_multidimensional_release_is_unbiased_with_its_covariance(name, epsilon, d, vector):
    mech = make_ldp_mechanism(name, epsilon, BOUNDS[:d])
    t = VECTORS[vector](d)
    x = _draw(mech, t, N, _gen(name, epsilon, d, vector))
    assert _moment_errors(x, t, mech.conditional_covariance(t)) == []


@pytest.mark.parametrize("epsilon, d, k", [(1.0, 5, 1), (2.49, 5, 1), (2.5, 5, 1), (5.0, 5, 2), (8.0, 5, 3),
                                           (8.0, 2, 2), (12.5, 5, 5), (12.5, 3, 3), (100.0, 4, 4)])
def test_piecewise_d_samples_k_coordinates(epsilon, d, k):
    # Wang et al. (2019), Algorithm 4: k = max(1, min(d, floor(eps / 2.5))); the grid above has k = 1, 2, 3, 5
    assert piecewise_d_k(epsilon, d) == k
    mech = PiecewiseD(epsilon, np.ones(d))
    assert mech.k == k and mech.record().k == k and mech.record().scale == d / k
    # exactly k coordinates are released (nonzero), each at epsilon / k
    x = _draw(mech, np.linspace(-1, 1, d), 2000, _gen("k", epsilon, d))
    assert ((x != 0).sum(axis=1) == k).all()
    assert mech.record().one.c == pytest.approx(piecewise_c(epsilon / k), rel=1e-15)


def test_the_moment_check_has_teeth():
    # the checks above fail for constants 3% off: a tilt (the mean at t = 1 moves by 0.03, ~15 SE), PM's
    # probability of its central piece, l-infinity's bound (covariance off by 6%), duchi_l2's weights
    eps, t = 2.0, np.array([1.0])
    good = Duchi(eps, [1.0]).record()
    assert _moment_errors(_draw(good, t, N, _gen("teeth", 0)), t, Duchi(eps, [1.0]).conditional_covariance(t)) == []
    bad = good._replace(tilt=1.03 * good.tilt)
    assert _moment_errors(_draw(bad, t, N, _gen("teeth", 0)), t, Duchi(eps, [1.0]).conditional_covariance(t))
    pm = Piecewise(eps, [1.0])
    bad = pm.record()._replace(inside=pm.record().inside * 1.03)
    t = np.array([0.5])
    assert _moment_errors(_draw(bad, t, N, _gen("teeth", 1)), t, pm.conditional_covariance(t))
    linf = DuchiLinf(8.0, np.ones(3))
    t = np.array([0.2, -0.4, 0.9])
    bad = linf.record()._replace(bound=1.03 * linf.bound)
    assert _moment_errors(_draw(bad, t, N, _gen("teeth", 2)), t, linf.conditional_covariance(t))
    l2 = DuchiL2(8.0, BOUNDS[:3])
    bad = l2.record()._replace(weights=np.ones(3) / math.sqrt(3.0))  # weights that ignore the bounds
    assert _moment_errors(_draw(bad, t, N, _gen("teeth", 3)), t, l2.conditional_covariance(t))


# --- the laws behind the variance formulas, exactly -------------------------------------------------


def _law_1d(name: str, epsilon: float, t: float, d: int = 1) -> list[tuple[float, float, float]]:
    """The textbook law of one coordinate's release at ``t``: ``(weight, lo, hi)``, a point mass if ``lo == hi``.

    Duchi: ``+-D``, ``P(+D) = 1/2 + t (e^e - 1) / (2 (e^e + 1))``; PM (Wang et al. 2019, Algorithm 2): with
    probability ``e^(e/2) / (e^(e/2) + 1)`` uniform on ``[l, r]``, ``l = (C + 1) t / 2 - (C - 1) / 2``,
    ``r = l + C - 1``, else uniform on ``[-C, l) U (r, C]``; HM: PM w.p. ``alpha``, Duchi otherwise; Harmony
    (coordinate 0 of ``d``): ``+-d D`` w.p. ``1 / d`` (sign as Duchi's), else 0. Written from the papers,
    not from the mechanisms' kernels.
    """
    e = epsilon
    D = (math.exp(e) + 1) / (math.exp(e) - 1)
    p_plus = 0.5 + t * (math.exp(e) - 1) / (2 * (math.exp(e) + 1))
    if name == "duchi":
        return [(p_plus, D, D), (1 - p_plus, -D, -D)]
    if name == "harmony":
        return [(p_plus / d, d * D, d * D), ((1 - p_plus) / d, -d * D, -d * D), (1 - 1 / d, 0.0, 0.0)]
    if name == "piecewise":
        h = math.exp(e / 2)
        C = (h + 1) / (h - 1)
        lo = (C + 1) * t / 2 - (C - 1) / 2
        hi = lo + C - 1
        inside = h / (h + 1)
        outside = 1 - inside
        return [(inside, lo, hi), (outside * (lo + C) / (C + 1), -C, lo), (outside * (C - hi) / (C + 1), hi, C)]
    if name == "hybrid":
        alpha = 1 - math.exp(-e / 2) if e > hybrid_threshold() else 0.0
        return ([(alpha * w, a, b) for w, a, b in _law_1d("piecewise", e, t)]
                + [((1 - alpha) * w, a, b) for w, a, b in _law_1d("duchi", e, t)])
    raise ValueError(name)


def _central_moments(law) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of a mixture of point masses and uniforms."""
    mean = sum(w * (a + b) / 2 for w, a, b in law if w > 0)

    def central(k):
        total = 0.0
        for w, a, b in law:
            if w <= 0:
                continue
            if a == b:
                total += w * (a - mean) ** k
            else:
                total += w * ((b - mean) ** (k + 1) - (a - mean) ** (k + 1)) / ((k + 1) * (b - a))
        return total

    return mean, central(2), central(4)


@pytest.mark.parametrize("epsilon", [0.3, 0.5, 0.6, 0.61, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("t", [-1.0, -0.3, 0.0, 0.7, 1.0])
@pytest.mark.parametrize("name", ["duchi", "piecewise", "hybrid", "harmony"])
def test_variance_formulas_are_those_of_the_textbook_laws(name, t, epsilon):
    # exact: the moments of the law as the papers define it against ldp's closed forms
    d = 5 if name == "harmony" else 1
    mean, var, _ = _central_moments(_law_1d(name, epsilon, t, d))
    mech = make_ldp_mechanism(name, epsilon, np.ones(d))
    tv = np.full(d, t)
    assert mean == pytest.approx(t, abs=1e-12)
    assert mech.conditional_covariance(tv)[0, 0] == pytest.approx(var, rel=1e-12)
    if name != "harmony":
        fn = {"duchi": duchi_variance, "piecewise": piecewise_variance, "hybrid": hybrid_variance}[name]
        assert fn(epsilon, t) == pytest.approx(var, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("name", LDP_MECHANISMS)
def test_variance_is_the_worst_case_over_the_box(name, epsilon):
    # ``variance``: the largest variance of a coordinate's release over t in the box (on a grid of t = s (1, ..),
    # and for NPRR over 200 points per cell of its grid: its rounding term peaks mid-cell)
    mech = make_ldp_mechanism(name, epsilon, np.ones(3))
    grid = np.linspace(-1, 1, 201)
    worst = max(np.diag(mech.conditional_covariance(np.full(3, s))).max() for s in grid)
    if name == "nprr":
        worst = max(worst, float(np.max(mech._variance(np.linspace(-1, 1, 200 * mech.G + 1)))))
    assert mech.variance == pytest.approx(worst, rel=1e-6)


def test_hybrid_threshold_is_where_pm_and_duchi_tie():
    # Wang et al. (2019): eps* ~ 0.61 is where PM's variance at t = 0 equals Duchi's D^2 (each one's worst case
    # at t = 0 as HM mixes them); below it HM is Duchi's mechanism
    e = hybrid_threshold()
    assert 0.609 < e < 0.6095
    assert piecewise_variance(e, 0.0) == pytest.approx(duchi_bound(e) ** 2, rel=1e-12)
    assert hybrid_alpha(0.6) == 0.0 and hybrid_alpha(0.5) == 0.0
    assert hybrid_alpha(0.61) == pytest.approx(1 - math.exp(-0.305), rel=1e-15)
    # below eps* HM's release has Duchi's law (it still makes PM's draws, and ignores them)
    assert hybrid_variance(0.5, 0.3) == duchi_variance(0.5, 0.3)


# --- 2. Duchi et al.'s l-infinity mechanism by enumeration -------------------------------------------
# The release at t: the randomized rounding of t to a vertex x (P(x_j = 1) = (1 + t_j) / 2, independently), then
# z = B u with u in {-1, 1}^d, B = C_d D, on one side of x or the other by T ~ Bern(p), p = e^eps / (e^eps + 1).
# How the ties <u, x> = 0 (even d) are shared decides bias and privacy; three rules are enumerated here:
# * "fold" (the rule the tests hold duchi.py to): w uniform on the cube, folded onto sum(w) >= 0 (w -> -w when
#   sum(w) < 0), u = +-(w o x) by T: P(u | x) = p / 2^(d-1) if <u, x> > 0, (1 - p) / 2^(d-1) if < 0, and 1 / 2^d
#   for a tie. Unbiased with C_d = 2^(d-1) / binom(d-1, floor((d-1)/2)) (Duchi et al.'s odd-d constant, at every
#   d), and exactly eps-LDP;
# * "both": u uniform on {<u, x> >= 0} if T, on {<u, x> <= 0} otherwise (ties in both halves). Unbiased with
#   C_d = (2^(d-1) + binom(d, d/2) / 2) / binom(d-1, d/2) at even d, but a tie then has probability
#   (p + 1 - p) / |S+| against (1 - p) / |S+| at an input where <u, x'> < 0: log(1 + e^eps)-LDP, not eps;
# * "zero_side": {<u, x> > 0} if T, {<u, x> <= 0} otherwise: biased (4.16395 v at d = 2, eps = 1 with C_2 = 3),
#   and not eps-LDP either (the halves have different sizes).
# At odd d there are no ties and the three are one mechanism.


def _cube(d):
    return [np.array(w, dtype=float) for w in product((-1, 1), repeat=d)]


def _linf_law(d, epsilon, x, rule="fold") -> dict:
    """``P(u | x)`` (``z = B u``) at the vertex ``x`` under a tie rule (above), as ``{tuple(u): probability}``."""
    p = math.exp(epsilon) / (math.exp(epsilon) + 1)
    law: dict = {}

    def add(u, prob):
        key = tuple(u)
        law[key] = law.get(key, 0.0) + prob

    cube = _cube(d)
    if rule == "fold":
        for w in cube:
            v = -w if w.sum() < 0 else w
            add(v * x, p / len(cube))
            add(-v * x, (1 - p) / len(cube))
        return law
    positive = [w for w in cube if (w.sum() >= 0 if rule == "both" else w.sum() > 0)]
    negative = [w for w in cube if w.sum() <= 0]
    for w in positive:
        add(w * x, p / len(positive))
    for w in negative:
        add(w * x, (1 - p) / len(negative))
    return law


def _linf_moments(d, epsilon, t, rule="fold", constant=None):
    """``E[Z | t]`` and ``E[Z Z' | t]``, ``B = C_d D`` with ``C_d`` = ``constant`` or ``linf_constant(d)``."""
    B = (linf_constant(d) if constant is None else constant) * duchi_bound(epsilon)
    mean, second = np.zeros(d), np.zeros((d, d))
    for x in _cube(d):
        px = float(np.prod((1 + t * x) / 2))
        for u, prob in _linf_law(d, epsilon, x, rule).items():
            z = B * np.array(u)
            mean += px * prob * z
            second += px * prob * np.outer(z, z)
    return mean, second


def _privacy_loss(d, epsilon, rule) -> float:
    """``max log P(u | x) / P(u | x')`` over outputs and vertices (the law is multilinear in t: the worst case)."""
    cube = _cube(d)
    laws = [_linf_law(d, epsilon, x, rule) for x in cube]
    outputs = sorted({u for law in laws for u in law})
    table = np.array([[law.get(u, 0.0) for u in outputs] for law in laws])
    assert (table > 0).all()
    return math.log((table.max(axis=0) / table.min(axis=0)).max())


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
def test_linf_constant_and_correlation_by_enumeration(d):
    # C_d = 1 / E[v_1] and rho = E[v_1 v_2] for v the folded w (exact fractions); for odd d C_d is Duchi et al.'s
    # 2^(d-1) / binom(d-1, (d-1)/2) (C_1 = 1, C_3 = 2, C_5 = 8/3), and the fold makes C_d = C_(d+1) at even d
    folded = [[-c for c in w] if sum(w) < 0 else list(w) for w in product((-1, 1), repeat=d)]
    e1 = Fraction(sum(v[0] for v in folded), len(folded))
    assert linf_constant(d) == pytest.approx(float(1 / e1), rel=1e-15)
    assert linf_constant(d) == pytest.approx(2 ** (d - 1) / math.comb(d - 1, (d - 1) // 2), rel=1e-15)
    rho = Fraction(sum(v[0] * v[1] for v in folded), len(folded)) if d > 1 else Fraction(0)
    assert rho == 0  # the fold flips both signs together
    assert linf_correlation(d) == float(rho)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
def test_linf_release_is_unbiased_with_its_covariance_exactly(d, epsilon):
    mech = DuchiLinf(epsilon, np.ones(d))
    assert mech.bound == pytest.approx(linf_constant(d) * duchi_bound(epsilon), rel=1e-15)
    for t in (np.linspace(-1, 1, d), np.array([0.3, -0.7, 0.9, 0.05, -0.5, 0.6])[:d], np.zeros(d)):
        mean, second = _linf_moments(d, epsilon, t)
        np.testing.assert_allclose(mean, t, rtol=0, atol=1e-12)
        np.testing.assert_allclose(mech.conditional_covariance(t), second - np.outer(mean, mean), rtol=1e-12,
                                   atol=1e-12 * mech.bound**2)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("epsilon", [0.5, 1.3])
def test_linf_tie_rules_privacy_exactly(d, epsilon):
    # the fold is eps-LDP at every d; ties in both halves lose log(1 + e^eps) at even d (0.97 at eps = 0.5: 1.95
    # times the claim), the "> 0 / <= 0" split log(p |S<=| / ((1 - p) |S>|)); at odd d all three are eps-LDP
    assert _privacy_loss(d, epsilon, "fold") == pytest.approx(epsilon, rel=1e-12)
    if d % 2:
        for rule in ("both", "zero_side"):
            assert _privacy_loss(d, epsilon, rule) == pytest.approx(epsilon, rel=1e-12)
    else:
        ties = math.comb(d, d // 2)
        assert _privacy_loss(d, epsilon, "both") == pytest.approx(math.log1p(math.exp(epsilon)), rel=1e-12)
        sizes = (2 ** (d - 1) + ties / 2) / (2 ** (d - 1) - ties / 2)
        assert _privacy_loss(d, epsilon, "zero_side") == pytest.approx(epsilon + math.log(sizes), rel=1e-12)


def test_linf_ties_on_one_side_only_are_biased_at_even_d():
    # The split "<z, v> > 0 for T = 1, <= 0 for T = 0" with C_2 = 3 gives E[Z | v] = 4.16395 v at d = 2, eps = 1
    # (the reference value; helper-computed C_d (3 e^eps - 1) / (3 (e^eps - 1)), and a local re-implementation
    # measured 4.12-4.17: tests/data/mechanism_references.json, duchi_linf_d2). Ties in both halves with C_2 = 3
    # are unbiased (but not eps-LDP, above); the fold is unbiased with C_2 = 2. At odd d the rules coincide.
    eps = 1.0
    factor = 3 * (3 * math.e - 1) / (3 * (math.e - 1))
    assert factor == pytest.approx(4.16395, abs=5e-6)
    for v in (np.array([0.5, 0.5]), np.array([0.3, -0.2])):
        np.testing.assert_allclose(_linf_moments(2, eps, v, "zero_side", constant=3.0)[0], factor * v, rtol=1e-12)
        np.testing.assert_allclose(_linf_moments(2, eps, v, "both", constant=3.0)[0], v, rtol=1e-12)
        np.testing.assert_allclose(_linf_moments(2, eps, v, "fold", constant=2.0)[0], v, rtol=1e-12)
    for d in (3, 5):
        v = np.linspace(-0.8, 0.6, d)
        for rule in ("zero_side", "both", "fold"):
            np.testing.assert_allclose(_linf_moments(d, eps, v, rule)[0], v, rtol=0, atol=1e-12)
    # the biased split is what the reference file's local re-implementation measured
    local = REFERENCES["duchi_linf_d2"]["local_reimplementation_vertex_split_eps1"]
    for key in ("gt0_le0_[0.5, 0.5]", "gt0_le0_[0.3, -0.2]"):
        assert np.allclose(local[key]["ratio"], factor, rtol=0.02)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_linf_kernel_draws_the_fold_law(d):
    # the kernel's outputs at a vertex (t = x: the rounding is certain) have the fold's frequencies (chi-square over
    # the 2^d outputs), and at even d not those of ties in both halves (the power of the test)
    eps, n = 0.5, N
    mech = DuchiLinf(eps, np.ones(d))
    x = np.array([1.0, -1.0, 1.0, 1.0])[:d]
    out = _draw(mech, x, n, _gen("linf-law", d))
    u = np.rint(out / mech.bound).astype(int)
    assert np.array_equal(np.abs(u), np.ones_like(u))
    outputs = [tuple(c) for c in product((-1, 1), repeat=d)]
    counts = np.array([np.all(u == np.array(c), axis=1).sum() for c in outputs])
    assert counts.sum() == n
    fold = _linf_law(d, eps, x)
    assert stats.chisquare(counts, n * np.array([fold.get(c, 0.0) for c in outputs])).pvalue > 1e-3
    if d % 2 == 0:
        both = _linf_law(d, eps, x, "both")
        assert stats.chisquare(counts, n * np.array([both.get(c, 0.0) for c in outputs])).pvalue < 1e-9


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
def test_piecewise_is_epsilon_ldp_exactly(epsilon):
    # PM's density is C's central piece or the outer pieces: their ratio is e^eps at every pair of inputs (its
    # extremes at t = +-1; checked on a grid of inputs and outputs from the textbook law)
    ts = np.linspace(-1, 1, 21)
    C = piecewise_c(epsilon)
    ys = np.linspace(-C, C, 2001)[1:-1]

    def density(t):
        return sum(np.where((ys > a) & (ys < b), w / (b - a), 0.0) for w, a, b in _law_1d("piecewise", epsilon, t)
                   if b > a)

    table = np.array([density(t) for t in ts])
    assert (table > 0).all()
    assert math.log((table.max(axis=0) / table.min(axis=0)).max()) == pytest.approx(epsilon, rel=1e-9)


# --- 3. the kernel draws its twin's numbers ----------------------------------------------------------


TWIN_CASES = [(name, 2.0, [1.0], [0.3]) for name in ONE_D] + [
    (name, 3.0, BOUNDS[:3], [0.3, -1.0, 0.8]) for name in ONE_D] + [
    (name, 8.0, BOUNDS, [0.3, -0.7, 0.9, 0.05, -0.5]) for name in MULTI] + [
    ("duchi_linf", 1.0, np.ones(4), [0.0, 0.2, -0.9, 1.0]),  # even d: ties
    ("duchi_l2", 1.0, BOUNDS[:3], [0.0, 0.0, 0.0]),  # v = 0: any direction
    ("nprr", 8.0, [1.0], [0.999]),  # G = 2863, x G near the top cell
]


@pytest.mark.parametrize("name, epsilon, bounds, t", TWIN_CASES,
                         ids=[f"{c[0]}-eps{c[1]}-d{len(c[3])}" for c in TWIN_CASES])
def test_kernel_draws_equal_python_twin(name, epsilon, bounds, t):
    mech = make_ldp_mechanism(name, epsilon, bounds)
    t = np.array(t, dtype=float)
    gen_k, gen_p = _gen("twin", name, epsilon), _gen("twin", name, epsilon)
    jitted = _draws(mech.record(lanes=1), kernel_rng(gen_k), t, 400)
    plain = _draws_twin(mech.record(lanes=1), gen_p, t, 400)
    np.testing.assert_array_equal(jitted, plain)
    # the kernel left the generator where numpy's own draws would have
    assert np.array_equal(gen_k.bit_generator.state["state"]["state"], gen_p.bit_generator.state["state"]["state"])
    assert np.isfinite(jitted).all() and len(np.unique(jitted[:, 0])) > 1


@pytest.mark.parametrize("name", ONE_D + MULTI)
def test_inputs_outside_the_box_are_clamped(name):
    # t beyond [-1, 1] (a rounding of g / bounds) is released as the nearest point of the box, draw for draw
    mech = make_ldp_mechanism(name, 4.0, BOUNDS[:3])
    inside = np.array([1.0, -1.0, 0.25])
    outside = np.array([1.0 + 1e-9, -7.0, 0.25])
    np.testing.assert_array_equal(_draw(mech, outside, 300, _gen("clamp", name)),
                                  _draw(mech, inside, 300, _gen("clamp", name)))


# --- 4. lanes: a replication's numbers whatever the width -----------------------------------------


@pytest.mark.slow  # path kernels compiled at 1 and 8 lanes for new records (minutes on a cold cache): CI's slow tier
@pytest.mark.parametrize("model, mechanism, lanes", [("mean", m, 8) for m in LDP_MECHANISMS]
                         + [("linear", "duchi_linf", 8), ("linear", "duchi_l2", 8), ("linear", "duchi_linf", 4)])
def test_lanes_give_each_replication_its_own_numbers(model, mechanism, lanes):
    # Every mechanism on the mean model, the vector ones that draw per lane on the linear model (duchi_linf: its
    # half-cube draw, a rejection loop whose rounds differ per lane, or a fold; duchi_l2: normals), and a lane
    # width other than the default (duchi_linf at 4). lanes + 2 replications: a full call and a padded remainder
    # of 2. Each replication's estimates equal those of one lane and of the plain-Python twin, to the bit
    # (run_chunk: the per-replication arrays the tables are made from).
    reps = lanes + 2
    loaded = ldpsim.load_config(dict(model=model, mechanism=mechanism, epsilon=1.0, n=2000, reps=reps,
                                     methods=["BB"], seed=11))
    study = STUDIES["coverage"]
    for s in loaded.settings:
        one = study.run_chunk(s, loaded.options, loaded.seed, 0, reps, lanes=1)
        wide = study.run_chunk(s, loaded.options, loaded.seed, 0, reps, lanes=lanes)
        twin = study.run_chunk(s, loaded.options, loaded.seed, 0, reps, twin=True)
        assert set(one) == set(wide) == set(twin) and "theta_bar" in one
        for key in one:
            np.testing.assert_array_equal(wide[key], one[key], err_msg=key)
            np.testing.assert_array_equal(twin[key], one[key], err_msg=key)
        theta = one["theta_bar"]
        assert np.isfinite(theta).all() and len(np.unique(theta[:, 0])) == reps  # different replications


# --- 5. the public implementations ---------------------------------------------------------------------


def _var_tolerance(var, mu4, n):
    """Z SEs of a sample variance (ddof = 1) of n draws: sqrt((mu4 - var^2) / n), plus (Z^2 + 1) var / n.

    The sample variance is ``sum (X - mu)^2 / (n - 1) - n (m - mu)^2 / (n - 1)``; the first term has the SE
    from the fourth moment, the second (the mean estimated) is ``var / n`` times a chi-square with one degree
    of freedom, below Z^2 var / n but for 6e-5. It matters where the first vanishes: two points symmetric
    about the mean (Duchi's +-D at t = 0; NPRR at G = 1, x = 1/2) have a constant (X - mu)^2.
    """
    return Z * math.sqrt(max(mu4 - var**2, 0.0) / n) + (Z**2 + 1) * var / n


SOK_ROWS = [(name, row) for name in ("duchi", "piecewise", "hybrid", "harmony")
            for row in REFERENCES["mechanisms"][name]]


@pytest.mark.parametrize("name, row", SOK_ROWS, ids=[f"{n}-eps{r['epsilon']}-t{r['t']}" for n, r in SOK_ROWS])
def test_sok_ldp_draws_agree_with_our_mean_and_variance(name, row):
    # mad-lab-fau/sok-ldp-data-analysis at df6372a (Wang2019Duchi1D, Wang2019Piecewise1D, Wang2019Hybrid1D,
    # Nguyen2016 at d = 5, coordinate 0), 1e6 draws at each (eps, t): their sample mean within 4 SE of t and their
    # sample variance (ddof = 1) within 4 SE of ours. The SE of the sample variance is sqrt((mu4 - var^2) / n)
    # with mu4 the exact fourth central moment of the law: the normal-theory var sqrt(2 / n) would be 10x too
    # small for PM at eps = 8 (kurtosis ~ 80) and far too large for Duchi's two points at t = 0 (a constant
    # square). (sok's HM switches at eps = 0.61, ours at 0.6094: no row lies between.)
    eps, t, n = row["epsilon"], row["t"], row["n"]
    d = row.get("d", 1)
    mech = make_ldp_mechanism(name, eps, np.ones(d))
    var = mech.conditional_covariance(np.full(d, t))[0, 0]
    _, law_var, mu4 = _central_moments(_law_1d(name, eps, t, d))
    assert var == pytest.approx(law_var, rel=1e-12) and var == pytest.approx(row["textbook_var"], rel=1e-12)
    assert abs(row["mean"] - t) < Z * math.sqrt(var / n)
    assert abs(row["var"] - var) < _var_tolerance(var, mu4, n)
    if name in ("duchi", "harmony"):  # two (three) points: the extremes are ours exactly
        top = (d if name == "harmony" else 1) * duchi_bound(eps)
        assert row["max"] == pytest.approx(top, rel=1e-12) and row["min"] == pytest.approx(-top, rel=1e-12)


@pytest.mark.parametrize("row", REFERENCES["nprr"]["G_r"], ids=lambda r: f"eps{r['epsilon']}")
def test_nprr_entropy_rule_gives_the_authors_grid_and_keep_probability(row):
    # WannabeSmith/nprr at 36edeca, nprr/mechanisms.py::r_G_opt_entropy (which returns (r, G))
    eps = row["epsilon"]
    G, r = nprr_entropy_rule(eps)
    assert (G, r) == (row["G"], row["r"])
    mech = NPRR(eps, [1.0])
    assert (mech.G, mech.r) == (row["G"], row["r"])
    assert nprr_epsilon(G, r) == pytest.approx(eps, rel=1e-12)


def _nprr_pmf(G, r, x, uniform="textbook"):
    """P(y = k / G), k = 0..G, of NPRR's raw output at ``x`` in [0, 1].

    Stochastic rounding of ``x`` to the grid, kept w.p. ``r``; otherwise ``textbook``: uniform on the G + 1 points
    (Waudby-Smith et al. 2023, and nprr.py); ``as_coded``: ``np.round(beta(1, 1) * G) / G`` (WannabeSmith/nprr's
    mechanisms.py): the endpoints get 1 / (2G), the interior points 1 / G (the same for G = 1).
    """
    pmf = np.zeros(G + 1)
    low = min(math.floor(x * G), G - 1)
    frac = x * G - low
    pmf[low] += r * (1 - frac)
    pmf[low + 1] += r * frac
    if uniform == "textbook":
        noise = np.full(G + 1, 1.0 / (G + 1))
    else:
        noise = np.full(G + 1, 1.0 / G)
        noise[[0, G]] = 1.0 / (2 * G)
    return pmf + (1 - r) * noise


def _pmf_moments(pmf):
    y = np.arange(pmf.size) / (pmf.size - 1)
    mean = float(pmf @ y)
    return mean, float(pmf @ (y - mean) ** 2), float(pmf @ (y - mean) ** 4)


@pytest.mark.parametrize("row", REFERENCES["nprr"]["draws"], ids=lambda r: f"eps{r['epsilon']}-x{r['x']}")
def test_nprr_reference_draws(row):
    # WannabeSmith/nprr's nprr(x, r, G), 1e6 draws (raw outputs y in [0, 1]). Their mean is r x + (1 - r) / 2,
    # ours too. Their variance is not the textbook one: their uniform branch is np.round(beta(1,1) G) / G,
    # whose endpoints have probability 1 / (2G) (a smaller variance for G >= 2; the same law for G = 1). Our
    # release is the textbook's, debiased to the t = 2x - 1 scale: Var = 4 Var(y) / r^2.
    eps, x, n, G, r = row["epsilon"], row["x"], row["n"], row["G"], row["r"]
    mech = NPRR(eps, [1.0])
    assert (mech.G, mech.r) == (G, r)
    textbook = _pmf_moments(_nprr_pmf(G, r, x))
    coded = _pmf_moments(_nprr_pmf(G, r, x, "as_coded"))
    # the means: ours, the file's theory, both laws, and their sample within 4 SE
    want_mean = r * x + (1 - r) / 2
    assert row["mean_raw_theory"] == pytest.approx(want_mean, rel=1e-12)
    assert textbook[0] == pytest.approx(want_mean, rel=1e-12) and coded[0] == pytest.approx(want_mean, rel=1e-12)
    assert abs(row["mean_raw"] - want_mean) < Z * math.sqrt(coded[1] / n)
    # our variance is the textbook law's, which is the file's textbook value
    ours = mech.conditional_covariance([2 * x - 1])[0, 0]
    assert ours == pytest.approx(4 * textbook[1] / r**2, rel=1e-12)
    assert ours == pytest.approx(4 * row["var_raw_theory_textbook_uniform"] / r**2, rel=1e-12)
    # their sample variance is their law's, within 4 SE (from its exact fourth moment)
    assert coded[1] == pytest.approx(row["var_raw_theory_as_coded_round_beta"], rel=1e-12)
    se_var = math.sqrt((coded[2] - coded[1] ** 2) / n)
    assert abs(row["var_raw"] - coded[1]) < _var_tolerance(coded[1], coded[2], n)
    freqs = np.zeros(G + 1)
    for key, count in row["output_freqs"].items():
        freqs[round(float(key) * G)] += count
    assert freqs.sum() == n
    assert stats.chisquare(freqs, n * _nprr_pmf(G, r, x, "as_coded")).pvalue > 1e-3
    if G == 1:
        assert textbook[1] == pytest.approx(coded[1], rel=1e-12)
    else:  # the difference is real: their draws reject the textbook law (ours) by far
        assert abs(row["var_raw"] - textbook[1]) > 50 * se_var
        assert stats.chisquare(freqs, n * _nprr_pmf(G, r, x)).pvalue < 1e-12


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0, 8.0])
def test_nprr_is_epsilon_ldp_exactly(epsilon):
    # P(y = k / G | x) at inputs on the grid (where the rounding is a point mass: the extremes); the round-beta
    # uniform of WannabeSmith/nprr loses log(1 + 2 G r / (1 - r)) instead for G >= 2 (the reference file's
    # eps_actual_of_their_nprr_release)
    mech = NPRR(epsilon, [1.0])
    G, r = mech.G, mech.r
    xs = np.arange(G + 1) / G if G < 100 else np.array([0.0, 0.5, 1.0, 1 / G])
    for kind, want in (("textbook", epsilon), ("as_coded", math.log1p(2 * G * r / (1 - r)) if G > 1 else epsilon)):
        laws = np.array([_nprr_pmf(G, r, x, kind) for x in xs])
        assert math.log((laws.max(axis=0) / laws.min(axis=0)).max()) == pytest.approx(want, rel=1e-12)
    row = next(row for row in REFERENCES["nprr"]["G_r"] if row["epsilon"] == epsilon)
    their = math.log1p(2 * G * r / (1 - r)) if G > 1 else epsilon
    assert their == pytest.approx(row["eps_actual_of_their_nprr_release"], rel=1e-12)


@pytest.mark.parametrize("epsilon, x", [(2.0, 0.0), (2.0, 0.3), (4.0, 0.77), (0.5, 0.5)])
def test_our_nprr_draws_the_textbook_law(epsilon, x):
    # the grid point behind each release (y = (r (t' + 1) / 2 + (1 - r) / 2), k = y G) has the textbook pmf,
    # not the round-beta one of WannabeSmith/nprr
    mech = NPRR(epsilon, [1.0])
    G, r = mech.G, mech.r
    out = _draw(mech, [2 * x - 1], N, _gen("nprr-law", epsilon, x))[:, 0]
    k = np.rint((r * (out + 1) / 2 + (1 - r) / 2) * G).astype(int)
    counts = np.bincount(k, minlength=G + 1)
    assert counts.size == G + 1
    assert stats.chisquare(counts, N * _nprr_pmf(G, r, x)).pvalue > 1e-3
    if G >= 2:
        assert stats.chisquare(counts, N * _nprr_pmf(G, r, x, "as_coded")).pvalue < 1e-6
    mean, var, _ = _pmf_moments(_nprr_pmf(G, r, x))
    assert mech.conditional_covariance([2 * x - 1])[0, 0] == pytest.approx(4 * var / r**2, rel=1e-12)


# --- 6. the models' S ------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
@pytest.mark.parametrize("name", LDP_MECHANISMS)
def test_mean_model_gradient_covariance_is_a_quadrature(name, epsilon):
    # theta - X released as (theta - 1/2) + M(t) / 2, t = 1 - 2X ~ U(-1, 1):
    # S = Var(X) + E[Var(M(t))] / 4 = 1/12 + (1/8) int_{-1}^{1} Var(M(t)) dt, by quadrature of the conditional
    # covariance, cell by cell of NPRR's grid (its rounding term f (1 - f) is a parabola per cell; G = 51 at eps 4)
    model = MeanModel(epsilon=epsilon, mechanism=name)
    mech = model.mechanism

    def var(t):
        return mech.conditional_covariance([t])[0, 0]

    edges = np.linspace(-1.0, 1.0, mech.G + 1) if name == "nprr" else np.array([-1.0, 1.0])
    integral = sum(integrate.quad(var, a, b, epsabs=0, epsrel=1e-13)[0] for a, b in zip(edges[:-1], edges[1:]))
    assert model.gradient_covariance()[0, 0] == pytest.approx(1 / 12 + integral / 8, rel=1e-10)


@pytest.mark.parametrize("name", LDP_MECHANISMS)
def test_expected_covariance_averages_the_conditional_one(name):
    # E[Cov(M(t) | t)] from E[t t'] alone (NPRR: and E[f (1 - f)]) equals the average of the conditional covariance
    # over any law of t: 500 points of the box of d = 4 (unequal bounds)
    gen = _gen("expected", name)
    mech = make_ldp_mechanism(name, 2.0, BOUNDS[:4])
    ts = gen.uniform(-1, 1, (500, 4)) ** 3
    average = np.mean([mech.conditional_covariance(t) for t in ts], axis=0)
    second = ts.T @ ts / len(ts)
    extra = {"rounding": mech.rounding_term(ts).mean(axis=0)} if name == "nprr" else {}
    if name == "nprr":
        assert mech.expected_covariance(second) is None  # it needs the rounding too
    np.testing.assert_allclose(mech.expected_covariance(second, **extra), average, rtol=1e-11, atol=1e-12)


def _linear_gradients_at_truth(model, m, gen):
    # g = clip(x' beta - y) x with y = x' beta + e: clip(-e) x, x = (1, truncated normals on [-1, 1])
    x = np.ones((m, model.dim))
    x[:, 1:] = stats.truncnorm(-1, 1).rvs(size=(m, model.dim - 1), random_state=gen)
    e = gen.standard_normal(m)
    return np.clip(-e, -model.clip, model.clip)[:, None] * x


@pytest.mark.parametrize("name", [m for m in LDP_MECHANISMS if m != "nprr"])
def test_linear_model_noise_covariance_averages_the_release_covariance(name):
    # S_LDP = E_g[diag(b) Cov(M(g / b) | g) diag(b)] over gradients at the truth, by Monte Carlo over g (4 SE per
    # entry); NPRR's needs the law of the rounding and is estimated (truth_of) instead
    model = LinearModel(epsilon=2.0, mechanism=name)
    mech = model.mechanism
    b = mech.bounds
    g = _linear_gradients_at_truth(model, 4000, _gen("linear", name))
    per = np.array([np.outer(b, b) * mech.conditional_covariance(gi / b) for gi in g])
    mean, se = per.mean(axis=0), per.std(axis=0, ddof=1) / math.sqrt(len(per))
    want = model.noise_covariance()
    assert (np.abs(mean - want) <= Z * se + 1e-12 * np.abs(want).max()).all(), (mean, want, se)
    np.testing.assert_allclose(model.gradient_covariance(), model.sgd_covariance() + want, rtol=1e-14)


def _estimate(model, samples):
    # truth.py's estimator, bypassing its caches: S of the privatized gradient at theta* through the kernels
    theta = np.asarray(model.theta_star(), dtype=float)
    return truth_module.summarize_sums(theta, truth_module.raw_sums(model.kernel_params(), theta, samples))


#: The fast tier checks one release end to end (PM: released_scalar on a BoundedNoise record); each other record
#: compiles its own truth kernel (7-45 s each, 3 min in all on a cold cache): those run in CI's slow tier.
KERNEL_S_CASES = [pytest.param(name, epsilon, marks=() if name == "piecewise" and epsilon == 1.0
                               else pytest.mark.slow) for name in LDP_MECHANISMS for epsilon in (1.0, 4.0)]


@pytest.mark.parametrize("name, epsilon", KERNEL_S_CASES)
def test_mean_model_kernel_gradient_has_the_stated_covariance(name, epsilon):
    # end to end: the mean model's released gradient (released_scalar on the BoundedNoise record) at theta* has
    # mean 0 and covariance gradient_covariance(), within 4 SE of truth.py's estimate (2^20 observations)
    model = MeanModel(epsilon=epsilon, mechanism=name)
    est = _estimate(model, 1 << 20)
    assert abs(est.mean[0]) < Z * est.mean_se[0]
    assert abs(est.S[0, 0] - model.gradient_covariance()[0, 0]) < Z * est.S_se[0, 0]


@pytest.mark.slow  # truth kernels compiled for six new records: CI's slow tier
@pytest.mark.parametrize("name", ["duchi", "harmony", "duchi_linf", "piecewise_d", "duchi_l2", "hybrid_d"])
def test_linear_model_kernel_gradient_has_the_stated_covariance(name):
    # as above for the linear model (d = 4, add_released): every entry of S within 4 SE (2^18 observations)
    model = LinearModel(epsilon=2.0, mechanism=name)
    est = _estimate(model, 1 << 18)
    assert (np.abs(est.mean) < Z * est.mean_se).all()
    assert (np.abs(est.S - model.gradient_covariance()) < Z * est.S_se).all(), (est.S, model.gradient_covariance())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["duchi", "harmony", "duchi_linf", "piecewise_d"])
def test_linear_model_gradient_covariance_matches_truth_of(name):
    # the estimate runs use (truth_of: 2^25 evaluations, cached): every entry within 4 of its SEs
    model = LinearModel(epsilon=1.0, mechanism=name)
    truth = truth_module.truth_of(model)
    assert (np.abs(truth.S - model.gradient_covariance()) < Z * truth.S_se).all()


def test_truth_cache_key_covers_the_ldp_kernels():
    # truth_of caches S on disk under a key that hashes the estimator's sources; the LDP releases live in
    # privacy/mechanisms/ (NPRR's S of the regression models is that estimate), so an edit there must change the key
    seen = []
    original = truth_module.source_hash

    def spy(names=None):
        seen.append(list(names or []))
        return original(names)

    truth_module.source_hash = spy
    try:
        truth_module._estimator_source.__wrapped__()
    finally:
        truth_module.source_hash = original
    names = seen[-1]
    assert not names or any(n in ("privacy/mechanisms", "privacy", "privacy/") for n in names), names


@pytest.fixture
def fresh_truths(monkeypatch, tmp_path):
    """No NPRR truth in memory or on disk, nothing remembered by validation, and small estimates."""
    from ldpsim.recursion import keys

    monkeypatch.setenv("LDPSIM_CACHE", str(tmp_path))
    monkeypatch.setattr(truth_module, "_MEMO", {})
    monkeypatch.setattr(keys, "_MODEL_PROBLEMS", {})
    monkeypatch.setattr(keys, "_PENDING", {})
    monkeypatch.setattr(truth_module, "default_samples", lambda d: 16 * truth_module.BATCHES)
    calls = []
    original = truth_module.raw_sums
    # the estimates made (not the pilot that times a draw first: one batch of a few draws)
    monkeypatch.setattr(truth_module, "raw_sums",
                        lambda *a, **k: (k.get("batches") == 1 or calls.append(a[1])) and None or original(*a, **k))
    return keys, calls


NPRR_RUN = {"model": "linear", "mechanism": "nprr", "epsilon": [1, 2], "n": 1000, "reps": 2, "methods": ["BM", "oracle"]}


def test_validation_leaves_nprrs_truth_for_the_compile_step(fresh_truths):
    # NPRR's S is a Monte Carlo estimate (for mechanisms_linear's five epsilons 6 s of compiling _sums and 13 s of
    # draws on one core): validating the config leaves it for the compile step, which makes it beside the kernels'
    # compilation (Study.settle, from compiling.prepare) and then checks what it gives
    keys, calls = fresh_truths
    config = ldpsim.load_config(NPRR_RUN)
    assert calls == [] and len(keys._PENDING) == 2
    config.study.settle(config)
    assert len(calls) == 2 and not keys._PENDING
    config.study.settle(config)  # settled once
    assert len(calls) == 2


@pytest.mark.slow  # a run of the linear model's kernel, compiled for NPRR: 13 s of the fast tier
def test_a_run_records_the_truth_it_made_beside_the_compilation(fresh_truths, tmp_path):
    keys, calls = fresh_truths
    result = ldpsim.run(NPRR_RUN, out=tmp_path / "out", n_jobs=1, progress=False)
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert len(calls) == 2 and "truth_pending" not in meta
    assert [e["epsilon"] for e in meta["truth"]] == [1.0, 2.0] and all("sigma" in e for e in meta["truth"])
    assert result.meta["truth"] == meta["truth"]


def test_a_deferred_truth_that_is_not_finite_is_refused_at_the_compile_step(fresh_truths, monkeypatch):
    keys, calls = fresh_truths
    original = truth_module.summarize_sums

    def broken(theta, sums):
        truth = original(theta, sums)
        truth.S = np.full_like(truth.S, np.nan)
        return truth

    monkeypatch.setattr(truth_module, "summarize_sums", broken)
    config = ldpsim.load_config(NPRR_RUN)
    with pytest.raises(ldpsim.ConfigError, match=r"model 'linear' cannot be computed in floating point at epsilon = 1"
                       r".*asymptotic variance is not a positive finite number"):
        config.study.settle(config)


@pytest.mark.parametrize("epsilon", [20.0, 700.0, 1e300])
def test_nprr_beyond_its_largest_grid_is_refused_in_one_line(epsilon):
    # the entropy rule's grid grows like e^epsilon (G = 2863 at 8, 4.7e8 at 20, 1e303 at 700): numpy's "Maximum
    # allowed size exceeded" came from deep inside (issue 44); the largest epsilon allowed is said
    from ldpsim.privacy.mechanisms.nprr import MAX_GRID, max_grid_epsilon

    with pytest.raises(ldpsim.ConfigError, match=r"^mechanism = 'nprr' at epsilon = .* per coordinate: the entropy "
                       r"rule's grid would have G = .* cells, more than the 10\^6 ldpsim builds NPRR with; allowed: "
                       r"epsilon <= 13\.\d per coordinate"):
        ldpsim.load_config({"model": "mean", "mechanism": "nprr", "epsilon": epsilon, "n": 1000, "reps": 2})
    edge = max_grid_epsilon()
    assert nprr_entropy_rule(edge)[0] <= MAX_GRID < nprr_entropy_rule(edge + 0.1)[0]
    assert NPRR(8.0, np.ones(1)).G == 2863  # the committed runs' budgets are untouched
