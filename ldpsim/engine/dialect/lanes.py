"""Lanes: several replications side by side in one kernel call, as the lanes of SIMD vectors.

A path kernel is written once, in plain numba, for one replication: floats,
``(d,)`` arrays, a generator. Handed the generators of ``L`` replications
(:func:`ldpsim.engine.dialect.rng.kernel_rngs`) and arrays with a trailing lane axis
(:class:`LaneArray`), the same source compiles to a kernel that advances all
``L`` at once: each float becomes a :class:`LaneVector` (an LLVM
``<L x double>``, one SIMD register at ``L = 8`` on AVX-512), each draw a
vector draw (:mod:`ldpsim.engine.dialect.rng`), each arithmetic operation one vector
instruction. Lane ``l`` makes exactly the operations of a run of its own, in
the same order and in IEEE arithmetic (no fused or reassociated operations),
so its numbers are that run's to the bit, whatever ``L``.

What the kernels write differently from plain Python, so that one source
serves one lane and many:

* a choice by a condition that may differ between lanes is :func:`where`
  (``where(c, a, b)`` is ``a if c else b``; in lanes both are computed and
  selected lane by lane);
* a loop that runs until a per-lane condition clears runs while
  :func:`any_lane` of it holds, and draws only for the lanes still in it
  (``rng.normal_where``); ``not`` of a per-lane condition is :func:`lnot`;
* a variable that starts as a number (``s = 0.0``) and is later given a lane
  vector simply becomes a lane vector: the types unify, and the number is
  broadcast to every lane.

Arrays: a :class:`LaneArray` is a C-contiguous array whose last axis holds the
lanes; inside a kernel it indexes like the array without that axis, and a full
index gives a :class:`LaneVector` (a load of ``L`` adjacent numbers); an index
holding lane vectors gathers each lane's own element (a dataset per
replication, indexed by each lane's draw).

With ``L = 1`` none of this is used: the kernels get floats and plain arrays,
and compile to the one-replication code. Without numba
(``NUMBA_DISABLE_JIT=1``) runs use one lane.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.imputils import lower_cast
from numba.extending import (intrinsic, make_attribute_wrapper, models, overload, overload_attribute, register_model,
                             typeof_impl, unbox, NativeValue)

from .jit import DISABLED, OVERLOAD_OPTIONS

_I1, _I8, _I32, _I64, _F64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()


# --- the lane vector ---------------------------------------------------------


class LaneVector(types.Type):
    """``count`` numbers of type ``dtype`` (float64, int64 or boolean), one per lane, in one LLVM vector."""

    def __init__(self, dtype, count: int):
        self.dtype = dtype
        self.count = int(count)
        super().__init__(name=f"LaneVector({dtype}, {count})")

    def unify(self, typingctx, other):
        """A number and a lane vector unify to a lane vector (the number is broadcast)."""
        if isinstance(other, LaneVector):
            if other.count != self.count:
                return None
            dtype = typingctx.unify_pairs(self.dtype, other.dtype)
            return None if dtype is None else LaneVector(dtype, self.count)
        if isinstance(other, (types.Number, types.Boolean)):
            dtype = typingctx.unify_pairs(self.dtype, other)
            return None if dtype is None else LaneVector(_element(dtype), self.count)
        return None

    def can_convert_from(self, typingctx, other):
        if isinstance(other, (types.Number, types.Boolean)):
            return types.Conversion.safe
        if isinstance(other, LaneVector) and other.count == self.count:
            return types.Conversion.safe
        return None


def _element(dtype):
    """The element type a lane vector holds for a scalar type: float64, int64 or boolean."""
    if isinstance(dtype, types.Boolean):
        return types.boolean
    if isinstance(dtype, types.Integer):
        return types.int64
    if isinstance(dtype, types.Float):
        return types.float64
    raise TypeError(f"no lane vectors of {dtype}")


def _llvm_element(dtype):
    return _I1 if dtype == types.boolean else (_I64 if dtype == types.int64 else _F64)


@register_model(LaneVector)
class _LaneVectorModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.VectorType(_llvm_element(fe_type.dtype), fe_type.count))


def is_lanes(ty) -> bool:
    """Whether the numba type ``ty`` is a :class:`LaneVector`."""
    return isinstance(ty, LaneVector)


def _vector_intrinsic(builder, name, vty):
    """The LLVM intrinsic ``name`` (``llvm.fabs``, ``llvm.sqrt``) on vectors of type ``vty``."""
    element = "f64" if vty.element == _F64 else f"i{vty.element.width}"
    fnty = ir.FunctionType(vty, [vty])
    return cgutils.get_or_insert_function(builder.module, fnty, f"{name}.v{vty.count}{element}")


def _splat(builder, value, vty):
    undef = ir.Constant(vty, ir.Undefined)
    first = builder.insert_element(undef, value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(first, undef, ir.Constant(ir.VectorType(_I32, vty.count), [0] * vty.count))


def as_vector(context, builder, value, fromty, toty):
    """``value`` of type ``fromty`` (a number or a lane vector) as the lane vector type ``toty``."""
    vty = ir.VectorType(_llvm_element(toty.dtype), toty.count)
    if not isinstance(fromty, LaneVector):
        return _splat(builder, context.cast(builder, value, fromty, toty.dtype), vty)
    src, dst = fromty.dtype, toty.dtype
    if src == dst:
        return value
    if dst == types.float64:
        return builder.uitofp(value, vty) if src == types.boolean else builder.sitofp(value, vty)
    if dst == types.int64 and src == types.boolean:
        return builder.zext(value, vty)
    if dst == types.int64 and src == types.float64:
        return builder.fptosi(value, vty)
    if dst == types.boolean:  # truth: nonzero
        zero = ir.Constant(value.type, None)
        return builder.fcmp_unordered("!=", value, zero) if src == types.float64 else builder.icmp_unsigned(
            "!=", value, zero)
    raise TypeError(f"cannot convert {fromty} to {toty}")


@lower_cast(types.Number, LaneVector)
@lower_cast(types.Boolean, LaneVector)
@lower_cast(LaneVector, LaneVector)
def _cast_to_lanes(context, builder, fromty, toty, val):
    return as_vector(context, builder, val, fromty, toty)


# --- arithmetic, comparisons, logic --------------------------------------------

_ARITH = {operator.add: ("fadd", "add"), operator.sub: ("fsub", "sub"), operator.mul: ("fmul", "mul"),
          operator.truediv: ("fdiv", None)}
_INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
            operator.itruediv: operator.truediv}
_COMPARE = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==",
            operator.ne: "!="}
_LOGIC = {operator.and_: "and_", operator.or_: "or_", operator.xor: "xor", operator.iand: "and_",
          operator.ior: "or_", operator.ixor: "xor"}


def _operands(typingctx, a, b, op):
    """``(count, operand type, result type)`` of ``a op b`` with a lane vector among them, or None."""
    if not (isinstance(a, LaneVector) or isinstance(b, LaneVector)):
        return None
    count = a.count if isinstance(a, LaneVector) else b.count
    if isinstance(a, LaneVector) and isinstance(b, LaneVector) and a.count != b.count:
        return None
    ea = a.dtype if isinstance(a, LaneVector) else a
    eb = b.dtype if isinstance(b, LaneVector) else b
    if not all(isinstance(e, (types.Number, types.Boolean)) for e in (ea, eb)):
        return None
    scalar = typingctx.resolve_function_type(op, (_element(ea), _element(eb)), {})
    if scalar is None:
        return None
    if op in _COMPARE:
        operand = _element(typingctx.unify_pairs(_element(ea), _element(eb)))
        return count, LaneVector(operand, count), LaneVector(types.boolean, count)
    result = LaneVector(_element(scalar.return_type), count)
    return count, result, result


def _binary_intrinsic(op):
    @intrinsic
    def binary(typingctx, a, b):
        found = _operands(typingctx, a, b, op)
        if found is None:
            return None
        _, operand, result = found

        def codegen(context, builder, signature, args):
            x = as_vector(context, builder, args[0], signature.args[0], operand)
            y = as_vector(context, builder, args[1], signature.args[1], operand)
            kind = operand.dtype
            if op in _COMPARE:
                pred = _COMPARE[op]
                if kind == types.float64:  # as numba's scalars: ordered, except != (true for NaN)
                    return builder.fcmp_unordered(pred, x, y) if pred == "!=" else builder.fcmp_ordered(pred, x, y)
                if kind == types.boolean:
                    return builder.icmp_unsigned(pred, x, y)
                return builder.icmp_signed(pred, x, y)
            if op in _LOGIC:
                return getattr(builder, _LOGIC[op])(x, y)
            name = _ARITH[op][0 if kind == types.float64 else 1]
            return getattr(builder, name)(x, y)

        return result(a, b), codegen

    return binary


def _register_binary(op, prim):
    @overload(op, jit_options=OVERLOAD_OPTIONS, inline="always")
    def impl(a, b):
        if isinstance(a, LaneVector) or isinstance(b, LaneVector):
            return lambda a, b: prim(a, b)
        return None


for _op in list(_ARITH) + list(_COMPARE) + [operator.and_, operator.or_, operator.xor]:
    _register_binary(_op, _binary_intrinsic(_op))
for _iop, _op in _INPLACE.items():
    _register_binary(_iop, _binary_intrinsic(_op))
for _iop, _op in ((operator.iand, operator.and_), (operator.ior, operator.or_), (operator.ixor, operator.xor)):
    _register_binary(_iop, _binary_intrinsic(_op))


@intrinsic
def _negate(typingctx, a):
    def codegen(context, builder, signature, args):
        if a.dtype == types.float64:
            return builder.fneg(args[0])
        return builder.neg(args[0])

    return a(a), codegen


@overload(operator.neg, jit_options=OVERLOAD_OPTIONS, inline="always")
def _neg(a):
    if isinstance(a, LaneVector) and a.dtype != types.boolean:
        return lambda a: _negate(a)
    return None


@intrinsic
def _fabs(typingctx, a):
    def codegen(context, builder, signature, args):
        if a.dtype == types.float64:
            return builder.call(_vector_intrinsic(builder, "llvm.fabs", args[0].type), args)
        return builder.select(builder.icmp_signed("<", args[0], ir.Constant(args[0].type, None)),
                              builder.neg(args[0]), args[0])

    return a(a), codegen


@overload(abs, jit_options=OVERLOAD_OPTIONS, inline="always")
def _abs(a):
    if isinstance(a, LaneVector) and a.dtype != types.boolean:
        return lambda a: _fabs(a)
    return None


def _minmax(pred):
    # numba's min / max of numbers: select(b OP a, b, a), an ordered comparison (a NaN in b keeps a)
    @intrinsic
    def minmax(typingctx, a, b):
        found = _operands(typingctx, a, b, operator.lt)
        if found is None:
            return None
        operand = found[1]

        def codegen(context, builder, signature, args):
            x = as_vector(context, builder, args[0], signature.args[0], operand)
            y = as_vector(context, builder, args[1], signature.args[1], operand)
            if operand.dtype == types.float64:
                take = builder.fcmp_ordered(pred, y, x)
            else:
                take = builder.icmp_signed(pred, y, x)
            return builder.select(take, y, x)

        return operand(a, b), codegen

    return minmax


_min2, _max2 = _minmax("<"), _minmax(">")


@overload(min, jit_options=OVERLOAD_OPTIONS, inline="always")
def _min(a, b):
    if isinstance(a, LaneVector) or isinstance(b, LaneVector):
        return lambda a, b: _min2(a, b)
    return None


@overload(max, jit_options=OVERLOAD_OPTIONS, inline="always")
def _max(a, b):
    if isinstance(a, LaneVector) or isinstance(b, LaneVector):
        return lambda a, b: _max2(a, b)
    return None


@intrinsic
def _to_float(typingctx, a):
    result = LaneVector(types.float64, a.count)

    def codegen(context, builder, signature, args):
        return as_vector(context, builder, args[0], a, result)

    return result(a), codegen


@intrinsic
def _to_int(typingctx, a):
    result = LaneVector(types.int64, a.count)

    def codegen(context, builder, signature, args):
        return as_vector(context, builder, args[0], a, result)

    return result(a), codegen


@overload(float, jit_options=OVERLOAD_OPTIONS, inline="always")
def _float(a):
    if isinstance(a, LaneVector):
        return lambda a: _to_float(a)
    return None


@overload(int, jit_options=OVERLOAD_OPTIONS, inline="always")
def _int(a):
    if isinstance(a, LaneVector):
        return lambda a: _to_int(a)  # truncates toward zero, as int() of a float
    return None


# --- math: exact vector instructions, or numba's own scalar code lane by lane ------


@intrinsic
def _vsqrt(typingctx, a):
    def codegen(context, builder, signature, args):
        return builder.call(_vector_intrinsic(builder, "llvm.sqrt", args[0].type), args)  # correctly rounded

    return a(a), codegen


def _lane_by_lane(func):
    # ``func`` of every lane by numba's implementation for one float64: the same bits as the scalar code
    @intrinsic
    def each(typingctx, a):
        def codegen(context, builder, signature, args):
            scalar = context.get_function(func, types.float64(types.float64))
            out = args[0]
            for j in range(a.count):
                at = ir.Constant(_I32, j)
                out = builder.insert_element(out, scalar(builder, [builder.extract_element(args[0], at)]), at)
            return out

        return a(a), codegen

    return each


def _register_math(func, prim):
    @overload(func, jit_options=OVERLOAD_OPTIONS, inline="always")
    def impl(a):
        if isinstance(a, LaneVector) and a.dtype == types.float64:
            return lambda a: prim(a)
        return None


_register_math(math.sqrt, _vsqrt)
for _func in (math.exp, math.log, math.log1p, math.expm1, math.tan):  # tan: the quantile model's Cauchy draw
    _register_math(_func, _lane_by_lane(_func))


@intrinsic
def _finite(typingctx, a):
    result = LaneVector(types.boolean, a.count)

    def codegen(context, builder, signature, args):
        inf = _splat(builder, ir.Constant(_F64, math.inf), args[0].type)
        return builder.fcmp_ordered("<", builder.call(_vector_intrinsic(builder, "llvm.fabs", args[0].type), args), inf)

    return result(a), codegen


@overload(np.isfinite, jit_options=OVERLOAD_OPTIONS, inline="always")
def _isfinite(a):
    if isinstance(a, LaneVector) and a.dtype == types.float64:
        return lambda a: _finite(a)
    return None


# --- the functions lane-generic code calls -------------------------------------------


def where(cond, a, b):
    """``a`` where ``cond`` holds, else ``b``: lane by lane for lane vectors (both are computed)."""
    return a if cond else b


def any_lane(cond) -> bool:
    """Whether ``cond`` holds in some lane (for a plain boolean: ``cond``)."""
    return bool(cond)


def all_lanes(cond) -> bool:
    """Whether ``cond`` holds in every lane (for a plain boolean: ``cond``)."""
    return bool(cond)


def lnot(cond):
    """``not cond``, lane by lane."""
    return not cond


def lane_value(value, index):
    """Lane ``index``'s number of a lane vector (a number is every lane's)."""
    return value


@intrinsic
def _select(typingctx, cond, a, b):
    count = cond.count if isinstance(cond, LaneVector) else (a.count if isinstance(a, LaneVector) else b.count)
    parts = [t.dtype if isinstance(t, LaneVector) else t for t in (a, b)]
    result = LaneVector(_element(typingctx.unify_pairs(*parts)), count)
    mask = LaneVector(types.boolean, count)

    def codegen(context, builder, signature, args):
        c = as_vector(context, builder, args[0], signature.args[0], mask)
        x = as_vector(context, builder, args[1], signature.args[1], result)
        y = as_vector(context, builder, args[2], signature.args[2], result)
        return builder.select(c, x, y)

    return result(cond, a, b), codegen


@intrinsic
def _select_scalar(typingctx, cond, a, b):
    result = typingctx.unify_pairs(a, b)
    if result is None or not isinstance(cond, (types.Boolean, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        truth = context.is_true(builder, cond, args[0])
        x = context.cast(builder, args[1], a, result)
        y = context.cast(builder, args[2], b, result)
        return builder.select(truth, x, y)

    return result(cond, a, b), codegen


@overload(where, jit_options=OVERLOAD_OPTIONS, inline="always")
def _where(cond, a, b):
    if any(isinstance(t, LaneVector) for t in (cond, a, b)):
        return lambda cond, a, b: _select(cond, a, b)
    return lambda cond, a, b: _select_scalar(cond, a, b)


def _reduce(all_of):
    @intrinsic
    def reduce(typingctx, cond):
        def codegen(context, builder, signature, args):
            bits = builder.bitcast(args[0], ir.IntType(cond.count))
            if all_of:
                return builder.icmp_unsigned("==", bits, ir.Constant(bits.type, (1 << cond.count) - 1))
            return builder.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0))

        return types.boolean(cond), codegen

    return reduce


_any, _all = _reduce(False), _reduce(True)


@overload(any_lane, jit_options=OVERLOAD_OPTIONS, inline="always")
def _any_lane(cond):
    if isinstance(cond, LaneVector) and cond.dtype == types.boolean:
        return lambda cond: _any(cond)
    return lambda cond: cond


@overload(all_lanes, jit_options=OVERLOAD_OPTIONS, inline="always")
def _all_lanes(cond):
    if isinstance(cond, LaneVector) and cond.dtype == types.boolean:
        return lambda cond: _all(cond)
    return lambda cond: cond


@intrinsic
def _invert(typingctx, cond):
    def codegen(context, builder, signature, args):
        return builder.not_(args[0])

    return cond(cond), codegen


@overload(lnot, jit_options=OVERLOAD_OPTIONS, inline="always")
def _lnot(cond):
    if isinstance(cond, LaneVector) and cond.dtype == types.boolean:
        return lambda cond: _invert(cond)
    return lambda cond: not cond


@intrinsic
def _extract(typingctx, value, index):
    def codegen(context, builder, signature, args):
        return builder.extract_element(args[0], builder.trunc(args[1], _I32) if args[1].type.width > 32
                                       else args[1])

    return value.dtype(value, index), codegen


@overload(lane_value, jit_options=OVERLOAD_OPTIONS, inline="always")
def _lane_value(value, index):
    if isinstance(value, LaneVector):
        return lambda value, index: _extract(value, index)
    return lambda value, index: value


# --- arrays with a lane axis ----------------------------------------------------------


class LaneArray:
    """An array whose last axis holds ``L`` lanes; a kernel indexes it like the array without that axis.

    An index of numbers gives a :class:`LaneVector` (``L`` adjacent numbers,
    one load); an index with lane vectors among its parts gathers lane ``l``'s
    element at lane ``l``'s indices (assignment scatters), so each lane reads
    its own data: ``x[i, k]`` with ``i`` a lane vector is ``array[i[l], k, l]``
    in lane ``l``. A read-only array (``array.flags.writeable`` false) is
    data the kernel never writes, and its loads may be reused.

    Parameters
    ----------
    array : numpy.ndarray
        C-contiguous, ``shape[-1] = L``; kept (not copied), so the kernel's
        writes land in it.
    """

    __slots__ = ("array",)

    def __init__(self, array):
        if not (isinstance(array, np.ndarray) and array.ndim >= 1 and array.flags.c_contiguous
                and array.dtype in (np.float64, np.int64)):
            raise TypeError("a LaneArray wraps a C-contiguous float64 or int64 array with the lanes last")
        self.array = array

    @property
    def lanes(self) -> int:
        return self.array.shape[-1]

    def lane(self, index: int) -> np.ndarray:
        """Lane ``index``'s array (a view)."""
        return self.array[..., index]


