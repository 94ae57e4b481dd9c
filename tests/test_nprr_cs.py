"""NPRR Hoeffding and empirical-Bernstein CS/CI (ldpsim.inference.nprr_cs) against the authors' outputs.

Reference numbers: tests/data/nprr_cs_references.json, the outputs of WannabeSmith/nprr at 36edeca
(nprr/dpcs.py, with confseq 0.0.11) on 2000 fixed textbook-NPRR releases of Beta(50, 50) data
(eps = 2, G = 6, alpha = 0.1); see that file's "source", "release" and "math".
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ldpsim.inference import nprr_cs as cs

REFERENCES = json.loads((Path(__file__).parent / "data" / "nprr_cs_references.json").read_text())
Z = np.array(REFERENCES["release"]["z"])
R, ALPHA = REFERENCES["r"], REFERENCES["alpha"]
OUT = REFERENCES["outputs"]
REFERENCE_CS = {"hoeffding": cs.hoeffding_cs, "empbern": cs.empbern_cs}

# measured: 0 for the Hoeffding CS and every CI but one (EB CI at n = 500: 5.6e-17); 1.1e-16 for the
# EB CS (its centres sum 1/2 + (z_1 + .. + z_{t-1}), the authors' (1/2 + z_1) + .. + z_{t-1})
AUTHORS_TOL = 1e-12
# measured: 0 (the streamed state is the reference to the bit on these z and on the random cases)
STREAM_TOL = 1e-13


# --- (a) the reference functions against the authors' outputs ---------------------------------------


@pytest.mark.parametrize("method", cs.METHODS)
def test_reference_cs_equals_authors_arrays(method):
    lower, upper = REFERENCE_CS[method](Z, R, ALPHA)
    ref = OUT["cs"][f"nprr_{method}_cs"]
    assert lower.shape == upper.shape == (2000,)
    assert np.abs(lower - ref["lower"]).max() <= AUTHORS_TOL
    assert np.abs(upper - ref["upper"]).max() <= AUTHORS_TOL


@pytest.mark.parametrize("n", ["500", "2000"])
def test_reference_cis_equal_authors(n):
    ref, z = OUT["ci"][n], Z[: int(n)]
    assert np.abs(np.subtract(cs.hoeffding_ci(z, R, ALPHA), ref["nprr_hoeffding_ci"])).max() <= AUTHORS_TOL
    assert np.abs(np.subtract(cs.hoeffding_ci(z, R, ALPHA, running_intersection=False),
                              ref["nprr_hoeffding_ci_running_intersection_False"])).max() <= AUTHORS_TOL
    assert np.abs(np.subtract(cs.empbern_ci(z, R, ALPHA), ref["nprr_empbern_ci"])).max() <= AUTHORS_TOL


def test_bets_and_centres_equal_authors():
    picks = np.array(OUT["cs"]["t_selected"]) - 1
    hoeffding = OUT["cs"]["nprr_hoeffding_cs"]["at_selected"]
    empbern = OUT["cs"]["nprr_empbern_cs"]["at_selected"]
    assert np.abs(cs.hoeffding_lambdas(2000, ALPHA)[picks] - hoeffding["lambda"]).max() <= AUTHORS_TOL
    assert np.abs(cs.predmix_eb_lambdas(Z, ALPHA / 2, 0.5)[picks] - empbern["lambda"]).max() <= AUTHORS_TOL
    assert np.abs(cs.empbern_centres(Z)[picks] - empbern["zeta_hat"]).max() <= AUTHORS_TOL
    for n in (500, 2000):
        ref = OUT["ci"][str(n)]
        assert abs(cs.hoeffding_lambdas(n, ALPHA, math.inf, fixed_n=n)[0] - ref["hoeffding_lambda_constant"]) <= 1e-15
        eb = cs.predmix_eb_lambdas(Z[:n], 0.05, 0.5, fixed_n=n, prior_variance=0.125)
        assert np.abs(eb[[0, -1]] - ref["empbern_lambda_t1_and_tn"]).max() <= AUTHORS_TOL


# --- (b) the streamed state against the reference ------------------------------------------------------


def _stream_python(z, params):
    """The twin: the kernel functions' plain-Python originals, one released value at a time."""
    state, out = cs.nprr_state(), np.empty((z.shape[0], 4))
    for i in range(z.shape[0]):
        cs.nprr_update.py_func(state, params, z[i])
        out[i, :2] = cs.nprr_bounds.py_func(state, params)
        out[i, 2:] = cs.nprr_running_bounds.py_func(state)
    return out


