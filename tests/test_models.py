"""Randomized response and the quantile model: unbiasedness, variance, truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.engine.dialect.jit import jit
from ldpsim.privacy.mechanisms import RandomizedResponse, randomized_response
from ldpsim.models import QuantileModel
from ldpsim.models.base import privatized_gradient


@jit
def _debiased_reports(bit, gen, flip_prob, scale, shift, draws):
    total = 0.0
    total2 = 0.0
    for _ in range(draws):
        y = scale * (1.0 if randomized_response(bit == 1.0, gen, flip_prob) else 0.0) - shift
        total += y
        total2 += y * y
    return total / draws, total2 / draws


@jit
def _gradient_moments(params, theta, gen, draws):
    total = 0.0
    total2 = 0.0
    for _ in range(draws):
        g = privatized_gradient(params, theta, gen)
        total += g
        total2 += g * g
    return total / draws, total2 / draws


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("bit", [0.0, 1.0])
def test_randomized_response_is_unbiased_with_stated_variance(epsilon, bit):
    rr = RandomizedResponse(epsilon)
    draws = 2_000_000
    mean, second = _debiased_reports(bit, np.random.default_rng(11), rr.flip_prob, rr.scale, rr.shift, draws)
    var = second - mean**2
    se_mean = math.sqrt(rr.variance / draws)
    assert abs(mean - bit) < 4 * se_mean  # 4 Monte Carlo SEs
    # the debiased report takes two values: its variance is exactly p(1-p) scale^2
    # and the sample variance has SE <= scale^2 / sqrt(draws)
    assert abs(var - rr.variance) < 4 * rr.scale**2 / math.sqrt(draws)


def test_randomized_response_constants():
    rr = RandomizedResponse(1.0)
    p = math.e / (1 + math.e)
    assert math.isclose(rr.flip_prob, 1 - p)
    assert math.isclose(rr.scale, 1 / (2 * p - 1))
    assert math.isclose(rr.shift, (1 - p) / (2 * p - 1))
    # docs/corrections.md item 1: p(1-p)/(2p-1)^2 = e/(e-1)^2 = 0.9207, not e/(e-1)
    assert math.isclose(rr.variance, p * (1 - p) / (2 * p - 1) ** 2)
    assert round(rr.variance, 4) == 0.9207
    inf = RandomizedResponse(math.inf)
    assert (inf.flip_prob, inf.scale, inf.shift, inf.variance) == (0.0, 1.0, 0.0, 0.0)


@pytest.mark.parametrize("epsilon", [1.0, math.inf])
@pytest.mark.parametrize("theta", [-0.7, 0.0, 1.3])
def test_quantile_gradient_unbiased_for_loss_gradient(epsilon, theta):
    tau = 0.9
    model = QuantileModel(tau, epsilon)
    draws = 1_000_000
    mean, second = _gradient_moments(model.kernel_params(), theta, np.random.default_rng(4), draws)
    truth = stats.norm.cdf(theta) - tau  # R(theta) = F(theta) - tau
    var = second - mean**2
    assert abs(mean - truth) < 4 * math.sqrt(var / draws)
    # variance = F(1-F) of the indicator + the mechanism's variance
    f = stats.norm.cdf(theta)
    expected_var = f * (1 - f) + (0.0 if model.mechanism is None else model.mechanism.variance)
    assert abs(var - expected_var) < 0.01 * expected_var


def test_quantile_truth_and_oracle_variance():
    model = QuantileModel(0.5, 1.0)
    assert model.theta_star()[0] == 0.0
    e = math.e
    sigma = (0.25 + e / (e - 1) ** 2) / stats.norm.pdf(0.0) ** 2
    assert math.isclose(model.sigma()[0, 0], sigma, rel_tol=1e-12)
    assert math.isclose(QuantileModel(0.9, 1.0).theta_star()[0], 1.2815515655446004)
    # non-private: tau(1-tau)/f^2
    assert math.isclose(QuantileModel(0.5, math.inf).sigma()[0, 0], 0.25 / stats.norm.pdf(0.0) ** 2)
