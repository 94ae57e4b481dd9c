"""Random number generators: one bit generator, seeds derived from identities, and the kernels' draws.

Every replication draws from its own ``numpy.random.Generator`` built on
``SeedSequence(root, spawn_key=(setting_key, rep))``: its numbers depend on
what it is, never on which worker runs it or when. The bit generator is
numpy's SFC64 (Chris Doty-Humphrey's Small Fast Chaotic generator, 256-bit
state with a counter, so every stream has period at least 2^64; it passes
BigCrush and PractRand).

Inside the kernels the SFC64 recurrence is inlined: a kernel is handed
:func:`kernel_rng` ``(gen)``, a record holding the address of ``gen``'s C state,
and :func:`uniform`, :func:`normal` and :func:`exponential` step that state in
place with the published SFC64 recurrence and turn the 64-bit words into
numbers exactly as numpy does (``next_double``; the 256-layer ziggurats of
``random_standard_normal`` and ``random_standard_exponential``, with numpy's
tables, computed here as numpy's were made: :func:`normal_tables`, :func:`exponential_tables`). The numbers are numpy's, bit for bit and in the same order, and
``gen`` is left where numpy's own methods would have left it; a call through
numba's ``Generator`` instead goes through a function pointer per draw,
which costs more than the draw itself (``scripts/bench.py``). Generators on
other bit generators are handed over as they are and draw through numba's
``Generator``.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from ..jit import DISABLED, OVERLOAD_OPTIONS, jit
from ..lanes import LaneVector, as_vector

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


# --- numpy's ziggurat tables, computed -------------------------------------------
# numpy draws standard normals and exponentials by the ziggurat method of Marsaglia & Tsang (2000, "The
# ziggurat method for generating random variables", J. Stat. Softw. 5(8)) with the 256-layer tables of
# numpy/random/src/distributions/ziggurat_constants.h. The kernels need exactly those numbers to draw
# numpy's streams bit for bit, so they are recomputed here from their definition (they used to be read from
# numba's private copy, numba.np.random._constants). Layer i (1 <= i <= 255) of the ziggurat of a decreasing
# density f on [0, inf) is the rectangle [0, x_i] x [f(x_i), f(x_{i-1})]; x_255 = r, x_0 = 0, and every
# layer and the base (the rectangle under f(r) plus the tail beyond r) have the same area v:
# x_i = f^-1(f(x_{i+1}) + v / x_{i+1}). The tables hold w[i] = x_i / 2^b (a b-bit integer times w[i] is a
# point of the layer), k[i] ~ 2^b x_{i-1} / x_i (an integer below it is a point under f, no test needed) and
# f[i] = f(x_i) (the wedge test); entry 0 stands for the base (w[0] = v / f(r) / 2^b, k[0] ~ 2^b r f(r) / v,
# f[0] = 1), and k[1] = 0 sends every draw of the top layer to the wedge test.
#
# numpy's two tables were made in two ways, and each is made here as it was (tests/test_rng.py compares all
# 1536 entries with numba's copy while it ships one, and draws from every layer with numpy's):
# - normal (f(x) = exp(-x^2/2), b = 52): numpy's generating script, in float64, from r = 3.6541528853610088
#   and v = 0.0049286732339746519, with k[i] = round(2^52 x_{i-1} / x_i) and k[0] = round(2^52 r f(r) / v).
#   Each exp and log is correctly rounded here (_exp, _log), so no platform's libm decides a bit. At one
#   point the libm that made numpy's table rounded the other way: exp(-x_38^2 / 2) lies 0.0017 ulp below a
#   midpoint, and numpy's f[38] is the upper double; we take it too, and the layers above 38 follow from it.
# - exponential (f(x) = exp(-x), b = 53): in high precision from r = 7.6971174701310497140446280481 and
#   v = (r + 1) exp(-r), each entry rounded to a double once; k[i] = 2 floor(2^52 x_{i-1} / x_i) and
#   k[0] = 2 floor(2^52 r f(r) / v) (even: numpy's 53-bit k are twice 52-bit ones).
# It takes about 50 ms, once per process.

#: Digits of the decimal arithmetic: far more than the 17 a double needs, so each rounding to a double
#: is that of the exact value (a value within 1e-40 of a midpoint would need more; the tests would show it).
_DIGITS = 40

#: The normal ziggurat's right end r and layer area v, as numpy's generating script gives them.
NORMAL_R = 3.6541528853610087963519472518
_NORMAL_V = 0.0049286732339746519
#: 1 / r, which numpy's tail draw multiplies by.
NORMAL_INV_R = 0.27366123732975827203338247596
#: The exponential ziggurat's right end r (the layer area follows from it).
_EXPONENTIAL_R = "7.6971174701310497140446280481"
EXPONENTIAL_R = float(_EXPONENTIAL_R)
#: The layer whose exp numpy's table holds rounded up (above).
_NORMAL_F38_ROUNDED_UP = 38
_LAYERS = 256


class Ziggurat(NamedTuple):
    """The three tables of one ziggurat: ``k`` (uint64), ``w`` and ``f`` (float64), 256 entries each."""

    k: np.ndarray
    w: np.ndarray
    f: np.ndarray


def _exp(y: float) -> float:
    """``exp(y)`` of a double, correctly rounded to a double."""
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        return float(Decimal(y).exp())


def _log(y: float) -> float:
    """``log(y)`` of a double, correctly rounded to a double."""
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        return float(Decimal(y).ln())


def normal_tables() -> Ziggurat:
    """numpy's ``ki_double``, ``wi_double``, ``fi_double`` (the standard normal's ziggurat, 52-bit)."""
    r, v, scale = NORMAL_R, _NORMAL_V, 2.0**52

    def pdf(x):
        return _exp(-0.5 * x * x)  # float64 products, as numpy's script computes them

    x = [0.0] * _LAYERS  # x[i] = x_i, from x[255] = r down; x[0] = 0
    f = [1.0] * _LAYERS
    x[255], f[255] = r, pdf(r)
    for i in range(254, 0, -1):
        x[i] = math.sqrt(-2.0 * _log(f[i + 1] + v / x[i + 1]))  # IEEE 754 rounds sqrt correctly
        f[i] = pdf(x[i])
        if i == _NORMAL_F38_ROUNDED_UP:
            f[i] = float(np.nextafter(f[i], 1.0))  # as numpy's table (and so every layer above)
    w = [v / pdf(r) / scale] + [xi / scale for xi in x[1:]]
    k = [round(r * pdf(r) / v * scale), 0] + [round(x[i - 1] / x[i] * scale) for i in range(2, _LAYERS)]
    return Ziggurat(np.array(k, dtype=np.uint64), np.array(w), np.array(f))


def exponential_tables() -> Ziggurat:
    """numpy's ``ke_double``, ``we_double``, ``fe_double`` (the standard exponential's ziggurat, 53-bit)."""
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        r = Decimal(_EXPONENTIAL_R)
        fr = (-r).exp()
        v = (r + 1) * fr  # r f(r) + the tail's integral exp(-r)
        x = [Decimal(0)] * _LAYERS
        fx = [Decimal(1)] * _LAYERS
        x[255], fx[255] = r, fr
        for i in range(254, 0, -1):
            x[i] = -(fx[i + 1] + v / x[i + 1]).ln()
            fx[i] = (-x[i]).exp()
        half = Decimal(2) ** 52
        k = [2 * int(r * fr / v * half), 0] + [2 * int(x[i - 1] / x[i] * half) for i in range(2, _LAYERS)]
        scale = 2 * half
        w = [float(v / fr / scale)] + [float(xi / scale) for xi in x[1:]]
        f = [float(fi) for fi in fx]
    return Ziggurat(np.array(k, dtype=np.uint64), np.array(w), np.array(f))

# the tables the kernels compile in (numba's Generator has its own copy)
ki_double, wi_double, fi_double = normal_tables()
ke_double, we_double, fe_double = exponential_tables()
ziggurat_nor_r, ziggurat_nor_inv_r, ziggurat_exp_r = NORMAL_R, NORMAL_INV_R, EXPONENTIAL_R


# --- draws inside kernels -----------------------------------------------------
# Models, mechanisms and kernels draw through uniform / normal / exponential,
# never by calling the generator's methods: the plain-Python bodies serve the
# twins (a numpy ``Generator``), and the overloads below are what jitted code
# inlines, so the source of a kernel's random numbers is decided here, once.
# A kernel's Python wrapper hands it ``kernel_rng(gen)``, not ``gen``.


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


def uniform(gen):
    """One ``U[0, 1)`` draw, as numpy's ``Generator.random()``."""
    return gen.random()


def normal(gen):
    """One standard normal draw, as numpy's ``Generator.standard_normal()`` (ziggurat)."""
    return gen.standard_normal()


def exponential(gen):
    """One standard exponential draw, as numpy's ``Generator.standard_exponential()`` (ziggurat)."""
    return gen.standard_exponential()


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


def _draws(func, method, intrinsic_draw):
    """Overload ``func`` for numba's ``Generator`` (its ``method``), :class:`Sfc64Stream` and :class:`Sfc64Local`."""
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


#: The lanes' draw of each function (filled below, where the lanes' intrinsics are made).
_LANES_DRAW: dict = {}

# on a numba Generator the Python bodies themselves compile: they call its methods
_draws(uniform, uniform, _uniform_intrinsic)
_draws(normal, normal, _normal_intrinsic)
_draws(exponential, exponential, _exponential_intrinsic)


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

_LANES_DRAW.update({uniform: _vuniform, normal: _vnormal, exponential: _vexponential})
