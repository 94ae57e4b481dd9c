"""The draws kernels call, and the one place that decides what each compiles to.

Models, mechanisms and kernels draw through :func:`uniform`, :func:`normal`
and :func:`exponential` (and :func:`uniform_where`, ... in the rejection
loops of lane-generic kernels), never by calling the generator's methods;
:func:`local_rng` and :func:`release_rng` give a kernel a private copy of
the state, :func:`copy_state` common random numbers. In plain Python (the
twins, a numpy ``Generator``) the bodies below run; in jitted code their
overloads pick the draw by what the kernel was handed: numba's
``Generator`` (its own methods), an :class:`~.sfc64.Sfc64Stream` or its
copy :class:`~.sfc64.Sfc64Local` (the scalar draws of :mod:`.sfc64`), or
the copy of several lanes (the vector draws of :mod:`.lane_draws`).
"""

from __future__ import annotations

from numba.core import types
from numba.extending import overload

from ..jit import OVERLOAD_OPTIONS
from .lane_draws import (Sfc64LocalLanes, _copy_in_lanes, _copy_out_lanes, _is_lanes, _is_local_lanes, _vexponential,
                         _vexponential_where, _vnormal, _vnormal_where, _vuniform, _vuniform_where)
from .sfc64 import (Sfc64Local, _copy_in, _copy_out, _exponential_intrinsic, _is_local, _is_stream,
                    _normal_intrinsic, _state_words, _uniform_intrinsic)

# --- draws inside kernels -----------------------------------------------------
# Models, mechanisms and kernels draw through uniform / normal / exponential,
# never by calling the generator's methods: the plain-Python bodies serve the
# twins (a numpy ``Generator``), and the overloads below are what jitted code
# inlines, so the source of a kernel's random numbers is decided here, once.
# A kernel's Python wrapper hands it ``kernel_rng(gen)`` (:mod:`.sfc64`) or ``kernel_rngs(gens)``
# (:mod:`.lane_draws`), not ``gen``.


def uniform(gen):
    """One ``U[0, 1)`` draw, as numpy's ``Generator.random()``."""
    return gen.random()


def normal(gen):
    """One standard normal draw, as numpy's ``Generator.standard_normal()`` (ziggurat)."""
    return gen.standard_normal()


def exponential(gen):
    """One standard exponential draw, as numpy's ``Generator.standard_exponential()`` (ziggurat)."""
    return gen.standard_exponential()


def _draws(func, method, intrinsic_draw):
    """Overload ``func`` for numba's ``Generator`` (its ``method``), SFC64 handles and their copies."""
    def typer(gen):
        if isinstance(gen, types.NumPyRandomGeneratorType):
            return method
        if _is_stream(gen):  # the generator's own state, in memory
            return lambda gen: intrinsic_draw(_state_words(gen.address))
        if _is_local(gen):  # the kernel's copy, which LLVM keeps in registers
            return lambda gen: intrinsic_draw(gen.words)
        if _is_local_lanes(gen):  # the copies of L generators, as vectors: a LaneVector of L draws
            vector_draw = _LANES_DRAW[func]
            return lambda gen: vector_draw(gen.words)
        return None

    # inlined in numba's IR: a call would reference-count the generator, which costs more than a draw
    overload(func, jit_options=OVERLOAD_OPTIONS, inline="always")(typer)


def local_rng(rng):
    """A kernel's private copy of ``rng``'s state, to draw from in its loop; :func:`release_rng` writes it back.

    For an :class:`Sfc64Stream` the copy lives on the kernel's stack, where
    LLVM keeps it in registers (the generator's own state, in memory, would
    be stored and reloaded at every draw); for a numba ``Generator`` it is
    the generator itself. A kernel that takes a copy must call
    :func:`release_rng` before each of its returns, or the generator does not
    advance. (In plain Python, as the twins run, it returns ``rng``.)
    """
    return rng


def release_rng(rng, local):
    """Write a kernel's copy of the state (:func:`local_rng`) back into ``rng``."""


@overload(local_rng, jit_options=OVERLOAD_OPTIONS, inline="always")
def _local_rng(rng):
    if _is_stream(rng):
        return lambda rng: Sfc64Local(_copy_in(rng.address))
    if _is_lanes(rng):
        return lambda rng: Sfc64LocalLanes(_copy_in_lanes(rng.addresses))
    return lambda rng: rng


@overload(release_rng, jit_options=OVERLOAD_OPTIONS, inline="always")
def _release_rng(rng, local):
    if _is_stream(rng):
        return lambda rng, local: _copy_out(rng.address, local.words)
    if _is_lanes(rng):
        return lambda rng, local: _copy_out_lanes(rng.addresses, local.words)
    return lambda rng, local: None


def copy_state(source, target):
    """Set ``target``'s state to ``source``'s: the draws that follow are the same (common random numbers).

    In a kernel both are :class:`Sfc64Stream` handles (:func:`kernel_rng` of
    two SFC64 generators): the four state words are copied. In plain Python
    they are generators, and the whole state is copied.
    """
    target.bit_generator.state = source.bit_generator.state


@overload(copy_state, jit_options=OVERLOAD_OPTIONS, inline="always")
def _copy_state(source, target):
    if _is_stream(source) and _is_stream(target):
        return lambda source, target: _copy_out(target.address, _copy_in(source.address))
    return None


#: The lanes' draw of each function (the vector intrinsics of :mod:`.lane_draws`).
_LANES_DRAW: dict = {uniform: _vuniform, normal: _vnormal, exponential: _vexponential}

# on a numba Generator the Python bodies themselves compile: they call its methods
_draws(uniform, uniform, _uniform_intrinsic)
_draws(normal, normal, _normal_intrinsic)
_draws(exponential, exponential, _exponential_intrinsic)


def uniform_where(gen, mask, other):
    """A ``U[0, 1)`` draw where ``mask`` holds, ``other`` elsewhere (lanes: only the lanes of ``mask`` draw)."""
    return uniform(gen) if mask else other


def normal_where(gen, mask, other):
    """A standard normal draw where ``mask`` holds, ``other`` elsewhere (lanes: only the lanes of ``mask`` draw)."""
    return normal(gen) if mask else other


def exponential_where(gen, mask, other):
    """A standard exponential draw where ``mask`` holds, ``other`` elsewhere (only the lanes of ``mask`` draw)."""
    return exponential(gen) if mask else other


def _draws_where(func, draw, vector_where):
    def typer(gen, mask, other):
        if _is_local_lanes(gen):
            return lambda gen, mask, other: vector_where(gen.words, mask, other)
        def impl(gen, mask, other):
            if mask:
                return draw(gen)
            return other

        return impl

    overload(func, jit_options=OVERLOAD_OPTIONS, inline="always")(typer)


_draws_where(uniform_where, uniform, _vuniform_where)
_draws_where(normal_where, normal, _vnormal_where)
_draws_where(exponential_where, exponential, _vexponential_where)


__all__ = ["copy_state", "exponential", "exponential_where", "local_rng", "normal", "normal_where", "release_rng",
           "uniform", "uniform_where"]
