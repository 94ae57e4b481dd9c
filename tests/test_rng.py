"""The kernels' inlined SFC64 generator reproduces numpy's streams bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from ldpsim.engine.dialect.jit import jit
from ldpsim.engine.dialect.rng import (Sfc64Stream, as_generator, exponential, kernel_rng, normal,
                                       replication_generator, uniform)
from ldpsim.privacy.mechanisms import laplace, randomized_response
from ldpsim.models.covariates import TruncatedNormalBox, draw_covariates

#: Draws per law: enough to pass through the rare branches of the ziggurats many times
#: (the normal's tail beyond r = 3.654 has probability 2.6e-4, the exponential's beyond
#: 7.697 probability 4.5e-4; the wedges about 1% each).
DRAWS = 1_200_000
#: ziggurat_nor_r and ziggurat_exp_r of numpy's ziggurat tables
NORMAL_TAIL, EXPONENTIAL_TAIL = 3.6541528853610088, 7.69711747013104972


@jit
def _fill(rng, kind, out):
    for i in range(out.shape[0]):
        if kind == 0:
            out[i] = uniform(rng)
        elif kind == 1:
            out[i] = normal(rng)
        else:
            out[i] = exponential(rng)


def _words(gen):
    return gen.bit_generator.state["state"]["state"].copy()


@pytest.mark.parametrize("kind,method", [(0, "random"), (1, "standard_normal"), (2, "standard_exponential")])
def test_streams_equal_numpy_bit_for_bit(kind, method):
    kernel_gen, numpy_gen = as_generator(2024 + kind), as_generator(2024 + kind)
    got = np.empty(DRAWS)
    _fill(kernel_rng(kernel_gen), kind, got)
    want = getattr(numpy_gen, method)(DRAWS)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    np.testing.assert_array_equal(_words(kernel_gen), _words(numpy_gen))  # left where numpy leaves it
    assert kernel_gen.random() == numpy_gen.random()
    if kind == 1:
        assert (np.abs(got) > NORMAL_TAIL).sum() > 100  # the tail branch ran
    if kind == 2:
        assert (got > EXPONENTIAL_TAIL).sum() > 100


@jit
def _mixed(rng, n, out):
    # the laws the models build from the three draws, interleaved as a kernel interleaves them
    x = np.empty(4)
    law = TruncatedNormalBox(1.0)
    for i in range(n):
        draw_covariates(law, rng, x)
        out[i, 0] = x[1] + x[2] + x[3]
        out[i, 1] = laplace(rng, 2.0)
        out[i, 2] = 1.0 if randomized_response(True, rng, 0.3) else 0.0
        out[i, 3] = normal(rng)


def test_derived_laws_equal_their_numpy_twins():
    n = 200_000
    got = np.empty((n, 4))
    kernel_gen = replication_generator(7, 11, 3)
    _mixed(kernel_rng(kernel_gen), n, got)
    gen = replication_generator(7, 11, 3)
    want = np.empty((n, 4))
    x = np.empty(4)
    for i in range(n):
        draw_covariates(TruncatedNormalBox(1.0), gen, x)
        want[i] = x[1] + x[2] + x[3], laplace.py_func(gen, 2.0), float(randomized_response.py_func(True, gen, 0.3)), \
            gen.standard_normal()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_words(kernel_gen), _words(gen))


def test_other_bit_generators_fall_back_to_numbas_generator():
    pcg = np.random.default_rng(5)
    assert kernel_rng(pcg) is pcg
    stream = kernel_rng(as_generator(5))
    assert isinstance(stream, Sfc64Stream)
    got = np.empty(1000)
    _fill(pcg, 1, got)
    np.testing.assert_array_equal(got, np.random.default_rng(5).standard_normal(1000))


def test_inlined_uniforms_are_uniform():
    # a law-level check besides the bit-level ones: KS and the mean of -log(1 - U)
    from scipy import stats

    u = np.empty(200_000)
    _fill(kernel_rng(as_generator(99)), 0, u)
    assert stats.kstest(u, "uniform").pvalue > 1e-4
    assert abs(np.mean(-special.log1p(-u)) - 1.0) < 4 / np.sqrt(len(u))


@pytest.mark.parametrize("name,method", [("_sfc64_uniform", "random"), ("_sfc64_normal", "standard_normal"),
                                         ("_sfc64_exponential", "standard_exponential")])
def test_plain_python_statement_of_each_draw_equals_numpy(name, method):
    # the twins of the LLVM IR that the kernels emit: the same steps on four numpy words
    from ldpsim.engine.dialect.rng import sfc64 as module

    draw = getattr(module, name)
    gen, twin = as_generator(31), as_generator(31)
    words = _words(twin).astype(np.uint64)
    with np.errstate(over="ignore"):  # SFC64's additions wrap modulo 2^64 by design
        got = np.array([draw(words) for _ in range(20_000)])
    want = getattr(gen, method)(20_000)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    np.testing.assert_array_equal(words, _words(gen))


# --- the ziggurat tables: computed (ldpsim/engine/dialect/rng/ziggurat.py), checked against numpy's -----


def test_ziggurat_tables_equal_the_ones_numba_copies_from_numpy():
    # numba's private copy of numpy's ziggurat_constants.h, while numba ships it: all 1536 entries, bit for bit
    constants = pytest.importorskip("numba.np.random._constants")
    from ldpsim.engine.dialect.rng import ziggurat

    normal, expo = ziggurat.normal_tables(), ziggurat.exponential_tables()
    for ours, theirs in ((normal.k, constants.ki_double), (normal.w, constants.wi_double),
                         (normal.f, constants.fi_double), (expo.k, constants.ke_double),
                         (expo.w, constants.we_double), (expo.f, constants.fe_double)):
        assert ours.dtype == theirs.dtype and ours.shape == (256,)
        np.testing.assert_array_equal(ours.view(np.uint64), theirs.view(np.uint64))
    assert (ziggurat.NORMAL_R, ziggurat.NORMAL_INV_R, ziggurat.EXPONENTIAL_R) == (
        constants.ziggurat_nor_r, constants.ziggurat_nor_inv_r, constants.ziggurat_exp_r)


def test_ziggurat_tables_are_the_ziggurats_they_claim():
    # the defining relations, independently of numpy: equal areas v, w[255] = r / 2^b, f = the density
    from ldpsim.engine.dialect.rng import ziggurat

    for tables, pdf, bits in ((ziggurat.normal_tables(), lambda x: np.exp(-0.5 * x * x), 52),
                              (ziggurat.exponential_tables(), lambda x: np.exp(-x), 53)):
        x = tables.w * 2.0**bits
        x[0] = 0.0
        areas = x[2:] * (tables.f[1:-1] - tables.f[2:])  # layer i: x_i (f(x_{i-1}) - f(x_i))
        np.testing.assert_allclose(areas, areas.mean(), rtol=1e-12)
        np.testing.assert_allclose(tables.f[1:], pdf(x[1:]), rtol=2e-15)  # x rounded: f to ~x^2 ulp
        assert tables.k[1] == 0 and np.all(np.diff(x[1:]) > 0)
        np.testing.assert_allclose(tables.k[2:].astype(float), 2.0**bits * x[1:-1] / x[2:], rtol=0, atol=4.0)


_INV9 = pow(9, -1, 2**64)
_MASK64 = 2**64 - 1


def _state_giving(gen, first, second):
    """Set ``gen`` (SFC64) to the state whose next two outputs are ``first`` and ``second``.

    SFC64 outputs ``a + b + counter``, then ``(b ^ b >> 11) + 9 c + counter + 1``: with b = counter = 0,
    ``a = first`` and ``c = (second - 1) / 9 mod 2^64``.
    """
    words = np.array([first & _MASK64, 0, ((second - 1) * _INV9) & _MASK64, 0], dtype=np.uint64)
    gen.bit_generator.state = {"bit_generator": "SFC64", "state": {"state": words}, "has_uint32": 0, "uinteger": 0}


def _one_draw(kind, method, first, second):
    """Our kernel's draw and numpy's from the same crafted state, and the state words each leaves."""
    ours, theirs = as_generator(0), as_generator(0)
    _state_giving(ours, first, second)
    _state_giving(theirs, first, second)
    got = np.empty(1)
    _fill(kernel_rng(ours), kind, got)
    want = getattr(theirs, method)()
    return (got[0], tuple(_words(ours))), (want, tuple(_words(theirs)))


def _word(kind, idx, mantissa):
    # the 64-bit output that numpy's ziggurat reads as layer idx with this mantissa (sign +)
    return (mantissa << 9 | idx) if kind == 1 else (mantissa << 11 | idx << 3)


@pytest.mark.parametrize("kind,method", [(1, "standard_normal"), (2, "standard_exponential")])
def test_every_layer_of_the_ziggurats_draws_as_numpy(kind, method):
    # through numpy's public API only (crafted SFC64 states): for each of the 256 layers, the mantissa 1
    # (w), the last mantissa the layer test accepts and the first it rejects (k), and for layers 1-255 a point
    # halfway across the wedge, tested on both sides of numpy's own switching point in u (f exactly: an
    # f one ulp off moves the switch by about 2^53 ulp / (f[i-1] - f[i]) >> 1 step of u)
    from ldpsim.engine.dialect.rng import ziggurat

    tables = ziggurat.normal_tables() if kind == 1 else ziggurat.exponential_tables()
    switches = {}

    def numpy_words(first, second):
        gen = as_generator(0)
        _state_giving(gen, first, second)
        getattr(gen, method)()
        return int(_words(gen)[3])  # the counter: words consumed

    for idx in range(256):
        k = int(tables.k[idx])
        for mantissa in {1, max(k - 1, 0), k}:  # 1: the draw is w[idx] itself
            ours, theirs = _one_draw(kind, method, _word(kind, idx, mantissa), 0)
            assert ours[0] == theirs[0] and ours[1] == theirs[1], (idx, mantissa)
        if idx == 0:
            continue
        bits = 52 if kind == 1 else 53
        first = _word(kind, idx, (k + 2**bits) // 2)  # a point halfway across the layer's wedge
        lo, hi = 0, 2**53 - 1  # u = t / 2^53; the wedge accepts small u; find numpy's first rejected t
        if numpy_words(first, hi << 11) == 2:
            continue  # the whole wedge accepts (no switch to find)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if numpy_words(first, mid << 11) == 2 else (lo, mid)
        switches[idx] = hi
        for t in (lo, hi):
            ours, theirs = _one_draw(kind, method, first, t << 11)
            assert ours[0] == theirs[0] and ours[1] == theirs[1], (idx, t)
    assert len(switches) > 200  # the wedge test's switch was found and checked in most layers


def test_without_numba_the_kernels_run_as_python_and_draw_the_same_numbers():
    # NUMBA_DISABLE_JIT=1 is how users debug numba code: every command imported and failed; now the
    # kernels run as plain Python, draw from numpy's Generator itself, and give the same summary
    import json
    import os
    import subprocess
    import sys

    import ldpsim

    config = {"model": "quantile", "tau": 0.5, "n": 600, "reps": 2, "methods": ["BB", "BM", "SN", "oracle"]}
    code = ("import json, sys, ldpsim; from ldpsim.engine.dialect import jit, rng; assert jit.DISABLED\n"
            "r = ldpsim.run(json.loads(sys.argv[1]), n_jobs=1, progress=False)\n"
            "print(json.dumps(r.rows))")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    out = subprocess.run([sys.executable, "-c", code, json.dumps(config)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    compiled = ldpsim.run(config, n_jobs=1, progress=False).rows
    assert json.loads(out.stdout) == json.loads(json.dumps(compiled))
