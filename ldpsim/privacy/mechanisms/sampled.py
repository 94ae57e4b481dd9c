"""Wang et al. (2019, ICDE), Algorithm 4: PM or HM on ``k`` sampled coordinates, the vector at ``epsilon``.

``k = max(1, min(d, floor(eps / 2.5)))`` coordinates are picked without
replacement; each is released by the 1-D mechanism (:mod:`.piecewise` or
:mod:`.hybrid`) at ``eps / k`` and scaled by ``d / k``, the others are 0.
"""

from __future__ import annotations

import math
from typing import ClassVar, NamedTuple

import numpy as np

from ...engine.dialect.jit import dual
from ...engine.dialect.lanes import where
from ...engine.dialect.rng import uniform
from .bounded import BoundedMechanism, clamp, release_one
from .hybrid import Hybrid
from .kernel import register_release
from .piecewise import Piecewise
from .registry import register


def piecewise_d_k(epsilon: float, d: int) -> int:
    """Coordinates Wang et al.'s Algorithm 4 perturbs: ``k = max(1, min(d, floor(eps / 2.5)))``."""
    return max(1, min(d, int(math.floor(epsilon / 2.5))))


class SampledRelease(NamedTuple):
    """Wang et al.'s Algorithm 4: ``k`` coordinates at ``eps / k`` by the 1-D release ``one``, scaled by ``d / k``."""

    k: float
    scale: float
    one: tuple  # DuchiRelease, PiecewiseRelease or HybridRelease


@dual(inline=True)
def _sampled(gen, chosen, j, d, k):
    # selection sampling (Knuth's Algorithm S): coordinate j is taken with probability (k - chosen) / (d - j)
    return uniform(gen) * (d - j) < k - chosen


@register_release(SampledRelease)
def _release_sampled(noise, gen, t):
    d = t.shape[0]
    chosen = 0.0 * t[0]
    for j in range(d):
        take = _sampled(gen, chosen, j, d, noise.k)
        chosen += where(take, 1.0, 0.0)
        value = release_one(noise.one, gen, clamp(t[j]))  # drawn for every j: a fixed count of draws per call
        t[j] = where(take, noise.scale * value, 0.0)


class Sampled(BoundedMechanism):
    """Wang et al.'s Algorithm 4: ``k`` coordinates without replacement, each at ``eps / k``, scaled by ``d / k``."""

    base: ClassVar[type] = None

    @property
    def k(self) -> int:
        return piecewise_d_k(self.epsilon, self.dim)

    def _one(self):
        return self.base(self.epsilon / self.k, [1.0])

    @property
    def output_bound(self) -> np.ndarray:
        return np.full(self.dim, self.dim / self.k * float(self._one().output_bound[0]))

    @property
    def jump_points(self) -> tuple:
        return tuple(self.dim / self.k * y for y in self._one().jump_points)

    def conditional_covariance(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=float).reshape(self.dim)
        return self.expected_covariance(np.outer(t, t))

    def expected_covariance(self, second) -> np.ndarray:
        # E[Z_j Z_l] = k(k-1)/(d(d-1)) (d/k)^2 t_j t_l (j != l); E[Z_j^2] = (d/k) (Var_1(t_j) + t_j^2)
        second = np.asarray(second, dtype=float)
        d, k = self.dim, self.k
        one = self._one()
        a = one._variance(np.zeros(1))[0]
        b = one._variance(np.ones(1))[0] - a
        diag = (d / k) * (a + (b + 1.0) * np.diag(second))
        both = (k * (k - 1.0)) / (d * (d - 1.0)) * (d / k) ** 2 if d > 1 else 0.0
        out = both * second
        np.fill_diagonal(out, diag)
        return out - second

    def record(self, lanes: int = 1):
        return SampledRelease(float(self.k), self.dim / self.k, self._one().record())


class PiecewiseD(Sampled):
    name: ClassVar[str] = "piecewise_d"
    label: ClassVar[str] = "Piecewise mechanism, k of d coordinates"
    base: ClassVar[type] = Piecewise


class HybridD(Sampled):
    name: ClassVar[str] = "hybrid_d"
    label: ClassVar[str] = "Hybrid mechanism, k of d coordinates"
    base: ClassVar[type] = Hybrid


register("piecewise_d", PiecewiseD, "Piecewise on k sampled coordinates (Wang et al. 2019), the vector at epsilon",
         "release", audit_dims=(5,))
register("hybrid_d", HybridD, "Hybrid on k sampled coordinates (Wang et al. 2019), the vector at epsilon", "release",
         audit_dims=(5,))

__all__ = ["HybridD", "PiecewiseD", "Sampled", "SampledRelease", "piecewise_d_k"]
