"""Gaussian differential privacy: the delta(epsilon) curve, its inverses, the mechanism."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from ldpsim.privacy.gdp import GaussianGDP, compose, gdp_delta, gdp_epsilon, gdp_mu


@pytest.mark.parametrize("epsilon,delta", [(1.0, 0.1269), (2.0, 0.0209), (3.0, 0.0015)])
def test_mu_one_matches_the_published_deltas(epsilon, delta):
    # ../shared/reference/corrections.md item 5 (values of 004, Section 5.1), to the digits printed
    assert gdp_delta(epsilon, 1.0) == pytest.approx(delta, abs=5e-5)


@pytest.mark.parametrize("epsilon,mu", [(0.5, 0.3), (1.0, 1.0), (4.0, 2.5), (20.0, 6.0)])
def test_delta_is_the_textbook_formula(epsilon, mu):
    naive = stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2)
    assert gdp_delta(epsilon, mu) == pytest.approx(naive, rel=1e-9)


def test_delta_is_positive_and_falls_with_epsilon_far_into_the_tail():
    # the cancellation-free form needs no e^eps (which overflows past eps = 709)
    values = [gdp_delta(eps, 1.0) for eps in (1.0, 5.0, 10.0, 20.0, 30.0)]
    assert all(a > b > 0.0 for a, b in zip(values, values[1:]))
    # delta(30) = Phi(-29.5) (1 - ...) ~ 1e-191: its log within 1% of log Phi(-29.5)
    assert math.log(values[-1]) == pytest.approx(stats.norm.logcdf(-29.5), rel=1e-2)
    assert gdp_delta(800.0, 1.0) == 0.0  # below the smallest double, not an overflow


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-10])
def test_inverses(mu, delta):
    eps = gdp_epsilon(mu, delta)
    assert gdp_delta(eps, mu) == pytest.approx(delta, rel=1e-8)
    assert gdp_mu(eps, delta) == pytest.approx(mu, rel=1e-8)


def test_mechanism_and_composition():
    mech = GaussianGDP(1.0, 2.0)
    assert mech.sigma == 2.0 and mech.variance == 4.0
    assert "mu = 1 GDP" in mech.guarantee and "delta = 0.127" in mech.guarantee
    assert GaussianGDP(math.inf, 2.0).sigma == 0.0
    assert compose(*[0.5] * 4) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="mu must be > 0"):
        GaussianGDP(0.0, 1.0)
