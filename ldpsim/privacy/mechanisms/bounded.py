"""What the releases of a bounded gradient share: their Python base class and the 1-D releases' loop (issue 30).

Unlike the additive mechanisms (Laplace, Gaussian), these release a value
whose law depends on the input: the gradient ``g`` of one observation, in
the box ``|g_j| <= bounds[j]``, is scaled to ``t = g / bounds`` in
``[-1, 1]^d`` and the mechanism releases an unbiased estimate of ``t``
(``E[M(t) | t] = t``); the model adds ``bounds * M(t)``. Each is pure
epsilon-LDP for the whole vector. The 1-D ones (Duchi, PM, HM, NPRR) give
each coordinate ``epsilon / d`` (sequential composition), the others spend
``epsilon`` on the whole vector. Each family module (``duchi``,
``piecewise``, ``hybrid``, ``nprr``, ``harmony``, ``sampled``) declares its
constants, record, release and class; docs/mechanisms.md has the formulas
and their sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ...engine.dialect.dispatch import by_record
from ...engine.dialect.jit import dual
from ...engine.dialect.lanes import lane_array
from .kernel import BoundedNoise, _fmt, register_release


@dual(inline=True)
def clamp(t):
    """``t`` clamped to ``[-1, 1]``: a scaled gradient rounded just past its bound is still a valid input."""
    return min(max(t, -1.0), 1.0)


@by_record
def release_one(noise, gen, t):
    """The 1-D release of the scalar ``t`` in ``[-1, 1]`` (Duchi, PM, HM)."""


def _release_coordinatewise(noise, gen, t):
    for j in range(t.shape[0]):
        t[j] = release_one(noise, gen, clamp(t[j]))


def register_one(record_cls):
    """Register ``func(noise, gen, t)``, the 1-D release of a scalar ``t``, and its release coordinate by coordinate.

    Wang et al.'s sampled mechanisms (:mod:`.sampled`) call the same 1-D release on the coordinates they pick.
    """

    def decorate(func):
        release_one.register(record_cls)(func)
        register_release(record_cls)(_release_coordinatewise)
        return func

    return decorate


@dataclass(frozen=True)
class BoundedMechanism:
    """A mechanism that releases an unbiased estimate of a gradient in the box ``|g_j| <= bounds[j]``.

    Parameters
    ----------
    epsilon : float
        The budget of the whole vector, ``> 0`` and finite.
    bounds : array_like
        ``bounds[j]`` bounds coordinate ``j`` of the gradient, ``> 0``.
    """

    epsilon: float
    bounds: np.ndarray = field(compare=False)

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    #: Whether each coordinate is privatized alone, at epsilon / d.
    per_coordinate: ClassVar[bool] = False

    def __post_init__(self):
        b = np.atleast_1d(np.asarray(self.bounds, dtype=float))
        if b.ndim != 1 or not (np.isfinite(b).all() and (b > 0).all()):
            raise ValueError(f"bounds must be finite and > 0, got {b}")
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon must be finite and > 0, got {self.epsilon}")
        object.__setattr__(self, "bounds", b)

    @property
    def dim(self) -> int:
        """Coordinates of the gradient."""
        return int(self.bounds.shape[0])

    @property
    def coordinate_epsilon(self) -> float:
        """The budget each coordinate's release gets (``epsilon / d`` for the 1-D mechanisms)."""
        return self.epsilon / self.dim if self.per_coordinate else self.epsilon

    @property
    def guarantee(self) -> str:
        """The guarantee in one line."""
        text = f"epsilon = {_fmt(self.epsilon)} LDP ({self.label}"
        if self.per_coordinate and self.dim > 1:
            text += f", each of {self.dim} coordinates at epsilon = {_fmt(self.coordinate_epsilon)}"
        return text + ")"

    @property
    def sensitivity(self):
        """Not an additive mechanism: no sensitivity."""
        return None

    @classmethod
    def from_bounds(cls, epsilon: float, bounds, delta: float | None = None) -> "BoundedMechanism":
        """The release of a gradient in the box ``|g_j| <= bounds[j]`` (pure epsilon-LDP: ``delta`` is not read)."""
        return cls(float(epsilon), bounds)

    def record(self, lanes: int = 1):
        """The kernel record of the release (:func:`~.kernel.release`)."""
        raise NotImplementedError

    def noise_record(self, lanes: int = 1) -> BoundedNoise:
        """The record the models hold: the release's, with the bounds and a scratch vector per lane."""
        return BoundedNoise(self.record(lanes), self.bounds.copy(), lane_array(self.dim, lanes))

    @property
    def output_bound(self) -> np.ndarray:
        """``sup |M(t)_j|``, per coordinate: the release is bounded (the audit's grid spans it)."""
        raise NotImplementedError

    #: Outputs of one coordinate where the density ratio between the inputs -1 and 1 jumps (the audit's grid).
    jump_points: ClassVar[tuple] = ()

    def conditional_covariance(self, t) -> np.ndarray:
        """``Cov(M(t) | t)`` of the release of the scaled gradient ``t`` (``(d, d)``), exact."""
        raise NotImplementedError

    def expected_covariance(self, second) -> np.ndarray | None:
        """``E[Cov(M(t) | t)]`` over the data, from ``second = E[t t']``; ``None`` where it needs more than that."""
        raise NotImplementedError

    @property
    def variance(self) -> float:
        """The worst-case variance of one coordinate's release of ``t`` (over ``t`` in the box)."""
        worst = 0.0
        for corner in (np.zeros(self.dim), np.ones(self.dim)):
            worst = max(worst, float(np.max(np.diag(self.conditional_covariance(corner)))))
        return worst


class Coordinatewise(BoundedMechanism):
    """A 1-D release applied to each coordinate alone, at ``epsilon / d``; its variance is ``a + b t^2``."""

    per_coordinate: ClassVar[bool] = True

    def _variance(self, t):
        raise NotImplementedError

    def conditional_covariance(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=float).reshape(self.dim)
        return np.diag(self._variance(t))

    def expected_covariance(self, second) -> np.ndarray | None:
        # the 1-D variances are a + b t^2, and coordinates are released independently
        second = np.asarray(second, dtype=float)
        a = self._variance(np.zeros(self.dim))
        b = self._variance(np.ones(self.dim)) - a
        return np.diag(a + b * np.diag(second))


__all__ = ["BoundedMechanism", "Coordinatewise", "clamp", "register_one", "release_one"]