class LaneArrayType(types.Type):
    """numba's type of a :class:`LaneArray`: the array's type and the number of lanes."""

    def __init__(self, array, count: int):
        self.array = array
        self.count = int(count)
        self.ndim = array.ndim - 1
        super().__init__(name=f"LaneArray({array}, {count})")

    @property
    def vector(self):
        return LaneVector(_element(self.array.dtype), self.count)


@register_model(LaneArrayType)
class _LaneArrayModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("array", fe_type.array)])


make_attribute_wrapper(LaneArrayType, "array", "array")


@typeof_impl.register(LaneArray)
def _typeof_lane_array(value, context):
    return LaneArrayType(typeof_array(value.array), value.array.shape[-1])


def typeof_array(array):
    from numba import typeof

    return typeof(array)


@unbox(LaneArrayType)
def _unbox_lane_array(typ, obj, c):
    inner = c.pyapi.object_getattr_string(obj, "array")
    native = c.unbox(typ.array, inner)
    c.pyapi.decref(inner)
    out = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    out.array = native.value
    return NativeValue(out._getvalue(), is_error=native.is_error)


def _indices(index):
    """The index types of ``index``: integers or int64 lane vectors (a number or a tuple of them), or None."""
    parts = list(index.types) if isinstance(index, types.BaseTuple) else [index]
    if all(isinstance(t, types.Integer) or (isinstance(t, LaneVector) and t.dtype == types.int64) for t in parts):
        return parts
    return None


