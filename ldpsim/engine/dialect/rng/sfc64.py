"""The scalar SFC64 inside kernels: a kernel's handle on a generator's state, and one draw stepped in place.

A kernel is handed :func:`kernel_rng` ``(gen)``, an :class:`Sfc64Stream`
holding the address of ``gen``'s C state (or ``gen`` itself on another bit
generator, or without numba). The draws step that state in place with the
published SFC64 recurrence (:func:`_step`) and turn the 64-bit words into
numbers exactly as numpy does (``next_double``; the 256-layer ziggurats of
``random_standard_normal`` and ``random_standard_exponential``, with numpy's
tables, :mod:`.ziggurat`): the fast path is emitted as LLVM IR where the
draw is (the intrinsics below), the rest is a jitted function of the four
state words (:func:`_normal_rest`, :func:`_exponential_rest`), and each has
its plain-Python twin (``_sfc64_uniform``, ``_sfc64_normal``,
``_sfc64_exponential``). :class:`Sfc64Local` is a kernel's private copy of
the state (:func:`_copy_in`, :func:`_copy_out`). What a kernel calls, and
which of these it compiles to, is :mod:`.draws`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from ..jit import DISABLED, jit
from .ziggurat import (fe_double, fi_double, ke_double, ki_double, we_double, wi_double, ziggurat_exp_r,
                       ziggurat_nor_inv_r, ziggurat_nor_r)


class Sfc64Stream(NamedTuple):
    """A kernel's handle on an SFC64 generator: the address of its C state (``uint64_t s[4]``, ...).

    ``owner`` is the ``Generator`` itself: the handle keeps it, and with it the
    state the address points to, alive for as long as a kernel holds the
    handle (jitted code reads only ``address``).
    """

    address: np.uint64
    owner: object


def kernel_rng(gen: np.random.Generator):
    """What a kernel is handed to draw from ``gen``'s stream (and advance it).

    An :class:`Sfc64Stream` for a generator on SFC64 (the inlined
    recurrence), ``gen`` itself otherwise (numba's ``Generator``). Either way
    the kernel's draws through :func:`uniform`, :func:`normal` and
    :func:`exponential` are the numbers ``gen``'s own methods would give, in
    the same order, and ``gen`` is left where they would have left it.
    """
    bit_generator = gen.bit_generator
    if type(bit_generator) is np.random.SFC64 and not DISABLED:  # without numba the kernels call gen's methods
        return Sfc64Stream(np.uint64(bit_generator.ctypes.state_address), gen)
    return gen


@intrinsic
def _state_words(typingctx, address):
    """The ``uint64_t s[4]`` at ``address`` as a pointer numba indexes (``p[0]`` loads, ``p[0] = x`` stores)."""
    sig = types.CPointer(types.uint64)(address)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return sig, codegen


_U11 = np.uint64(11)
_U3 = np.uint64(3)
_U24 = np.uint64(24)
_U40 = np.uint64(40)
_ONE = np.uint64(1)
_U8 = np.uint64(8)
_U9 = np.uint64(9)
_MASK8 = np.uint64(0xFF)
_MASK52 = np.uint64(0x000FFFFFFFFFFFFF)
_TO_DOUBLE = 1.0 / 9007199254740992.0  # 2^-53


@jit(inline=True)
def _step(s0, s1, s2, s3):
    """SFC64 (Doty-Humphrey) on four words: ``(output, s0, s1, s2, s3)`` after one step.

    ``tmp = a + b + counter++; a = b ^ (b >> 11); b = c + (c << 3);
    c = rotl(c, 24) + tmp``: numpy's ``sfc64_next`` (numpy/random/src/sfc64).
    """
    tmp = s0 + s1 + s3
    return tmp, s1 ^ (s1 >> _U11), s2 + (s2 << _U3), ((s2 << _U24) | (s2 >> _U40)) + tmp, s3 + _ONE


@jit(inline=True)
def _to_double(word):
    # numpy's next_double: the top 53 bits times 2^-53
    return float(word >> _U11) * _TO_DOUBLE


# The ziggurats are split in two: the layer test that settles 99% of the draws
# is compiled into the caller (see _inlined below), and the rest (wedges,
# tails, rejections) is an ordinary function of the four state words, passed
# and returned by value, so that a kernel's state can stay in registers.


@jit
def _normal_rest(s0, s1, s2, s3, idx, rabs, x):
    # numpy's random_standard_normal from its first failed layer test on; returns (x, state)
    while True:
        if idx == 0:
            while True:  # beyond the last layer, by Marsaglia's method
                r, s0, s1, s2, s3 = _step(s0, s1, s2, s3)
                xx = -ziggurat_nor_inv_r * np.log1p(-_to_double(r))
                r, s0, s1, s2, s3 = _step(s0, s1, s2, s3)
                yy = -np.log1p(-_to_double(r))
                if yy + yy > xx * xx:
                    if (rabs >> _U8) & _ONE:
                        return -(ziggurat_nor_r + xx), s0, s1, s2, s3
                    return ziggurat_nor_r + xx, s0, s1, s2, s3
        r, s0, s1, s2, s3 = _step(s0, s1, s2, s3)
        if (fi_double[idx - 1] - fi_double[idx]) * _to_double(r) + fi_double[idx] < np.exp(-0.5 * x * x):
            return x, s0, s1, s2, s3
        r, s0, s1, s2, s3 = _step(s0, s1, s2, s3)  # rejected: a fresh draw, as numpy's loop takes
        idx = r & _MASK8
        rabs = (r >> _U9) & _MASK52
        x = float(rabs) * wi_double[idx]
        if (r >> _U8) & _ONE:
            x = -x
        if rabs < ki_double[idx]:
            return x, s0, s1, s2, s3


def _twin_next(p):
    # sfc64_next on a numpy array of four uint64 words (the jitted step hands back Python ints)
    out, *words = _step(*(np.uint64(w) for w in p))
    p[:] = words
    return np.uint64(out)


def _sfc64_normal(p):
    """Plain-Python twin of the normal draw the kernels emit: numpy's random_standard_normal.

    ``p`` is a numpy array of the four state words (advanced in place).
    """
    r = _twin_next(p)
    idx = r & _MASK8
    rabs = (r >> _U9) & _MASK52
    x = float(rabs) * wi_double[idx]
    if (r >> _U8) & _ONE:
        x = -x
    if rabs < ki_double[idx]:
        return x  # 98.5% of the draws (the mean of ki / 2^52)
    x, *p[:] = _normal_rest(*(np.uint64(w) for w in p), idx, rabs, x)
    return x


@jit
def _exponential_rest(s0, s1, s2, s3, idx, x):
    # numpy's random_standard_exponential from its first failed layer test on; returns (x, state)
    while True:
        if idx == 0:
            r, s0, s1, s2, s3 = _step(s0, s1, s2, s3)
            return ziggurat_exp_r - np.log1p(-_to_double(r)), s0, s1, s2, s3
        r, s0, s1, s2, s3 = _step(s0, s1, s2, s3)
        if (fe_double[idx - 1] - fe_double[idx]) * _to_double(r) + fe_double[idx] < np.exp(-x):
            return x, s0, s1, s2, s3
        r, s0, s1, s2, s3 = _step(s0, s1, s2, s3)  # rejected: numpy draws afresh
        ri = r >> _U3
        idx = ri & _MASK8
        ri >>= _U8
        x = float(ri) * we_double[idx]
        if ri < ke_double[idx]:
            return x, s0, s1, s2, s3


def _sfc64_exponential(p):
    """Plain-Python twin of the exponential draw the kernels emit: numpy's random_standard_exponential."""
    r = _twin_next(p) >> _U3
    idx = r & _MASK8
    ri = r >> _U8
    x = float(ri) * we_double[idx]
    if ri < ke_double[idx]:
        return x  # 97.8% of the draws (the mean of ke / 2^53)
    x, *p[:] = _exponential_rest(*(np.uint64(w) for w in p), idx, x)
    return x


def _sfc64_uniform(p):
    """Plain-Python twin of the uniform draw the kernels emit: numpy's next_double."""
    return float(_twin_next(p) >> _U11) * _TO_DOUBLE


class Sfc64Local(NamedTuple):
    """A kernel's private copy of an SFC64 state (:func:`local_rng`): a pointer to four words on its stack."""

    words: object


def _is_stream(gen) -> bool:
    return isinstance(gen, types.BaseNamedTuple) and gen.instance_class is Sfc64Stream


def _is_local(gen) -> bool:
    return isinstance(gen, types.BaseNamedTuple) and gen.instance_class is Sfc64Local


# --- the fast paths, emitted as LLVM IR where the draw is --------------------------
# The layer test that settles 99% of the draws is emitted instruction by instruction
# into the calling function, so no function boundary can keep LLVM from holding a
# kernel's state words in registers (a compiled helper, which LLVM declines to inline
# once a loop draws from it at several places, receives the state's address and pins it
# in memory). The instructions are those of _sfc64_uniform, _sfc64_normal and
# _sfc64_exponential above, their plain-Python twins; tests compare both with numpy's
# streams (tests/test_rng.py).

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_F64 = ir.DoubleType()
_REST_WORDS = (types.uint64,) * 4
_NORMAL_REST = types.Tuple((types.float64,) + _REST_WORDS)(*_REST_WORDS, types.uint64, types.uint64, types.float64)
_EXPONENTIAL_REST = types.Tuple((types.float64,) + _REST_WORDS)(*_REST_WORDS, types.uint64, types.float64)


def _word(builder, p, k):
    return builder.gep(p, [ir.Constant(_I32, k)])


def _emit_next(builder, p):
    """SFC64's step on the words at ``p`` (numpy's sfc64_next); returns the 64-bit output."""
    a, b, c, counter = (builder.load(_word(builder, p, k)) for k in range(4))
    tmp = builder.add(builder.add(a, b), counter)
    builder.store(builder.add(counter, ir.Constant(_I64, 1)), _word(builder, p, 3))
    builder.store(builder.xor(b, builder.lshr(b, ir.Constant(_I64, 11))), _word(builder, p, 0))
    builder.store(builder.add(c, builder.shl(c, ir.Constant(_I64, 3))), _word(builder, p, 1))
    rotl = builder.or_(builder.shl(c, ir.Constant(_I64, 24)), builder.lshr(c, ir.Constant(_I64, 40)))
    builder.store(builder.add(rotl, tmp), _word(builder, p, 2))
    return tmp


def _table(builder, name, values, kind):
    """A 256-entry constant table of the ziggurats as a global of the module (one per module)."""
    module = builder.module
    symbol = f"ldpsim_ziggurat_{name}"
    table = module.globals.get(symbol)
    if table is None:
        array = ir.ArrayType(kind, len(values))
        table = ir.GlobalVariable(module, array, symbol)
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(array, [ir.Constant(kind, v) for v in
                                                 (values.tolist() if kind is _F64 else [int(x) for x in values])])
    return table


def _entry(builder, table, idx):
    return builder.load(builder.gep(table, [ir.Constant(_I32, 0), idx]))


def _emit_rest(context, builder, p, rest, signature, extra):
    """Call ``rest(s0, s1, s2, s3, *extra)`` on the words at ``p`` (by value), store the new words; the draw."""
    words = [builder.load(_word(builder, p, k)) for k in range(4)]
    cres = context.compile_subroutine(builder, rest.py_func, signature)
    out = context.call_internal(builder, cres.fndesc, signature, words + list(extra))
    for k in range(4):
        builder.store(builder.extract_value(out, k + 1), _word(builder, p, k))
    return builder.extract_value(out, 0)


def _emit_with_rest(context, builder, p, accept, x, rest, signature, extra):
    """``x`` if ``accept``, else the slow path's draw (a branch LLVM lays out as unlikely)."""
    here = builder.block
    with builder.if_then(builder.not_(accept), likely=False):
        slow = _emit_rest(context, builder, p, rest, signature, extra)
        slow_block = builder.block
    result = builder.phi(_F64)
    result.add_incoming(x, here)
    result.add_incoming(slow, slow_block)
    return result


def _emit_uniform(context, builder, p):
    r = _emit_next(builder, p)
    return builder.fmul(builder.uitofp(builder.lshr(r, ir.Constant(_I64, 11)), _F64), ir.Constant(_F64, _TO_DOUBLE))


def _emit_normal(context, builder, p):
    r = _emit_next(builder, p)
    idx = builder.and_(r, ir.Constant(_I64, 0xFF))
    rabs = builder.and_(builder.lshr(r, ir.Constant(_I64, 9)), ir.Constant(_I64, int(_MASK52)))
    magnitude = builder.fmul(builder.uitofp(rabs, _F64), _entry(builder, _table(builder, "wi", wi_double, _F64), idx))
    negative = builder.trunc(builder.lshr(r, ir.Constant(_I64, 8)), ir.IntType(1))
    x = builder.select(negative, builder.fneg(magnitude), magnitude)
    accept = builder.icmp_unsigned("<", rabs, _entry(builder, _table(builder, "ki", ki_double, _I64), idx))
    return _emit_with_rest(context, builder, p, accept, x, _normal_rest, _NORMAL_REST, [idx, rabs, x])


def _emit_exponential(context, builder, p):
    r = builder.lshr(_emit_next(builder, p), ir.Constant(_I64, 3))
    idx = builder.and_(r, ir.Constant(_I64, 0xFF))
    ri = builder.lshr(r, ir.Constant(_I64, 8))
    x = builder.fmul(builder.uitofp(ri, _F64), _entry(builder, _table(builder, "we", we_double, _F64), idx))
    accept = builder.icmp_unsigned("<", ri, _entry(builder, _table(builder, "ke", ke_double, _I64), idx))
    return _emit_with_rest(context, builder, p, accept, x, _exponential_rest, _EXPONENTIAL_REST, [idx, x])


def _inlined(emit):
    """An intrinsic ``draw(p) -> float64`` (``p`` the state words) whose code ``emit`` writes in place."""
    @intrinsic
    def draw(typingctx, p):
        sig = types.float64(p)

        def codegen(context, builder, signature, args):
            return emit(context, builder, args[0])

        return sig, codegen

    return draw


_uniform_intrinsic = _inlined(_emit_uniform)
_normal_intrinsic = _inlined(_emit_normal)
_exponential_intrinsic = _inlined(_emit_exponential)


# --- a kernel's private copy of the state ---------------------------------------


@intrinsic
def _copy_in(typingctx, address):
    """Four words on the calling function's stack (its entry block), copied from ``address``."""
    sig = types.CPointer(types.uint64)(address)

    def codegen(context, builder, signature, args):
        word = ir.IntType(64)
        slot = cgutils.alloca_once(builder, word, size=4, name="sfc64_state")
        src = builder.inttoptr(args[0], word.as_pointer())
        for k in range(4):
            at = ir.Constant(ir.IntType(32), k)
            builder.store(builder.load(builder.gep(src, [at])), builder.gep(slot, [at]))
        return slot

    return sig, codegen


@intrinsic
def _copy_out(typingctx, address, words):
    """Store the four ``words`` back at ``address``."""
    sig = types.void(address, words)

    def codegen(context, builder, signature, args):
        word = ir.IntType(64)
        dst = builder.inttoptr(args[0], word.as_pointer())
        for k in range(4):
            at = ir.Constant(ir.IntType(32), k)
            builder.store(builder.load(builder.gep(args[1], [at])), builder.gep(dst, [at]))
        return context.get_dummy_value()

    return sig, codegen


__all__ = ["Sfc64Local", "Sfc64Stream", "kernel_rng"]
