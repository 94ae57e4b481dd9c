"""Numerical composition by PLD (ldpsim/privacy/composition.py) and the SAGD guarantees built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_module
from scipy import optimize, stats

from ldpsim.privacy.composition import advanced_composition, basic_composition, pld_epsilon, tightest
from ldpsim.studies.sagd.accounting import lap_privacy, sparse_privacy


def _rr_composition_epsilon(epsilon0: float, k: int, delta: float) -> float:
    """Exact epsilon at delta of k epsilon0-DP mechanisms (Kairouz, Oh & Viswanath 2015, Theorem 3.3).

    The k-fold randomized-response pair: the privacy loss is (k - 2 i) epsilon0 with probability
    Binomial(k, q)(i), q = 1 / (1 + e^epsilon0); delta(eps) = E[(1 - e^(eps - L))_+].
    """
    i = np.arange(k + 1)
    weight = stats.binom.pmf(i, k, 1.0 / (1.0 + math.exp(epsilon0)))
    loss = (k - 2 * i) * epsilon0

    def excess(eps):
        return float(np.sum(weight * np.clip(-np.expm1(eps - loss), 0.0, None))) - delta

    return optimize.brentq(excess, 0.0, k * epsilon0, xtol=1e-12)


@pytest.mark.parametrize("epsilon0, k", [(0.006, 224), (0.00242, 5438), (0.3, 40)])
def test_pure_dp_composition_is_the_optimal_composition_from_above(epsilon0, k):
    # PLD of the randomized-response pair against the exact binomial sum: the same up to root-finding
    # tolerances (the pair lies on the grid exactly), never below by more than 1e-9 relative, at most 0.1% above.
    # 0.00242 is a value dp-accounting's from_privacy_parameters rounds unequally (+1% epsilon at k = 5438)
    exact = _rr_composition_epsilon(epsilon0, k, 1e-5)
    ours = pld_epsilon(1e-5, pure=[(epsilon0, k)])
    assert exact * (1 - 1e-9) <= ours <= exact * 1.001


@pytest.mark.parametrize("a, delta", [(0.5, 1e-3), (1.0, 1e-5), (3.0, 1e-6)])
def test_one_laplace_mechanism_against_its_closed_form(a, delta):
    # Lap(1) at shift a: delta(eps) = 1 - e^((eps - a) / 2) on [0, a], so eps(delta) = a + 2 ln(1 - delta)
    exact = a + 2.0 * math.log1p(-delta)
    assert exact <= pld_epsilon(delta, laplace=[(a, 1)]) <= exact + 1e-3 * a


@pytest.mark.parametrize("a", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("split", [(0.5, 0.5), (0.05, 0.95), (1 / 3, 1 / 3, 1 / 3)])
def test_one_coordinate_laplace_pair_dominates_a_split_shift(a, split):
    # i.i.d. Lap(1) noise at a shift of l1 norm a split over coordinates: its hockey-stick divergence
    # (pessimistic PLD, an upper bound) never exceeds the one-coordinate pair's exact 1 - e^((eps - a) / 2)
    upper = None
    for w in split:
        part = pld_module.from_laplace_mechanism(1.0, sensitivity=a * w, value_discretization_interval=1e-4)
        upper = part if upper is None else upper.compose(part)
    for eps in np.linspace(0.0, 0.999 * a, 200):
        assert upper.get_delta_for_epsilon(eps) <= -math.expm1((eps - a) / 2.0)
    # not vacuous: the split pair does leak (delta(0) = its total variation distance > 0)
    assert upper.get_delta_for_epsilon(0.0) > 0.1 * -math.expm1(-a / 2.0)


def test_tightest_takes_the_smallest_finite_figure():
    assert tightest({"PLD": 0.3, "Thm 3.20": 0.44, "basic": 1.3}) == ("PLD", 0.3)
    assert tightest({"PLD": math.nan, "Thm 3.20": math.inf, "basic": 2.0}) == ("basic", 2.0)
    assert tightest({"PLD": None}) == ("none", math.inf)
    assert pld_epsilon(1e-5, laplace=[(0.1, 0)]) == 0.0


def test_sagd_sparse_guarantee_at_sigma_1():
    # sagd_concentration, logistic, n = 2000, sigma = 1, C_s = 112, delta = 1e-5 (results/sagd_concentration):
    # D = 2 G1 / |S1| = 0.006; the 224 pure mechanisms of 0.006 by Thm 3.20 give 0.439 (checked by hand:
    # sqrt(2 * 224 ln 1e5) 0.006 + 224 * 0.006 (e^0.006 - 1)), the 112 answers of 0.012 gave 0.626
    p = sparse_privacy(3.0, 2000, 1.0, 112, 1e-5)
    assert p["epsilon_advanced"] == pytest.approx(
        math.sqrt(2 * 224 * math.log(1e5)) * 0.006 + 224 * 0.006 * math.expm1(0.006), rel=1e-12)
    assert p["epsilon_advanced"] == pytest.approx(0.4390, abs=1e-4)
    assert p["epsilon_advanced"] < advanced_composition(0.012, 112, 1e-5)[0] == pytest.approx(0.6256, abs=1e-4)
    assert p["epsilon_basic"] == basic_composition(0.012, 112)[0]
    # PLD: 112 AboveThresholds (generic 0.006-DP) and 112 Laplace answers, at least the exact 224-fold RR bound's
    # 1 - 0.001 (the Laplace answers are dominated by RR) and well below Thm 3.20
    exact_pure = _rr_composition_epsilon(0.006, 224, 1e-5)
    assert 0.95 * exact_pure < p["epsilon_pld"] <= exact_pure * 1.001
    assert p["epsilon"] == p["epsilon_pld"] < 0.7 * p["epsilon_advanced"] and p["accountant"] == "PLD"


def test_sagd_lap_guarantee_and_its_lemma1_use_the_tightest():
    p = lap_privacy(3.0, 2000, 1.0, 445, 1, 1e-5)
    assert p["epsilon_advanced"] == pytest.approx(advanced_composition(0.003, 445, 1e-5)[0])
    assert p["epsilon"] == p["epsilon_pld"] == pytest.approx(0.2064, abs=2e-4)
    # the Laplace PLD is at most the generic pure-DP one (the Laplace pair is dominated by RR)
    assert p["epsilon_pld"] <= pld_epsilon(1e-5, pure=[(0.003, 445)])
    # large steps (sagd_generalization: eps0 = 16): PLD below basic composition, Thm 3.20 far above both
    big = lap_privacy(8.0, 100, 0.01, 3000, 1, 1e-5)
    assert big["epsilon_pld"] < big["epsilon_basic"] < big["epsilon_advanced"] and big["accountant"] == "PLD"