def _gathers(parts) -> bool:
    return any(isinstance(t, LaneVector) for t in parts)


def _element_pointer(context, builder, aryty, ary, inds):
    array = context.make_array(aryty)(context, builder, ary)
    inds = [context.cast(builder, i, t, types.intp) for i, t in inds]
    return cgutils.get_item_pointer(context, builder, aryty, array, inds)


def _unpack_index(builder, index, indexty):
    if not isinstance(indexty, types.BaseTuple):
        return [(index, indexty)]
    return [(builder.extract_value(index, k), t) for k, t in enumerate(indexty.types)]


def _invariant(builder, load):
    """Mark a load from an array the kernel never writes (a read-only array): LLVM may then reuse it."""
    load.set_metadata("invariant.load", builder.module.add_metadata([]))
    return load


@intrinsic
def _lane_load(typingctx, lanes, index):
    vector = lanes.vector

    def codegen(context, builder, signature, args):
        struct = cgutils.create_struct_proxy(lanes)(context, builder, value=args[0])
        inds = _unpack_index(builder, args[1], index) + [(ir.Constant(_I64, 0), types.int64)]
        ptr = _element_pointer(context, builder, lanes.array, struct.array, inds)
        vty = context.get_value_type(vector)
        load = builder.load(builder.bitcast(ptr, vty.as_pointer()), align=8)
        return load if lanes.array.mutable else _invariant(builder, load)

    return vector(lanes, index), codegen


