"""Pieces shared by the zoo's methods: running sums of iterates, their closing, a Wald interval.

HulC's segments and HiGrad's tree nodes both keep the sum of the iterates of
an open stretch of the path and turn it into that stretch's average when it
ends; the two helpers below are that arithmetic, once. They work on one
replication's ``(d,)`` rows, allocate nothing and are inlined into the
kernels that call them.
"""

from __future__ import annotations

import numpy as np

from ...engine.dialect.jit import jit
from ..critical_values import normal_quantile


@jit(inline=True)
def accumulate(acc, theta):
    """``acc += theta`` coordinate by coordinate (both ``(d,)``), in place."""
    for q in range(acc.shape[0]):
        acc[q] += theta[q]


@jit(inline=True)
def close_stretch(acc, out, count):
    """``out = acc / count`` (the stretch's average) and ``acc = 0``, in place; ``count`` is its length."""
    for q in range(acc.shape[0]):
        out[q] = acc[q] / count
        acc[q] = 0.0


def symmetric_from_upper(upper: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose upper triangle (diagonal included) is that of ``upper``."""
    upper = np.triu(upper)
    return upper + np.triu(upper, 1).T


def wald_interval(theta_bar: np.ndarray, sigma: np.ndarray, n: int, *, level: float):
    """``theta_bar +- z sqrt(Sigma_jj / n)``, ``z`` the normal quantile of two-sided ``level``."""
    half = normal_quantile(level) * np.sqrt(np.diag(sigma) / n)
    return theta_bar - half, theta_bar + half
