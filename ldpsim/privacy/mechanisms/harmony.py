"""Nguyen et al. (2016), Harmony: one coordinate ``j`` drawn uniformly, released as ``+-d D e_j``, the vector at ``epsilon``.

``D`` is Duchi's 1-D bound (:func:`.duchi.duchi_bound`) at ``epsilon``: the
picked coordinate gets Duchi's release scaled by ``d``, the others 0.
"""

from __future__ import annotations

import math
from typing import ClassVar, NamedTuple

import numpy as np

from ...engine.dialect.lanes import where
from ...engine.dialect.rng import uniform
from .bounded import BoundedMechanism, clamp
from .duchi import duchi_bound
from .kernel import register_release
from .registry import register


class HarmonyRelease(NamedTuple):
    """Harmony: one coordinate, ``+-d D``."""

    dim: float
    value: float  # d D
    tilt: float


@register_release(HarmonyRelease)
def _release_harmony(noise, gen, t):
    d = t.shape[0]
    pick = min(float(int(uniform(gen) * noise.dim)), noise.dim - 1.0)
    tj = 0.0 * t[0]
    for j in range(d):
        tj = where(pick == j, clamp(t[j]), tj)
    value = where(uniform(gen) < 0.5 + tj * noise.tilt, noise.value, -noise.value)
    for j in range(d):
        t[j] = where(pick == j, value, 0.0)


class Harmony(BoundedMechanism):
    """Nguyen et al. (2016): one coordinate ``j`` uniformly, ``+-d D e_j``."""

    name: ClassVar[str] = "harmony"
    label: ClassVar[str] = "Harmony"

    def record(self, lanes: int = 1):
        d = self.dim
        return HarmonyRelease(float(d), d * duchi_bound(self.epsilon), 0.5 * math.tanh(self.epsilon / 2.0))

    @property
    def output_bound(self) -> np.ndarray:
        return np.full(self.dim, self.dim * duchi_bound(self.epsilon))

    def conditional_covariance(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=float).reshape(self.dim)
        return self.dim * duchi_bound(self.epsilon) ** 2 * np.eye(self.dim) - np.outer(t, t)

    def expected_covariance(self, second) -> np.ndarray:
        return self.dim * duchi_bound(self.epsilon) ** 2 * np.eye(self.dim) - np.asarray(second, dtype=float)


register("harmony", Harmony, "Harmony (Nguyen et al. 2016): one random coordinate, the vector at epsilon", "release",
         audit_dims=(5,))

__all__ = ["Harmony", "HarmonyRelease"]
