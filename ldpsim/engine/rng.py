"""Random number generators: one bit generator, seeds derived from identities, and the kernels' draws.

Every replication draws from its own ``numpy.random.Generator`` built on
``SeedSequence(root, spawn_key=(setting_key, rep))``: its numbers depend on
what it is, never on which worker runs it or when. The bit generator is
numpy's SFC64 (Chris Doty-Humphrey's Small Fast Chaotic generator, 256-bit
state with a counter, so every stream has period at least 2^64; it passes
BigCrush and PractRand). Inside the kernel a step costs one normal and one
uniform, drawn through the bit generator's C function pointers; SFC64 makes
the kernel about 15% faster than numpy's default PCG64 here
(``scripts/bench.py``), with no loss of statistical quality.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import overload

from .jit import JIT_OPTIONS

#: The bit generator of every replication stream.
BIT_GENERATOR = np.random.SFC64


def as_generator(seed=None) -> np.random.Generator:
    """A ``Generator`` from ``None``, an int, a ``SeedSequence`` or a ``Generator`` (returned as is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if not isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(seed)
    return np.random.Generator(BIT_GENERATOR(seed))


def replication_generator(root: int, setting_key: int, rep: int) -> np.random.Generator:
    """The generator of replication ``rep`` of the setting whose identity is ``setting_key``."""
    return as_generator(np.random.SeedSequence(root, spawn_key=(setting_key, rep)))


# --- draws inside kernels -----------------------------------------------------
# Models, mechanisms and kernels draw through these three functions, never by
# calling the generator's methods: the plain-Python bodies serve the twins
# (a numpy ``Generator``), and the overloads below are what jitted code
# inlines, so the source of a kernel's random numbers is decided here, once.
# A kernel's Python wrapper hands it ``kernel_rng(gen)``, not ``gen``.


def kernel_rng(gen: np.random.Generator):
    """What a kernel is handed to draw from ``gen``'s stream (and advance it).

    Kernels draw only through :func:`uniform`, :func:`normal` and
    :func:`exponential` on this object; the numbers are those ``gen``'s own
    methods would give, in the same order, and ``gen`` is left where they
    would have left it.
    """
    return gen


def uniform(gen):
    """One ``U[0, 1)`` draw, as numpy's ``Generator.random()``."""
    return gen.random()


def normal(gen):
    """One standard normal draw, as numpy's ``Generator.standard_normal()`` (ziggurat)."""
    return gen.standard_normal()


def exponential(gen):
    """One standard exponential draw, as numpy's ``Generator.standard_exponential()`` (ziggurat)."""
    return gen.standard_exponential()


def _draws(func, method):
    def typer(gen):
        if isinstance(gen, types.NumPyRandomGeneratorType):
            return method
        return None

    # inlined in numba's IR: a call would reference-count the generator, which costs more than a draw
    overload(func, jit_options=JIT_OPTIONS, inline="always")(typer)


_draws(uniform, lambda gen: gen.random())
_draws(normal, lambda gen: gen.standard_normal())
_draws(exponential, lambda gen: gen.standard_exponential())
