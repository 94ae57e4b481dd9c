"""Interval methods on cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal, stats

from ldpsim.inference import intervals as inference
from ldpsim.inference.critical_values import (_RS_COMPUTED, _solve_critical_value, random_scaling_coverage,
                                              random_scaling_critical_value)
from ldpsim.models import QuantileModel
from ldpsim.inference.streaming import PathState, StreamLayout
from ldpsim.recursion.twins import state_from_definitions

# Abadir & Paruolo (1997), as tabulated by Lee, Liao, Seo & Shin (2022); 99%: the
# 99.5% quantile of the same law (reference/corrections.md, item 4).
PUBLISHED_SN = {0.80: 3.875, 0.90: 5.323, 0.95: 6.747, 0.99: 10.017}


@pytest.mark.parametrize("level,value", PUBLISHED_SN.items())
def test_sn_critical_values_match_published(level, value):
    # published to 3 decimals: agree within half a unit in the last place plus rounding
    assert abs(random_scaling_critical_value(level) - value) < 5e-4


def test_sn_critical_value_inverts_coverage_and_increases():
    levels = [0.5, 0.8, 0.9, 0.95, 0.99, 0.999]
    values = [random_scaling_critical_value(lv) for lv in levels]
    assert all(a < b for a, b in zip(values, values[1:]))
    for lv, cv in zip(levels, values):
        assert abs(random_scaling_coverage(cv) - lv) < 1e-9


@pytest.mark.parametrize("level", sorted(_RS_COMPUTED))
def test_sn_critical_values_kept_are_the_computed_ones(level):
    # the kept table is what the solver gives (to its tolerance, xtol 1e-12; on this
    # platform to the bit), so a run at a kept level and one at level + 1e-16 agree
    assert _solve_critical_value(level) == pytest.approx(_RS_COMPUTED[level], rel=0, abs=2e-12)
    assert random_scaling_critical_value(level) == _RS_COMPUTED[level]


def test_sn_critical_value_rejects_unsupported_level():
    with pytest.raises(ValueError, match="level = 0.01"):
        random_scaling_critical_value(0.01)


def _state(theta_bar=0.0, n=10**6):
    return PathState(np.array([theta_bar]), np.array([1.0]), np.zeros((0, 1)), np.zeros((0, 1)), n)


def test_oracle_length_closed_form():
    # 2 z sqrt(Sigma / n) with Sigma = (tau(1-tau) + e/(e-1)^2) / phi(0)^2: 0.00892 (corrections.md, item 1)
    n = 10**6
    model = QuantileModel(0.5, 1.0)
    layout = StreamLayout(n, 0, 0, np.zeros(0, dtype=np.int64))
    lo, hi = inference.oracle(_state(0.3, n), layout, sigma=model.sigma(), level=0.9)
    length = float(hi[0] - lo[0])
    assert round(length, 5) == 0.00892
    assert math.isclose(lo[0] + hi[0], 0.6)


@pytest.mark.parametrize("law", inference.MULTIPLIERS)
def test_multipliers_have_mean_zero_variance_one(law, rng):
    draws = inference.draw_multipliers(rng, law, 400_000)
    se_mean = 1 / math.sqrt(draws.size)
    assert abs(draws.mean()) < 4 * se_mean
    se_var = math.sqrt((stats.kurtosis(draws, fisher=False) - 1) / draws.size)
    assert abs(draws.var() - 1) < 4 * se_var
    if law != "gaussian":
        assert np.abs(draws).max() <= math.sqrt(3)  # bounded, as Theorem 3.2 asks
    if law == "mammen":
        assert abs(np.mean(draws**3) - 1) < 0.02  # Mammen's law has third moment 1


def test_unknown_multiplier_is_refused(rng):
    with pytest.raises(ValueError, match="multiplier = 'cauchy'"):
        inference.draw_multipliers(rng, "cauchy", 3)


def _ar1(rng, reps, n, rho):
    e = rng.standard_normal((reps, n + 200))
    return signal.lfilter([1.0], [1.0, -rho], e, axis=1)[:, 200:]  # burn-in dropped: stationary start


def test_block_bootstrap_variance_is_its_conditional_variance(rng):
    # given the path, Var*(theta*) = sum_j dev_j^2 / (m l)^2 for unit-variance multipliers
    n = 40_000
    layout = StreamLayout.build(n, 0.6, 0.3)
    state = state_from_definitions(_ar1(rng, 1, n, 0.5)[0], layout)
    dev = state.blocks[:, 0] - layout.block_len * state.theta_bar[0]
    exact = (dev**2).sum() / (layout.n_blocks * layout.block_len) ** 2
    draws = inference.block_bootstrap_draws(state, layout, rng, 100_000, "uniform")[:, 0]
    se = exact * math.sqrt((stats.kurtosis(draws, fisher=False) - 1) / draws.size)
    assert abs(draws.var() - exact) < 4 * se
    assert abs(draws.mean()) < 4 * math.sqrt(exact / draws.size)


def test_block_bootstrap_interval_is_eq12(rng):
    n = 40_000
    layout = StreamLayout.build(n, 0.6, 0.3)
    state = state_from_definitions(_ar1(rng, 1, n, 0.5)[0], layout)
    seed = 77
    bounds = inference.intervals(["BB"], state, layout, np.random.default_rng(seed), n_boot=999, law="uniform",
                                 level=0.8, sigma=None)
    lo, hi = bounds[0, :, 0], bounds[0, :, 1]
    draws = inference.block_bootstrap_draws(state, layout, np.random.default_rng(seed), 999, "uniform")[:, 0]
    # [theta_bar + q_0.1, theta_bar + q_0.9], q by R's type 7
    assert lo[0] == state.theta_bar[0] + np.quantile(draws, 0.1)
    assert hi[0] == state.theta_bar[0] + np.quantile(draws, 0.9)


def test_batch_means_variance_is_its_definition(rng):
    n = 30_000
    path = _ar1(rng, 1, n, 0.3)[0]
    layout = StreamLayout.build(n, 0.75, 0.4)
    got = inference.batch_means_variance(state_from_definitions(path, layout), layout)[0]
    starts = np.concatenate([[0], layout.batch_ends[:-1]])
    batches = [path[a:b] for a, b in zip(starts, layout.batch_ends)][1:]  # batch 0 is burn-in
    grand = np.concatenate(batches).mean()
    want = sum(len(b) * (b.mean() - grand) ** 2 for b in batches) / len(batches)
    assert math.isclose(got, want, rel_tol=1e-10)


def test_interval_methods_cover_an_ar1_mean(rng):
    # AR(1), rho = 0.5, unit innovations: mean 0, long-run variance 1 / (1 - rho)^2 = 4.
    # 90% intervals; 600 replications give a coverage SE of 0.012; allowed: 4 SEs.
    reps, n, rho, level = 600, 20_000, 0.5, 0.9
    paths = _ar1(rng, reps, n, rho)
    layout = StreamLayout.build(n, 0.5, 0.3)  # 141 blocks, 31 batches
    sigma = np.array([[1.0 / (1.0 - rho) ** 2]])
    covered = {m: 0 for m in inference.POINTWISE_METHODS}
    for path in paths:
        state = state_from_definitions(path, layout)
        bounds = inference.intervals(inference.POINTWISE_METHODS, state, layout, rng, n_boot=300, law="uniform", level=level,
                                     sigma=sigma)
        for m, (lo, hi) in zip(inference.POINTWISE_METHODS, bounds[:, 0]):
            covered[m] += bool(lo <= 0.0 <= hi)
    se = math.sqrt(level * (1 - level) / reps)
    for m, count in covered.items():
        assert abs(count / reps - level) < 4 * se, (m, count / reps)


def _iid_block_state(rng, m, l, d, copies=1):
    """State of a path whose block sums are i.i.d. N(0, l I_d): the mean of i.i.d. N(0, I) data."""
    blocks = rng.standard_normal((m, d)) * math.sqrt(l)
    blocks = np.repeat(blocks, copies, axis=1)
    theta_bar = blocks.sum(axis=0) / (m * l)
    return PathState(theta_bar, np.ones(blocks.shape[1]), blocks, np.zeros((0, blocks.shape[1])), m * l)


def test_joint_interval_of_identical_coordinates_is_the_symmetric_interval(rng):
    # known answer: with d identical coordinates the max statistic is the
    # statistic of one coordinate, so the box is theta_bar +- q_level(|theta*|)
    layout = StreamLayout(n=400 * 25, block_len=25, n_blocks=400, batch_ends=np.zeros(0, dtype=np.int64))
    state = _iid_block_state(rng, 400, 25, 1, copies=3)
    draws = inference.block_bootstrap_draws(state, layout, np.random.default_rng(1), 999, "uniform")
    lo, hi = inference.block_bootstrap_joint(state, draws, level=0.9)
    half = np.quantile(np.abs(draws[:, 0]), 0.9)
    np.testing.assert_allclose(hi - state.theta_bar, half, rtol=1e-12)
    np.testing.assert_allclose(state.theta_bar - lo, half, rtol=1e-12)


def test_joint_interval_covers_all_coordinates_at_the_level(rng):
    # d = 4 independent coordinates, mean 0: the box covers all four with
    # probability 0.9, while per-coordinate 90% intervals cover all four with
    # 0.9^4 = 0.656. 800 replications: SE 0.011 and 0.017; allowed: 4 SEs.
    reps, m, l, d, level = 800, 400, 25, 4, 0.9
    layout = StreamLayout(n=m * l, block_len=l, n_blocks=m, batch_ends=np.zeros(0, dtype=np.int64))
    joint = marginal = 0
    for _ in range(reps):
        state = _iid_block_state(rng, m, l, d)
        bounds = inference.intervals(["BB", "BBjoint"], state, layout, rng, n_boot=500, law="uniform",
                                     level=level, sigma=None)
        covered = (bounds[:, :, 0] <= 0.0) & (0.0 <= bounds[:, :, 1])
        marginal += covered[0].all()
        joint += covered[1].all()
    assert abs(joint / reps - level) < 4 * math.sqrt(level * (1 - level) / reps), joint / reps
    p = level**d
    assert abs(marginal / reps - p) < 4 * math.sqrt(p * (1 - p) / reps), marginal / reps


def test_uniform_multipliers_are_numpys_uniform_bit_for_bit():
    # draw_multipliers computes numpy's uniform(-sqrt 3, sqrt 3) from random(): same numbers, same state after
    from ldpsim.engine.dialect.rng import as_generator

    a, b = as_generator(5), as_generator(5)
    got = inference.draw_multipliers(a, "uniform", (300, 77))
    want = b.uniform(-math.sqrt(3.0), math.sqrt(3.0), (300, 77))
    np.testing.assert_array_equal(got, want)
    assert a.random() == b.random()


@pytest.mark.parametrize("law", ["uniform", "rademacher", "gaussian", "mammen"])
@pytest.mark.parametrize("m", [1, 7, 130, 501])
def test_bootstrap_draws_of_one_coordinate_are_the_defining_sums_to_the_bit(rng, law, m):
    # d = 1 takes a path without the (B, m, 1) temporary: the same products and numpy's same sums
    l = 13
    layout = StreamLayout(n=m * l, block_len=l, n_blocks=m, batch_ends=np.zeros(0, dtype=np.int64))
    state = _iid_block_state(rng, m, l, 1)
    draws = inference.block_bootstrap_draws(state, layout, np.random.default_rng(3), 257, law)
    eps = inference.draw_multipliers(np.random.default_rng(3), law, (257, m))
    deviations = state.blocks - l * state.theta_bar
    defining = (eps[:, :, None] * deviations[None, :, :]).sum(axis=1) / (m * l)
    np.testing.assert_array_equal(draws, defining)


def test_uniform_multipliers_are_numpys_uniform_to_the_bit():
    s3 = math.sqrt(3.0)
    a = inference.draw_multipliers(np.random.default_rng(9), "uniform", (300, 41))
    np.testing.assert_array_equal(a, np.random.default_rng(9).uniform(-s3, s3, (300, 41)))