def _lane_addresses(context, builder, lanes, struct, index, indexty):
    """The address of each lane's element at ``index`` (numbers, and lane vectors whose lane ``l`` is taken)."""
    parts = _unpack_index(builder, index, indexty)
    out = []
    for lane in range(lanes.count):
        inds = [(builder.extract_element(v, ir.Constant(_I32, lane)), types.int64) if isinstance(t, LaneVector)
                else (v, t) for v, t in parts]
        out.append(_element_pointer(context, builder, lanes.array, struct.array,
                                    inds + [(ir.Constant(_I64, lane), types.int64)]))
    return out


@intrinsic
def _gather(typingctx, lanes, index):
    vector = lanes.vector

    def codegen(context, builder, signature, args):
        struct = cgutils.create_struct_proxy(lanes)(context, builder, value=args[0])
        out = ir.Constant(context.get_value_type(vector), ir.Undefined)
        # one load per lane (faster than a gather instruction where measured)
        for lane, ptr in enumerate(_lane_addresses(context, builder, lanes, struct, args[1], index)):
            load = builder.load(ptr)
            out = builder.insert_element(out, load if lanes.array.mutable else _invariant(builder, load),
                                         ir.Constant(_I32, lane))
        return out

    return vector(lanes, index), codegen


@intrinsic
def _scatter(typingctx, lanes, index, value):
    vector = lanes.vector

    def codegen(context, builder, signature, args):
        struct = cgutils.create_struct_proxy(lanes)(context, builder, value=args[0])
        values = as_vector(context, builder, args[2], value, vector)
        # lanes never share an element (each writes its own column), so the order of the stores is free
        for lane, ptr in enumerate(_lane_addresses(context, builder, lanes, struct, args[1], index)):
            builder.store(builder.extract_element(values, ir.Constant(_I32, lane)), ptr)
        return context.get_dummy_value()

    return types.void(lanes, index, value), codegen


