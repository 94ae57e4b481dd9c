"""numpy's ziggurat tables, computed: the numbers the kernels' normal and exponential draws compile in.

The method and how each table is made are told below, where they are made;
:func:`normal_tables` and :func:`exponential_tables` compute them (about
50 ms, once per process), and the module's tables are what
:mod:`.sfc64` and :mod:`.lane_draws` read.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from typing import NamedTuple

import numpy as np

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


__all__ = ["EXPONENTIAL_R", "NORMAL_INV_R", "NORMAL_R", "Ziggurat", "exponential_tables", "fe_double", "fi_double",
           "ke_double", "ki_double", "normal_tables", "we_double", "wi_double", "ziggurat_exp_r", "ziggurat_nor_inv_r",
           "ziggurat_nor_r"]
