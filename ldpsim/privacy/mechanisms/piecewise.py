"""Wang et al. (2019, ICDE), the Piecewise mechanism (PM), on each coordinate at ``epsilon / d``.

``t`` in ``[-1, 1]`` is released in ``[-C, C]``, ``C = (e^(e/2) + 1) / (e^(e/2) - 1)``:
uniformly on the high-density piece ``[l(t), r(t)]`` (of length ``C - 1``)
with probability ``e^(e/2) / (e^(e/2) + 1)``, else uniformly on the rest.
The Hybrid mechanism (:mod:`.hybrid`) and the sampled form (:mod:`.sampled`) reuse it.
"""

from __future__ import annotations

import math
from typing import ClassVar, NamedTuple

import numpy as np

from ...engine.dialect.jit import dual
from ...engine.dialect.lanes import where
from ...engine.dialect.rng import uniform
from .bounded import Coordinatewise, register_one
from .registry import register


def piecewise_c(epsilon: float) -> float:
    """``C = (e^(eps/2) + 1) / (e^(eps/2) - 1)``, the Piecewise mechanism's output range ``[-C, C]``."""
    return 1.0 + 2.0 / math.expm1(epsilon / 2.0)


def piecewise_variance(epsilon: float, t):
    """``Var = t^2 / (e^(eps/2) - 1) + (e^(eps/2) + 3) / (3 (e^(eps/2) - 1)^2)`` (Wang et al. 2019, Lemma 1)."""
    a = math.expm1(epsilon / 2.0)
    return np.square(t) / a + (a + 4.0) / (3.0 * a * a)


class PiecewiseRelease(NamedTuple):
    """Coordinatewise PM: ``C``, and ``P(inside) = e^(e/2) / (e^(e/2) + 1)``."""

    c: float
    inside: float


@dual(inline=True)
def piecewise_draw(gen, t, c, inside):
    """PM's release of ``t`` (two uniforms)."""
    left = 0.5 * (c + 1.0) * t - 0.5 * (c - 1.0)
    right = left + c - 1.0
    u = uniform(gen)
    v = uniform(gen)
    pos = v * (c + 1.0)  # a point of [-C, l) U (r, C], whose length is C + 1
    outside = where(pos < left + c, pos - c, right + (pos - (left + c)))
    return where(u < inside, left + (c - 1.0) * v, outside)


@register_one(PiecewiseRelease)
def _release_one_piecewise(noise, gen, t):
    return piecewise_draw(gen, t, noise.c, noise.inside)


class Piecewise(Coordinatewise):
    """Wang et al. (2019, ICDE), the Piecewise mechanism (PM)."""

    name: ClassVar[str] = "piecewise"
    label: ClassVar[str] = "Piecewise mechanism"

    def record(self, lanes: int = 1):
        e = self.coordinate_epsilon
        return PiecewiseRelease(piecewise_c(e), 1.0 / (1.0 + math.exp(-e / 2.0)))

    def _variance(self, t):
        return piecewise_variance(self.coordinate_epsilon, t)

    @property
    def output_bound(self) -> np.ndarray:
        return np.full(self.dim, piecewise_c(self.coordinate_epsilon))

    jump_points = (-1.0, 1.0)  # the ends of [l(+-1), r(+-1)], where the density is high


register("piecewise", Piecewise, "the Piecewise mechanism of Wang et al. (2019), each coordinate at epsilon / d",
         "release", one_dimensional=True, audit_dims=(1,))

__all__ = ["Piecewise", "PiecewiseRelease", "piecewise_c", "piecewise_draw", "piecewise_variance"]