@intrinsic
def _lane_store(typingctx, lanes, index, value):
    vector = lanes.vector

    def codegen(context, builder, signature, args):
        struct = cgutils.create_struct_proxy(lanes)(context, builder, value=args[0])
        inds = _unpack_index(builder, args[1], index) + [(ir.Constant(_I64, 0), types.int64)]
        ptr = _element_pointer(context, builder, lanes.array, struct.array, inds)
        vty = context.get_value_type(vector)
        builder.store(as_vector(context, builder, args[2], value, vector), builder.bitcast(ptr, vty.as_pointer()),
                      align=8)
        return context.get_dummy_value()

    return types.void(lanes, index, value), codegen


@intrinsic
def _wrap(typingctx, array, like):
    result = LaneArrayType(array, like.count)

    def codegen(context, builder, signature, args):
        out = cgutils.create_struct_proxy(result)(context, builder)
        out.array = args[0]
        context.nrt.incref(builder, array, args[0])
        return out._getvalue()

    return result(array, like), codegen


@overload(operator.getitem, jit_options=OVERLOAD_OPTIONS)  # (numba inlines no setitem)
def _lane_getitem(lanes, index):
    if not isinstance(lanes, LaneArrayType):
        return None
    inds = _indices(index)
    if inds is not None and len(inds) == lanes.ndim:
        if _gathers(inds):
            return lambda lanes, index: _gather(lanes, index)
        return lambda lanes, index: _lane_load(lanes, index)
    if inds is not None and len(inds) < lanes.ndim and not _gathers(inds):  # a sub-array, with its lanes
        return lambda lanes, index: _wrap(lanes.array[index], lanes)
    return None


