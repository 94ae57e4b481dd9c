"""The tables of numpy's 256-layer ziggurats, computed here as numpy's were made.

numpy draws standard normals and standard exponentials by the ziggurat method
of Marsaglia & Tsang (2000, "The ziggurat method for generating random
variables", J. Stat. Softw. 5(8)), with tables in
``numpy/random/src/distributions/ziggurat_constants.h``. The kernels
(:mod:`ldpsim.engine.rng`) must use exactly those numbers to draw numpy's
streams bit for bit, so this module recomputes them from their definition
rather than reading them from another package's private module. Layer ``i``
(1 <= i <= 255) of a ziggurat for the unnormalised density ``f`` on
``[0, inf)`` is the rectangle ``[0, x_i] x [f(x_i), f(x_{i-1})]``, with
``x_255 = r``, ``x_0 = 0``, and every layer and the base (the rectangle under
``f(r)`` plus the tail beyond ``r``) of the same area ``v``:
``x_i = f^-1(f(x_{i+1}) + v / x_{i+1})``. For each layer the tables hold

* ``w[i] = x_i / 2^b``, which turns a ``b``-bit integer into a point of the layer,
* ``k[i]``, about ``2^b x_{i-1} / x_i``: an integer below it gives a point
  inside the density without a test, and
* ``f[i] = f(x_i)``, for the test of the points in a layer's wedge;

layer 0 stands for the base (``w[0] = v / f(r) / 2^b``, ``k[0]`` about
``2^b r f(r) / v``, ``f[0] = 1``) and ``k[1] = 0`` sends every draw of the top
layer to the wedge test.

numpy's two tables were made in two ways, and each is reproduced as it was
made (``tests/test_rng.py`` checks all 1536 entries, bit for bit, against the
tables numba copies from numpy's header, and our draws against numpy's):

* **normal** (``f(x) = exp(-x^2/2)``, ``b = 52``): by numpy's generating script
  in float64, with ``r = 3.6541528853610088``, ``v = 0.0049286732339746519``,
  ``k[i] = round(2^52 x_{i-1} / x_i)`` and ``k[0] = round(2^52 r f(r) / v)``. Each
  ``exp`` and ``log`` is taken correctly rounded here (:func:`_exp`,
  :func:`_log`), so the result does not depend on the platform's libm. At one
  point the libm that made numpy's table rounded the other way: ``f[38] =
  exp(-x_38^2 / 2)`` lies 0.0017 units in the last place below a midpoint
  (0.49826 ulp above the lower double), and numpy's table holds the upper
  double. We take it too (:data:`_NORMAL_F38_ROUNDED_UP`); every entry above
  layer 38 depends on it.
* **exponential** (``f(x) = exp(-x)``, ``b = 53``): in high precision, from
  ``r = 7.6971174701310497140446280481`` and ``v = (r + 1) exp(-r)`` (the base's
  area), each entry rounded to the nearest double once; ``k[i] = 2 floor(2^52
  x_{i-1} / x_i)`` and ``k[0] = 2 floor(2^52 r f(r) / v)`` (even numbers: numpy's
  53-bit tables are twice 52-bit ones).

The computation takes a few milliseconds, once per process.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from typing import NamedTuple

import numpy as np

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
#: The layer whose exp numpy's table holds rounded up (see the module docstring).
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


__all__ = ["EXPONENTIAL_R", "NORMAL_INV_R", "NORMAL_R", "Ziggurat", "exponential_tables", "normal_tables"]