def _stream_jit(z, params):
    out = np.empty((z.shape[0], 4))
    cs.nprr_trace(z, cs.nprr_state(), params, out)
    return out


def _check_stream(z, r, alpha, method):
    """The CS and the CI of one method, streamed in jitted code and in Python, against the reference."""
    z = np.ascontiguousarray(z, dtype=float)
    n = z.shape[0]
    for fixed in (None, n):
        params = cs.nprr_params(method, r, alpha, fixed)
        jitted, python = _stream_jit(z, params), _stream_python(z, params)
        assert np.array_equal(jitted, python)  # to the bit
        if fixed is None:
            lower, upper = REFERENCE_CS[method](z, r, alpha)
            reference = np.column_stack([lower, upper, *cs.running_intersection(lower, upper)])
            assert np.abs(jitted - reference).max() <= STREAM_TOL
        elif method == "hoeffding":
            assert np.abs(jitted[-1, 2:] - cs.hoeffding_ci(z, r, alpha)).max() <= STREAM_TOL
            assert np.abs(jitted[-1, :2] - cs.hoeffding_ci(z, r, alpha, running_intersection=False)).max() <= STREAM_TOL
        else:
            assert np.abs(jitted[-1, 2:] - cs.empbern_ci(z, r, alpha)).max() <= STREAM_TOL


@pytest.mark.parametrize("method", cs.METHODS)
def test_stream_equals_reference_on_authors_z(method):
    _check_stream(Z, R, ALPHA, method)
    # and so the authors' numbers, read off the state
    out = _stream_jit(Z, cs.nprr_params(method, R, ALPHA))
    assert np.abs(out[:, 0] - OUT["cs"][f"nprr_{method}_cs"]["lower"]).max() <= AUTHORS_TOL
    state = cs.nprr_state()
    cs.nprr_trace(Z, state, cs.nprr_params(method, R, ALPHA, 2000), np.empty((2000, 4)))
    authors_ci = OUT["ci"]["2000"][f"nprr_{method}_ci"]
    assert np.abs(np.subtract(cs.nprr_running_bounds(state), authors_ci)).max() <= AUTHORS_TOL


@pytest.mark.parametrize("method", cs.METHODS)
@pytest.mark.parametrize("r,alpha", [(1.0, 0.05), (0.1, 0.3), (0.8, 0.1)])
def test_stream_equals_reference_on_other_settings(method, r, alpha):
    # continuous z (not on a grid), alpha away from 0.1: the EB CI's bet level (0.05) differs from alpha / 2
    z = np.random.default_rng(31).random(300)
    _check_stream(z, r, alpha, method)


def test_state_before_any_value():
    state = cs.nprr_state()
    assert cs.nprr_state().shape == (cs.STATE_SIZE,)
    assert cs.nprr_bounds(state, cs.nprr_params("empbern", R)) == (0.0, 1.0)
    assert cs.nprr_running_bounds(state) == (0.0, 1.0)


# --- (c) coverage --------------------------------------------------------------------------------------


def _textbook_nprr(gen, x, G, r):
    """Textbook NPRR of x in [0, 1]: stochastic rounding to {0, 1/G, .., 1} kept with probability r, else a uniform
    grid point (as ldpsim/privacy/mechanisms/nprr.py's _release_nprr and the JSON's release)."""
    u = gen.random((3,) + x.shape)
    low = np.minimum(np.floor(G * x), G - 1)
    rounded = (low + (u[0] < G * x - low)) / G
    uniform = np.minimum(np.floor(u[1] * (G + 1)), G) / G
    return np.where(u[2] < r, rounded, uniform)


def _coverage(gen, reps, n, G=6, eps=2.0, chunk=200):
    """Fraction of ``reps`` streams of ``n`` NPRR releases of Beta(50, 50) whose CS / CI holds 1/2.

    A CS "covers" when its running intersection holds 1/2 at ``n``, i.e. when the authors' CS holds
    1/2 at every ``t <= n`` (the same event, checked); a CI when it holds 1/2 at ``n``. Keys
    ``(method, None)`` for the CSs, ``(method, n)`` for the CIs.
    """
    r = (math.exp(eps) - 1.0) / (math.exp(eps) + G)  # the authors' entropy rule at G = 6 (the JSON's r)
    params = {(method, fixed): cs.nprr_params(method, r, ALPHA, fixed) for method in cs.METHODS for fixed in (None, n)}
    covered = {key: 0 for key in params}
    out = np.empty((n, 4))
    for start in range(0, reps, chunk):
        size = min(chunk, reps - start)
        for row in _textbook_nprr(gen, gen.beta(50.0, 50.0, size=(size, n)), G, r):
            for key, p in params.items():
                cs.nprr_trace(row, cs.nprr_state(), p, out)
                covers = bool(out[-1, 2] <= 0.5 <= out[-1, 3])
                covered[key] += covers
                if key[1] is None:
                    assert covers == bool(np.all((out[:, 0] <= 0.5) & (0.5 <= out[:, 1])))
    return {key: count / reps for key, count in covered.items()}


