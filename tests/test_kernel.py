"""The jitted recursion against its plain-Python twin and the defining formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.engine.dialect.rng import as_generator
from ldpsim.models import QuantileModel
from ldpsim.engine.dialect.jit import jit
from ldpsim.recursion.kernels import (EXACT_STEPS_BELOW, FIRST_FILL, RATIO_CHUNK, buffered_step_size, fill_step_ratios,
                                     run_path, step_ratio_coefficients)
from ldpsim.inference.streaming import StreamLayout, batch_ends, floor_power
from ldpsim.recursion.twins import path_twin, state_from_definitions, step_sizes_twin

CASES = [
    # tau, epsilon, c, gamma, theta0, beta
    (0.5, 1.0, 1.0, 0.51, 0.0, 0.75),
    (0.9, 1.0, 1.0, 0.51, 0.0, 0.75),
    (0.3, 0.5, 2.0, 0.7, -1.0, 0.6),
    (0.9, math.inf, 0.5, 0.9, 3.0, 0.95),
]


@pytest.mark.parametrize("tau,epsilon,c,gamma,theta0,beta", CASES)
def test_kernel_equals_twin_exactly(tau, epsilon, c, gamma, theta0, beta):
    # n > 2 * 4096 so the ratio step sizes and a power-of-two resync are exercised
    n = 3 * EXACT_STEPS_BELOW + 17
    model = QuantileModel(tau, epsilon)
    layout = StreamLayout.build(n, beta, gamma)
    got = run_path(model, as_generator(99), n, c, gamma, theta0, layout)
    want, _ = path_twin(model, as_generator(99), n, c, gamma, theta0, layout)
    assert got.steps == want.steps == n
    np.testing.assert_array_equal(got.theta_bar, want.theta_bar)
    np.testing.assert_array_equal(got.sn_v, want.sn_v)
    np.testing.assert_array_equal(got.blocks, want.blocks)
    np.testing.assert_array_equal(got.batches, want.batches)


def test_kernel_leaves_generator_where_twin_does():
    model, n = QuantileModel(0.5, 1.0), 1000
    layout = StreamLayout.build(n, 0.75, 0.51)
    g1, g2 = as_generator(3), as_generator(3)
    run_path(model, g1, n, 1.0, 0.51, 0.0, layout)
    path_twin(model, g2, n, 1.0, 0.51, 0.0, layout)
    assert g1.random() == g2.random()


@pytest.mark.parametrize("tau,epsilon,c,gamma,theta0,beta", CASES)
def test_streamed_state_matches_definitions(tau, epsilon, c, gamma, theta0, beta):
    n = 20_000
    model = QuantileModel(tau, epsilon)
    layout = StreamLayout.build(n, beta, gamma)
    state, path = path_twin(model, np.random.default_rng(5), n, c, gamma, theta0, layout)
    ref = state_from_definitions(path, layout)
    scale = np.abs(path).max() + 1.0
    np.testing.assert_allclose(state.theta_bar, ref.theta_bar, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(state.sn_v, ref.sn_v, rtol=1e-9)
    np.testing.assert_allclose(state.blocks, ref.blocks, rtol=0, atol=1e-12 * scale * layout.block_len)
    np.testing.assert_allclose(state.batches, ref.batches, rtol=0, atol=1e-12 * scale * n)


@pytest.mark.parametrize("gamma", [0.51, 0.75, 1.0])
def test_step_sizes_close_to_exact_power(gamma):
    n = 300_000
    eta = step_sizes_twin(n, 1.7, gamma)
    exact = 1.7 * np.arange(1, n + 1, dtype=float) ** -gamma
    assert np.max(np.abs(eta / exact - 1.0)) < 1e-12


@jit
def _buffered_step_sizes(n, c, gamma):
    # the path kernels' bookkeeping alone: ratios from the buffer refilled every RATIO_CHUNK steps
    out = np.empty(n)
    ratio = step_ratio_coefficients(gamma)
    ratios = np.empty(RATIO_CHUNK)
    eta, pow2, next_fill = c, 1, FIRST_FILL
    for i in range(1, n + 1):
        eta = buffered_step_size(i, pow2, eta, c, gamma, ratios)
        out[i - 1] = eta
        if i == pow2:
            pow2 *= 2
        if i == next_fill:
            next_fill = fill_step_ratios(i, ratio, ratios)
    return out


@pytest.mark.parametrize("gamma", [0.51, 2 / 3, 1.0])
def test_buffered_step_sizes_are_the_step_sizes_to_the_bit(gamma):
    # many buffer refills and powers of two (which recompute eta exactly) on the way
    n = 40_000
    np.testing.assert_array_equal(_buffered_step_sizes(n, 0.7, gamma), step_sizes_twin(n, 0.7, gamma))


def test_memory_state_is_small():
    # what the kernel keeps does not grow like n: m ~ n^(1-beta) blocks, M ~ n^0.245 batches
    layout = StreamLayout.build(10**8, 0.75, 0.51)
    assert layout.n_blocks == 100 and layout.block_len == 10**6
    assert len(layout.batch_ends) < 100


def test_block_layout_of_paper():
    # l = floor(n^0.75), m = floor(n / l) (000, Section 4)
    assert floor_power(10**6, 0.75) == 31622
    assert floor_power(10**8, 0.75) == 10**6
    assert StreamLayout.build(10**6, 0.75, 0.51).n_blocks == 31
    assert StreamLayout.build(10**7, 0.75, 0.51).n_blocks == 56


def test_batch_ends_follow_chen_et_al():
    n, gamma = 10**6, 0.51
    ends = batch_ends(n, gamma)
    big_m = math.floor(n ** ((1 - gamma) / 2))
    per = n ** (1 - gamma) / (big_m + 1)
    assert len(ends) == big_m + 1 and ends[-1] == n
    assert ends[0] == math.floor(per ** (1 / (1 - gamma)))
    assert (np.diff(ends) > 0).all()
    # batches grow: later iterates are less dependent
    assert (np.diff(np.diff(ends)) > 0).all()


def test_diverging_path_stops_and_is_flagged():
    model, n = QuantileModel(0.5, 1.0), 5000
    layout = StreamLayout.build(n, 0.75, 0.51)
    state = run_path(model, np.random.default_rng(1), n, 1e300, 0.51, 0.0, layout)
    assert state.steps < n
    assert not state.finite(n)
