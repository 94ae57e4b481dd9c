"""Wang et al. (2019, ICDE), the Hybrid mechanism (HM), on each coordinate at ``epsilon / d``.

PM (:mod:`.piecewise`) with probability ``alpha = 1 - e^(-e/2)``, Duchi's
mechanism (:mod:`.duchi`) otherwise, above the threshold ``eps*`` (about
0.61) where PM's variance at ``t = 0`` equals Duchi's; below it, Duchi's alone.
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar, NamedTuple

import numpy as np

from ...engine.dialect.jit import dual
from ...engine.dialect.lanes import where
from ...engine.dialect.rng import uniform
from .bounded import Coordinatewise, register_one
from .duchi import Duchi, duchi_bound, duchi_draw, duchi_variance
from .piecewise import Piecewise, piecewise_c, piecewise_draw, piecewise_variance
from .registry import register


def _hybrid_gap(epsilon: float) -> float:
    # the Piecewise mechanism's variance at t = 0 minus Duchi's: HM mixes in PM where this is negative
    a = math.expm1(epsilon / 2.0)
    return (a + 4.0) / (3.0 * a * a) - duchi_bound(epsilon) ** 2


@functools.cache
def hybrid_threshold() -> float:
    """``eps*`` of the Hybrid mechanism (about 0.61), solved on first use (scipy.optimize is not loaded at import)."""
    from scipy import optimize  # lazy: import ldpsim <= 1 s (issue 41)

    return float(optimize.brentq(_hybrid_gap, 0.1, 2.0, xtol=1e-15))


def hybrid_alpha(epsilon: float) -> float:
    """The Hybrid mechanism's probability of using PM: ``1 - e^(-eps/2)`` above ``eps*``, else 0."""
    return -math.expm1(-epsilon / 2.0) if epsilon > hybrid_threshold() else 0.0


def hybrid_variance(epsilon: float, t):
    """HM's variance: ``alpha Var_PM(0) + (1 - alpha) D^2`` above eps* (the same at every ``t``), Duchi's below."""
    alpha = hybrid_alpha(epsilon)
    if alpha == 0.0:
        return duchi_variance(epsilon, t)
    value = alpha * piecewise_variance(epsilon, 0.0) + (1.0 - alpha) * duchi_bound(epsilon) ** 2
    return np.full(np.shape(t), value) if np.ndim(t) else value


class HybridRelease(NamedTuple):
    """Coordinatewise HM: PM with probability ``alpha``, Duchi otherwise."""

    alpha: float
    c: float
    inside: float
    bound: float
    tilt: float


@dual(inline=True)
def _hybrid(gen, t, alpha, c, inside, bound, tilt):
    u = uniform(gen)
    pm = piecewise_draw(gen, t, c, inside)
    duchi = duchi_draw(gen, t, bound, tilt)
    return where(u < alpha, pm, duchi)


@register_one(HybridRelease)
def _release_one_hybrid(noise, gen, t):
    return _hybrid(gen, t, noise.alpha, noise.c, noise.inside, noise.bound, noise.tilt)


class Hybrid(Coordinatewise):
    """Wang et al. (2019, ICDE), the Hybrid mechanism (HM): PM with probability ``1 - e^(-e/2)`` above eps*."""

    name: ClassVar[str] = "hybrid"
    label: ClassVar[str] = "Hybrid mechanism"

    def record(self, lanes: int = 1):
        e = self.coordinate_epsilon
        return HybridRelease(hybrid_alpha(e), *Piecewise(e, [1.0]).record(), *Duchi(e, [1.0]).record())

    def _variance(self, t):
        return hybrid_variance(self.coordinate_epsilon, t)

    @property
    def output_bound(self) -> np.ndarray:
        e = self.coordinate_epsilon
        return np.full(self.dim, max(piecewise_c(e), duchi_bound(e)))

    jump_points = (-1.0, 1.0)


register("hybrid", Hybrid, "the Hybrid mechanism of Wang et al. (2019), each coordinate at epsilon / d", "release",
         one_dimensional=True, audit_dims=(1,))

__all__ = ["Hybrid", "HybridRelease", "hybrid_alpha", "hybrid_threshold", "hybrid_variance"]