@overload(operator.setitem, jit_options=OVERLOAD_OPTIONS)  # (numba inlines no setitem)
def _lane_setitem(lanes, index, value):
    if not isinstance(lanes, LaneArrayType):
        return None
    inds = _indices(index)
    if inds is not None and len(inds) == lanes.ndim:
        if _gathers(inds):
            return lambda lanes, index, value: _scatter(lanes, index, value)
        return lambda lanes, index, value: _lane_store(lanes, index, value)
    if inds is not None and _gathers(inds):
        return None
    if isinstance(value, LaneArrayType):  # a sub-array copied from another lane array
        def copy(lanes, index, value):
            lanes.array[index] = value.array
        return copy
    if isinstance(value, (types.Number, types.Boolean)):  # every lane of a sub-array or slice
        def fill(lanes, index, value):
            lanes.array[index] = value
        return fill
    return None


@overload_attribute(LaneArrayType, "shape", jit_options=OVERLOAD_OPTIONS, inline="always")
def _lane_shape(lanes):
    return lambda lanes: lanes.array.shape[:-1]


# --- the Python side: arrays for L lanes, and the default width ----------------------


def lane_array(shape, lanes: int, fill=0.0, dtype=np.float64):
    """A kernel's per-replication array of ``shape``: a plain array for one lane, a :class:`LaneArray` for more."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if lanes == 1:
        return np.full(shape, fill, dtype=dtype)
    return LaneArray(np.full(shape + (lanes,), fill, dtype=dtype))


def lane_of(array, index: int) -> np.ndarray:
    """Lane ``index``'s array of what :func:`lane_array` made (a view)."""
    return array.lane(index) if isinstance(array, LaneArray) else array


