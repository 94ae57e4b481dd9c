"""The lanes' draws: the SFC64 generators of several replications stepped in one kernel, as vectors.

A kernel that advances ``L`` replications side by side is handed
:func:`kernel_rngs` ``(gens)``; the draws of :mod:`.draws` on its private copy
(:class:`Sfc64LocalLanes`) compile to the vector intrinsics made here, lane
``l``'s number the one lane ``l``'s generator gives, bit for bit (the scalar
recurrence, tables and slow paths are :mod:`.sfc64`'s).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from ..jit import DISABLED
from ..lanes import LaneVector, as_vector
from .sfc64 import (_EXPONENTIAL_REST, _F64, _I32, _I64, _MASK52, _NORMAL_REST, _TO_DOUBLE, _entry, _exponential_rest,
                    _normal_rest, _table, _word, kernel_rng)
from .ziggurat import ke_double, ki_double, we_double, wi_double

# --- lanes: the generators of several replications in one kernel ------------------
# A kernel that advances L replications side by side (issue 19; ldpsim.engine.dialect.lanes) is handed
# kernel_rngs(gens): the C state addresses of their L SFC64 generators, a tuple, so that L is a
# constant of the compiled code. local_rng copies the words into four vectors <L x i64> on the
# kernel's stack (word k of every lane in one vector, which LLVM keeps in a register), and
# uniform, normal and exponential then step all L states with vector instructions and return a
# LaneVector: lane l's number is the one lane l's generator gives, bit for bit. The ziggurat's
# layer test is made for all lanes at once; a lane that fails it (1.5% of normals, 2.2% of
# exponentials) takes numpy's slow path alone, on its own words (_normal_rest, _exponential_rest),
# while the others wait. normal_where, uniform_where and exponential_where draw only in the lanes
# a mask selects (the others keep their state and their old number): the rejection loops of
# lane-generic kernels. release_rng writes every lane's words back.


class Sfc64Lanes(NamedTuple):
    """A kernel's handles on the SFC64 generators of ``L`` replications (``addresses``: a tuple of ``L``)."""

    addresses: tuple
    owners: tuple


def kernel_rngs(gens):
    """What a lane-generic kernel is handed to draw from the generators ``gens`` (one per lane).

    :func:`kernel_rng` of the one generator for a single lane; an
    :class:`Sfc64Lanes` for several, which must all be on SFC64 (the lanes
    step SFC64 with vector instructions) and need numba.
    """
    gens = tuple(gens)
    if len(gens) == 1:
        return kernel_rng(gens[0])
    if DISABLED or not all(type(g.bit_generator) is np.random.SFC64 for g in gens):
        raise ValueError("lanes need numba and generators on SFC64; run one lane at a time")
    return Sfc64Lanes(tuple(np.uint64(g.bit_generator.ctypes.state_address) for g in gens), gens)


def _is_lanes(rngs) -> bool:
    return isinstance(rngs, types.BaseNamedTuple) and rngs.instance_class is Sfc64Lanes


class Sfc64LocalLanes(NamedTuple):
    """A lanes kernel's private copy of ``L`` SFC64 states: a pointer to four ``<L x i64>`` vectors on its stack."""

    words: object


def _is_local_lanes(local) -> bool:
    return isinstance(local, types.BaseNamedTuple) and local.instance_class is Sfc64LocalLanes


@intrinsic
def _copy_in_lanes(typingctx, addresses):
    """Four vectors on the calling function's stack: word ``k`` of lane ``j`` copied from ``addresses[j]``."""
    count = len(addresses)
    sig = types.CPointer(LaneVector(types.int64, count))(addresses)

    def codegen(context, builder, signature, args):
        vty = ir.VectorType(_I64, count)
        slot = cgutils.alloca_once(builder, vty, size=4, name="sfc64_lanes")
        for k in range(4):
            vector = ir.Constant(vty, ir.Undefined)
            for j in range(count):
                src = builder.inttoptr(builder.extract_value(args[0], j), _I64.as_pointer())
                vector = builder.insert_element(vector, builder.load(builder.gep(src, [ir.Constant(_I32, k)])),
                                                ir.Constant(_I32, j))
            builder.store(vector, _word(builder, slot, k))
        return slot

    return sig, codegen


@intrinsic
def _copy_out_lanes(typingctx, addresses, words):
    """Store lane ``j``'s four words back at ``addresses[j]``."""
    count = len(addresses)
    sig = types.void(addresses, words)

    def codegen(context, builder, signature, args):
        for k in range(4):
            vector = builder.load(_word(builder, args[1], k))
            for j in range(count):
                dst = builder.inttoptr(builder.extract_value(args[0], j), _I64.as_pointer())
                builder.store(builder.extract_element(vector, ir.Constant(_I32, j)),
                              builder.gep(dst, [ir.Constant(_I32, k)]))
        return context.get_dummy_value()

    return sig, codegen