def test_coverage_beta_50_50():
    # 400 streams of n = 2000 NPRR releases of Beta(50, 50) at eps = 2 (G = 6, r by the entropy rule).
    # Monte Carlo SE at the level: sqrt(0.9 * 0.1 / 400) = 0.015; the bar 0.9 - 3 SE = 0.855.
    # Measured (seed 2023): Hoeffding CS 1.000, EB CS 0.9825, Hoeffding CI 1.000, EB CI 0.9475.
    reps = 400
    assert abs((math.exp(2.0) - 1.0) / (math.exp(2.0) + 6) - R) < 1e-15
    assert abs(math.log(1.0 + 7 * R / (1.0 - R)) - 2.0) < 1e-12  # eps of NPRR with G = 6
    rates = _coverage(np.random.default_rng(2023), reps, 2000)
    bar = 1.0 - ALPHA - 3.0 * math.sqrt(ALPHA * (1.0 - ALPHA) / reps)
    assert all(rate >= bar for rate in rates.values()), rates


@pytest.mark.slow
def test_coverage_beta_50_50_paper_size():
    # the paper's CI size n = 1e4, 2000 streams: MC SE 0.0067, bar 0.9 - 3 SE = 0.880.
    # Measured (seed 2024): Hoeffding CS and CI 1.000, EB CS 0.9775, EB CI 0.939.
    reps = 2000
    rates = _coverage(np.random.default_rng(2024), reps, 10_000)
    bar = 1.0 - ALPHA - 3.0 * math.sqrt(ALPHA * (1.0 - ALPHA) / reps)
    assert all(rate >= bar for rate in rates.values()), rates


# --- (d) bad input -------------------------------------------------------------------------------------


REFERENCE_FUNCTIONS = [cs.hoeffding_cs, cs.empbern_cs, cs.hoeffding_ci, cs.empbern_ci]


@pytest.mark.parametrize("func", REFERENCE_FUNCTIONS + [lambda z, r, alpha: cs.nprr_params("empbern", r, alpha)])
@pytest.mark.parametrize("r,alpha,pattern", [
    (0.0, 0.1, r"r = 0\.0 is not in \(0, 1\]"),
    (1.5, 0.1, r"r = 1\.5 is not in \(0, 1\]"),
    (-0.2, 0.1, r"r = -0\.2 is not in \(0, 1\]"),
    (R, 0.0, r"alpha = 0\.0 is not in \(0, 1\)"),
    (R, 1.0, r"alpha = 1\.0 is not in \(0, 1\)"),
    (R, float("nan"), r"alpha = nan is not in \(0, 1\)"),
])
def test_bad_r_or_alpha(func, r, alpha, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        func(Z[:10], r, alpha)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("func", REFERENCE_FUNCTIONS)
@pytest.mark.parametrize("bad,pattern", [(1.5, r"z = 1\.5 at index 3 is not in \[0, 1\]"),
                                         (-0.25, r"z = -0\.25 at index 3 is not in \[0, 1\]"),
                                         (float("nan"), r"z = nan at index 3 is not in \[0, 1\]")])
def test_bad_z(func, bad, pattern):
    z = Z[:10].copy()
    z[3] = bad
    with pytest.raises(ValueError, match=pattern) as info:
        func(z, R, ALPHA)
    assert "\n" not in str(info.value)


def test_bad_params():
    with pytest.raises(ValueError, match=r"method = 'bernstein' is not one of hoeffding, empbern"):
        cs.nprr_params("bernstein", R)
    with pytest.raises(ValueError, match=r"n = 0 is not a positive integer"):
        cs.nprr_params("hoeffding", R, ALPHA, 0)
    with pytest.raises(ValueError, match=r"truncation = 1\.0 is not in \(0, 1\)"):
        cs.nprr_params("empbern", R, ALPHA, truncation=1.0)
    with pytest.raises(ValueError, match=r"z has shape \(\)"):
        cs.hoeffding_cs(0.5, R)