def per_lane(arrays, readonly: bool = False):
    """Each lane's array (all of one shape) for a kernel: the array itself for one lane, else a :class:`LaneArray`.

    ``readonly``: the kernel only reads them (their loads may be reused).
    """
    arrays = list(arrays)
    out = np.array(arrays[0]) if len(arrays) == 1 else np.ascontiguousarray(np.stack(arrays, axis=-1))
    out.flags.writeable = not readonly
    return out if len(arrays) == 1 else LaneArray(out)


def padded(gens, width: int) -> list:
    """``gens`` and, up to ``width``, generators of lanes that run unrecorded (their results are dropped).

    A kernel compiled for ``width`` lanes serves a group of fewer replications
    (a chunk's remainder) this way: with SIMD the extra lanes cost nothing,
    and no kernel is compiled for every width below it.
    """
    gens = list(gens)
    return gens + [np.random.Generator(np.random.SFC64(k)) for k in range(max(0, width - len(gens)))]


def vector_width() -> int:
    """Doubles in one SIMD register of this machine, as numba compiles for it (8 with AVX-512, 4 with AVX2, else 2)."""
    if DISABLED:
        return 1
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    if features.get("avx512f"):
        return 8
    if features.get("avx2") or features.get("avx"):
        return 4
    return 2


__all__ = ["LaneArray", "LaneArrayType", "LaneVector", "all_lanes", "any_lane", "is_lanes", "lane_array", "lane_of",
           "lane_value", "lnot", "padded", "per_lane", "vector_width", "where"]
