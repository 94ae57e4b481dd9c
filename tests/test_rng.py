"""The kernels' inlined SFC64 generator reproduces numpy's streams bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from ldpsim.engine.jit import jit
from ldpsim.engine.rng import (Sfc64Stream, as_generator, exponential, kernel_rng, normal, replication_generator,
                               uniform)
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
    from ldpsim.engine import rng as module

    draw = getattr(module, name)
    gen, twin = as_generator(31), as_generator(31)
    words = _words(twin).astype(np.uint64)
    with np.errstate(over="ignore"):  # SFC64's additions wrap modulo 2^64 by design
        got = np.array([draw(words) for _ in range(20_000)])
    want = getattr(gen, method)(20_000)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    np.testing.assert_array_equal(words, _words(gen))