def _vconst(vty, value):
    return ir.Constant(vty, [ir.Constant(vty.element, value)] * vty.count)


def _emit_vnext(builder, p, vty, mask=None):
    """SFC64's step on every lane of the vectors at ``p`` (only the lanes of ``mask``, if given); the outputs."""
    a, b, c, counter = (builder.load(_word(builder, p, k)) for k in range(4))
    tmp = builder.add(builder.add(a, b), counter)
    rotl = builder.or_(builder.shl(c, _vconst(vty, 24)), builder.lshr(c, _vconst(vty, 40)))
    new = (builder.xor(b, builder.lshr(b, _vconst(vty, 11))), builder.add(c, builder.shl(c, _vconst(vty, 3))),
           builder.add(rotl, tmp), builder.add(counter, _vconst(vty, 1)))
    for k, (old, value) in enumerate(zip((a, b, c, counter), new)):
        builder.store(value if mask is None else builder.select(mask, value, old), _word(builder, p, k))
    return tmp


def _lookup(builder, name, values, kind, idx, count):
    """``values[idx[j]]`` in lane ``j``: one load per lane (faster than a gather instruction on the machine measured)."""
    table = _table(builder, name, values, kind)
    out = ir.Constant(ir.VectorType(kind, count), ir.Undefined)
    for j in range(count):
        at = ir.Constant(_I32, j)
        out = builder.insert_element(out, _entry(builder, table, builder.extract_element(idx, at)), at)
    return out


def _rest_function(context, builder, rest, signature, extra_types, count):
    """The lanes' slow path of ``rest``: an LLVM function ``(s0..s3, bits, extra...) -> {x, s0..s3}`` (one per module).

    It redraws, one lane after the other, the lanes whose bits are set in
    ``bits`` (lowest first), by numpy's slow path (``rest``) on that lane's
    words; the state vectors go in and out by value, so the kernel's stay in
    registers. (LLVM's ``preserve_all`` calling convention, which would spare
    the caller its saves around the call, gave 4% at 8 lanes and wrong numbers
    at 3 and 4 lanes on LLVM 22: not used.)
    """
    module = builder.module
    name = f"ldpsim_lanes_{rest.py_func.__name__}_{count}"
    function = module.globals.get(name)
    if function is not None:
        return function
    vty, fty = ir.VectorType(_I64, count), ir.VectorType(_F64, count)
    result = ir.LiteralStructType([fty, vty, vty, vty, vty])
    function = ir.Function(module, ir.FunctionType(result, [vty] * 4 + [_I64] + list(extra_types)), name)
    function.linkage = "internal"
    function.attributes.add("noinline")
    function.attributes.add("cold")
    entry, loop, done = (function.append_basic_block(label) for label in ("entry", "lane", "done"))
    b = ir.IRBuilder(entry)
    words0, bits0, extra = list(function.args[:4]), function.args[4], list(function.args[5:])
    b.branch(loop)
    b.position_at_end(loop)
    bits, x = b.phi(_I64), b.phi(fty)
    words = [b.phi(vty) for _ in range(4)]
    bits.add_incoming(bits0, entry)
    x.add_incoming(extra[-1], entry)  # the fast path's draw: the last extra argument
    for word, word0 in zip(words, words0):
        word.add_incoming(word0, entry)
    cttz = cgutils.get_or_insert_function(module, ir.FunctionType(_I64, [_I64, ir.IntType(1)]), "llvm.cttz.i64")
    lane = b.call(cttz, [bits, ir.Constant(ir.IntType(1), 1)])
    cres = context.compile_subroutine(b, rest.py_func, signature)
    _, out = context.call_conv.call_function(b, context.declare_function(module, cres.fndesc), signature.return_type,
                                             signature.args, [b.extract_element(v, lane) for v in words + extra])
    new_words = [b.insert_element(word, b.extract_value(out, k + 1), lane) for k, word in enumerate(words)]
    new_x = b.insert_element(x, b.extract_value(out, 0), lane)
    left = b.and_(bits, b.sub(bits, ir.Constant(_I64, 1)))  # the lanes still to redraw
    latch = b.block
    bits.add_incoming(left, latch)
    x.add_incoming(new_x, latch)
    for word, new in zip(words, new_words):
        word.add_incoming(new, latch)
    b.cbranch(b.icmp_unsigned("!=", left, ir.Constant(_I64, 0)), loop, done)
    b.position_at_end(done)
    out = ir.Constant(result, ir.Undefined)
    for k, value in enumerate([new_x] + new_words):
        out = b.insert_value(out, value, k)
    b.ret(out)
    return function


