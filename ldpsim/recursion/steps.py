"""The step sizes of the LDP-SGD paths, ``eta_i = c i^-gamma``, as every kernel computes them.

A ``pow`` a step costs more than the random numbers of a step, so the
kernels take ``eta_i`` from ``eta_{i-1}`` by the ratio series of
:func:`step_ratio` and recompute it exactly below :data:`EXACT_STEPS_BELOW`
and at powers of two; the path kernels take the ratios
:data:`RATIO_CHUNK` at a time from a buffer (:func:`fill_step_ratios`,
:func:`buffered_step_size`). The same numbers serve every path that counts
its own steps (the zoo's HulC segments and HiGrad threads,
:mod:`ldpsim.recursion.zoo`).
"""

from __future__ import annotations

from ..engine.dialect.jit import jit

#: Below this step the step size is ``c * i**-gamma`` exactly; above it, it is
#: updated by the ratio series of :func:`step_ratio` (a ``pow`` costs more
#: than the random numbers of a step) and recomputed exactly at powers of two,
#: so rounding cannot drift: the relative error stays below 1e-12.
EXACT_STEPS_BELOW = 4096


@jit
def step_ratio_coefficients(gamma):
    """Coefficients ``b_1..b_4`` of ``(1 - x)^gamma = 1 + b_1 x + ... + b_4 x^4 + O(x^5)``."""
    b1 = -gamma
    b2 = b1 * (1.0 - gamma) / 2.0
    b3 = b2 * (2.0 - gamma) / 3.0
    b4 = b3 * (3.0 - gamma) / 4.0
    return b1, b2, b3, b4


@jit(inline=True)
def step_ratio(i, b):
    """``eta_i / eta_{i-1} = (1 - 1/i)^gamma`` for ``i >= 4096``, ``b`` from :func:`step_ratio_coefficients`.

    The binomial series to ``x^4``, ``x = 1/i <= 2^-12``: the omitted terms
    are below 3e-20, far under the rounding of a double.
    """
    x = 1.0 / i
    return 1.0 + x * (b[0] + x * (b[1] + x * (b[2] + x * b[3])))


@jit(inline=True)
def step_size(i, pow2, eta, c, gamma, ratio):
    """``eta_i`` from ``eta_{i-1}``: exact for small ``i`` and at ``i == pow2``, else by ratio."""
    if i < EXACT_STEPS_BELOW or i == pow2:
        return c * float(i) ** -gamma
    return eta * step_ratio(float(i), ratio)


# The path kernels take the ratios RATIO_CHUNK steps at a time from a buffer
# that a SIMD loop fills (the division and the series cost more one by one):
# the same numbers as step_size, which the trace and the twins use.

#: Step ratios are computed this many at a time; a power of two (steps index the buffer by ``i & (RATIO_CHUNK - 1)``).
RATIO_CHUNK = 256
#: The step at whose end the first buffer is filled (it serves steps ``EXACT_STEPS_BELOW`` on).
FIRST_FILL = EXACT_STEPS_BELOW - 1


@jit(inline=True)
def fill_step_ratios(last, ratio, out):
    """After step ``last``: ``out[q] = step_ratio(last + 1 + q)``, the ratios of the next ``RATIO_CHUNK`` steps."""
    f0 = float(last + 1)
    for q in range(out.shape[0]):
        out[q] = step_ratio(f0 + float(q), ratio)  # f0 + q is float(last + 1 + q) exactly below 2^53
    return last + RATIO_CHUNK


@jit(inline=True)
def buffered_step_size(i, pow2, eta, c, gamma, ratios):
    """:func:`step_size` with the ratio from the buffer of :func:`fill_step_ratios`."""
    if i < EXACT_STEPS_BELOW or i == pow2:
        return c * float(i) ** -gamma
    return eta * ratios[i & (RATIO_CHUNK - 1)]


__all__ = ["EXACT_STEPS_BELOW", "FIRST_FILL", "RATIO_CHUNK", "buffered_step_size", "fill_step_ratios", "step_ratio",
           "step_ratio_coefficients", "step_size"]