def _emit_vrest(context, builder, p, accept, x, rest, signature, extra, count):
    """``x``, with each lane that failed the layer test (``accept`` false) redrawn by numpy's slow path alone.

    ``extra`` are the slow path's arguments after the state words, as vectors, ``x`` last.
    """
    bits = builder.zext(builder.bitcast(builder.not_(accept), ir.IntType(count)), _I64)
    here = builder.block
    with builder.if_then(builder.icmp_unsigned("!=", bits, ir.Constant(_I64, 0)), likely=False):
        function = _rest_function(context, builder, rest, signature, [e.type for e in extra], count)
        words = [builder.load(_word(builder, p, k)) for k in range(4)]
        out = builder.call(function, words + [bits] + list(extra))
        for k in range(4):
            builder.store(builder.extract_value(out, k + 1), _word(builder, p, k))
        redrawn = builder.extract_value(out, 0)
        slow = builder.block
    result = builder.phi(x.type)
    result.add_incoming(x, here)
    result.add_incoming(redrawn, slow)
    return result


def _lanes_draw(emit):
    """Intrinsics ``draw(p)`` and ``draw_where(p, mask, other)`` on the lane vectors at ``p``, made by ``emit``."""
    @intrinsic
    def draw(typingctx, p):
        count = p.dtype.count
        sig = LaneVector(types.float64, count)(p)

        def codegen(context, builder, signature, args):
            return emit(context, builder, args[0], count, None)

        return sig, codegen

    @intrinsic
    def draw_where(typingctx, p, mask, other):
        count = p.dtype.count
        result = LaneVector(types.float64, count)
        sig = result(p, mask, other)

        def codegen(context, builder, signature, args):
            lanes = as_vector(context, builder, args[1], mask, LaneVector(types.boolean, count))
            fresh = emit(context, builder, args[0], count, lanes)
            return builder.select(lanes, fresh, as_vector(context, builder, args[2], other, result))

        return sig, codegen

    return draw, draw_where


def _emit_vuniform(context, builder, p, count, mask):
    vty = ir.VectorType(_I64, count)
    r = _emit_vnext(builder, p, vty, mask)
    return builder.fmul(builder.uitofp(builder.lshr(r, _vconst(vty, 11)), ir.VectorType(_F64, count)),
                        _vconst(ir.VectorType(_F64, count), _TO_DOUBLE))


def _emit_vnormal(context, builder, p, count, mask):
    vty, fty = ir.VectorType(_I64, count), ir.VectorType(_F64, count)
    r = _emit_vnext(builder, p, vty, mask)
    idx = builder.and_(r, _vconst(vty, 0xFF))
    rabs = builder.and_(builder.lshr(r, _vconst(vty, 9)), _vconst(vty, int(_MASK52)))
    magnitude = builder.fmul(builder.uitofp(rabs, fty), _lookup(builder, "wi", wi_double, _F64, idx, count))
    negative = builder.trunc(builder.lshr(r, _vconst(vty, 8)), ir.VectorType(ir.IntType(1), count))
    x = builder.select(negative, builder.fneg(magnitude), magnitude)
    accept = builder.icmp_unsigned("<", rabs, _lookup(builder, "ki", ki_double, _I64, idx, count))
    if mask is not None:  # lanes that did not draw need no slow path
        accept = builder.or_(accept, builder.not_(mask))
    return _emit_vrest(context, builder, p, accept, x, _normal_rest, _NORMAL_REST, [idx, rabs, x], count)


def _emit_vexponential(context, builder, p, count, mask):
    vty, fty = ir.VectorType(_I64, count), ir.VectorType(_F64, count)
    r = builder.lshr(_emit_vnext(builder, p, vty, mask), _vconst(vty, 3))
    idx = builder.and_(r, _vconst(vty, 0xFF))
    ri = builder.lshr(r, _vconst(vty, 8))
    x = builder.fmul(builder.uitofp(ri, fty), _lookup(builder, "we", we_double, _F64, idx, count))
    accept = builder.icmp_unsigned("<", ri, _lookup(builder, "ke", ke_double, _I64, idx, count))
    if mask is not None:
        accept = builder.or_(accept, builder.not_(mask))
    return _emit_vrest(context, builder, p, accept, x, _exponential_rest, _EXPONENTIAL_REST, [idx, x], count)


_vuniform, _vuniform_where = _lanes_draw(_emit_vuniform)
_vnormal, _vnormal_where = _lanes_draw(_emit_vnormal)
_vexponential, _vexponential_where = _lanes_draw(_emit_vexponential)


__all__ = ["Sfc64Lanes", "Sfc64LocalLanes", "kernel_rngs"]
