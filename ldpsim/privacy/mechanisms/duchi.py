"""Duchi, Jordan & Wainwright (2018, JASA): the 1-D mechanism and the l-infinity and l2 mechanisms.

* ``duchi``: each coordinate released as ``+-D``, ``D = (e^e + 1) / (e^e - 1)``,
  at ``e = epsilon / d`` (sequential composition);
* ``duchi_linf``: the vector rounded to a vertex of the cube, answered by a
  vertex ``B = C_d D`` on its side with probability ``e^eps / (e^eps + 1)``;
* ``duchi_l2``: the vector (in the unit ball) rounded to the sphere, answered
  by a point of the hemisphere on its side, scaled by ``B = D / E|U_1|``.

The two vector mechanisms spend ``epsilon`` on the whole vector. Harmony
(:mod:`.harmony`) and the Hybrid mechanism (:mod:`.hybrid`) reuse ``D``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from ...engine.dialect.jit import dual
from ...engine.dialect.lanes import lane_array, where
from ...engine.dialect.rng import normal, uniform
from .bounded import BoundedMechanism, Coordinatewise, clamp, register_one
from .kernel import _fmt, register_release
from .registry import register

# --- the constants ----------------------------------------------------------------


def duchi_bound(epsilon: float) -> float:
    """``D = (e^eps + 1) / (e^eps - 1)``, the 1-D Duchi mechanism's output magnitude."""
    return 1.0 + 2.0 / math.expm1(epsilon)


def duchi_variance(epsilon: float, t):
    """``Var = D^2 - t^2`` of the 1-D Duchi mechanism at ``t``."""
    return duchi_bound(epsilon) ** 2 - np.square(t)


def linf_constant(d: int) -> float:
    """``C_d = 2^(d-1) / binom(d-1, floor((d-1)/2))`` of Duchi et al.'s l-infinity mechanism: ``B = C_d D``.

    It is ``1 / E[v_1]`` for ``v`` the fold of ``w`` uniform on ``{-1, 1}^d``
    onto the half-cube ``sum v >= 0`` (``v = -w`` when ``sum w < 0``): Duchi
    et al.'s constant for odd ``d``; for even ``d`` the ties ``sum w = 0``
    keep probability ``1 / 2^d`` whatever ``T``, and ``C_d = C_(d+1)`` (tested by enumeration).
    """
    return 2.0 ** (d - 1) / math.comb(d - 1, (d - 1) // 2)


def linf_correlation(d: int) -> float:
    """``E[v_1 v_2]`` for ``v`` the folded ``w``: ``E[w_1 w_2] = 0`` (the fold flips both signs together)."""
    return 0.0


def l2_constant(d: int) -> float:
    """``1 / E|U_1|`` for ``U`` uniform on the unit sphere of R^d: ``sqrt(pi) Gamma((d + 1)/2) / Gamma(d/2)``.

    Duchi et al.'s l2 mechanism outputs ``B = D / E|U_1|`` times a point of a
    hemisphere, which makes ``E[Z | v] = v`` (derived in docs/mechanisms.md).
    """
    from scipy import special

    return math.sqrt(math.pi) * math.exp(special.gammaln((d + 1) / 2.0) - special.gammaln(d / 2.0))


# --- kernel records and releases --------------------------------------------------


class DuchiRelease(NamedTuple):
    """Coordinatewise 1-D Duchi: ``+-D`` with ``P(+D) = 1/2 + t tilt``, ``tilt = (e^e - 1) / (2 (e^e + 1))``."""

    bound: float
    tilt: float


class DuchiLinfRelease(NamedTuple):
    """Duchi's l-infinity mechanism: ``B = C_d D``, ``p = e^e / (e^e + 1)``; ``w`` is scratch (per lane)."""

    bound: float
    keep: float
    w: np.ndarray


class DuchiL2Release(NamedTuple):
    """Duchi's l2 mechanism on ``v = t * weights`` (``weights = bounds / ||bounds||_2``); ``u`` is scratch."""

    bound: float
    keep: float
    weights: np.ndarray
    u: np.ndarray


@dual(inline=True)
def duchi_draw(gen, t, bound, tilt):
    """The 1-D release of ``t``: ``bound`` with probability ``1/2 + t tilt``, else ``-bound`` (one uniform)."""
    return where(uniform(gen) < 0.5 + t * tilt, bound, -bound)


@register_one(DuchiRelease)
def _release_one_duchi(noise, gen, t):
    return duchi_draw(gen, t, noise.bound, noise.tilt)


@register_release(DuchiLinfRelease)
def _release_duchi_linf(noise, gen, t):
    d = t.shape[0]
    w = noise.w
    total = 0.0
    for j in range(d):  # the randomized rounding of t to a vertex, into t
        t[j] = where(uniform(gen) < 0.5 + 0.5 * clamp(t[j]), 1.0, -1.0)
    for j in range(d):  # w uniform on the cube ...
        w[j] = where(uniform(gen) < 0.5, 1.0, -1.0)
        total += w[j]
    # ... folded onto sum(w) >= 0, and to one side of the vertex by T: P(z | x) = p / 2^(d-1) for <z, x> > 0,
    # (1 - p) / 2^(d-1) for <z, x> < 0 and 1 / 2^d for a tie (even d): unbiased and exactly epsilon-LDP
    side = where(uniform(gen) < noise.keep, noise.bound, -noise.bound) * where(total < 0.0, -1.0, 1.0)
    for j in range(d):
        t[j] = side * w[j] * t[j]


@register_release(DuchiL2Release)
def _release_duchi_l2(noise, gen, t):
    d = t.shape[0]
    weights, u = noise.weights, noise.u
    norm2 = 0.0 * t[0]
    for j in range(d):
        t[j] = clamp(t[j]) * weights[j]
        norm2 += t[j] * t[j]
    norm = min(math.sqrt(norm2), 1.0)
    sign = where(uniform(gen) < 0.5 + 0.5 * norm, 1.0, -1.0)
    safe = where(norm > 0.0, norm, 1.0)
    dot = 0.0 * norm
    length2 = 0.0 * norm
    for j in range(d):
        u[j] = normal(gen)
        direction = where(norm > 0.0, t[j] / safe, where(j == 0, 1.0, 0.0))
        t[j] = sign * direction
        dot += u[j] * t[j]
        length2 += u[j] * u[j]
    keep = uniform(gen) < noise.keep
    flip = where((dot > 0.0) == keep, 1.0, -1.0)
    size = noise.bound / math.sqrt(length2)
    for j in range(d):
        t[j] = flip * size * u[j] / weights[j]


# --- Python side ---------------------------------------------------------------------------


class Duchi(Coordinatewise):
    """Duchi, Jordan & Wainwright (2018, JASA), 1-D: ``+-D``, ``P(+D) = 1/2 + t (e^e - 1) / (2 (e^e + 1))``."""

    name: ClassVar[str] = "duchi"
    label: ClassVar[str] = "Duchi et al."

    def record(self, lanes: int = 1):
        e = self.coordinate_epsilon
        return DuchiRelease(duchi_bound(e), 0.5 * math.tanh(e / 2.0))

    def _variance(self, t):
        return duchi_variance(self.coordinate_epsilon, t)

    @property
    def output_bound(self) -> np.ndarray:
        return np.full(self.dim, duchi_bound(self.coordinate_epsilon))


class DuchiLinf(BoundedMechanism):
    """Duchi et al. (2018), the l-infinity mechanism, ``B = C_d D`` (:func:`linf_constant`)."""

    name: ClassVar[str] = "duchi_linf"
    label: ClassVar[str] = "Duchi et al., l-infinity"

    @property
    def bound(self) -> float:
        return linf_constant(self.dim) * duchi_bound(self.epsilon)

    def record(self, lanes: int = 1):
        return DuchiLinfRelease(self.bound, 1.0 / (1.0 + math.exp(-self.epsilon)), lane_array(self.dim, lanes))

    @property
    def output_bound(self) -> np.ndarray:
        return np.full(self.dim, self.bound)

    def conditional_covariance(self, t) -> np.ndarray:
        # E[Z Z' | v] = B^2 I: Z_j Z_k = B^2 w_j w_k v_j v_k, and E[w_j w_k] = linf_correlation(d) = 0
        t = np.clip(np.asarray(t, dtype=float).reshape(self.dim), -1.0, 1.0)
        return self.expected_covariance(np.outer(t, t))

    def expected_covariance(self, second) -> np.ndarray:
        return self.bound**2 * np.eye(self.dim) - np.asarray(second, dtype=float)


@dataclass(frozen=True)
class DuchiL2(BoundedMechanism):
    """Duchi et al. (2018), the l2 mechanism on ``v = t * bounds / ||bounds||_2`` (in the unit ball).

    ``ball=True``: the gradient is known to lie in the l2 ball of radius
    ``r`` (a gradient clipped to norm ``r``) and ``bounds = (r, .., r)``; the
    mechanism then releases ``v = t = g / r`` itself (weights 1), not the
    box's ``t`` shrunk by ``1 / sqrt(d)``, and is epsilon-LDP on that ball.
    """

    ball: bool = False

    name: ClassVar[str] = "duchi_l2"
    label: ClassVar[str] = "Duchi et al., l2"

    def __post_init__(self):
        super().__post_init__()
        if self.ball and not (self.bounds == self.bounds[0]).all():
            raise ValueError(f"the ball form needs equal bounds (the radius), got {self.bounds}")

    @property
    def weights(self) -> np.ndarray:
        if self.ball:  # ||t||_2 = ||g||_2 / r <= 1 already
            return np.ones(self.dim)
        return self.bounds / np.linalg.norm(self.bounds)

    @property
    def guarantee(self) -> str:
        if not self.ball:
            return super().guarantee
        return (f"epsilon = {_fmt(self.epsilon)} LDP ({self.label}, on the l2 ball of radius "
                f"{_fmt(float(self.bounds[0]))})")

    @property
    def bound(self) -> float:
        return l2_constant(self.dim) * duchi_bound(self.epsilon)

    def record(self, lanes: int = 1):
        return DuchiL2Release(self.bound, 1.0 / (1.0 + math.exp(-self.epsilon)), self.weights.copy(),
                              lane_array(self.dim, lanes))

    @property
    def output_bound(self) -> np.ndarray:
        return self.bound / self.weights

    def conditional_covariance(self, t) -> np.ndarray:
        # E[Z Z' | v] = (B^2 / d) I (a hemisphere's second moment is the sphere's); t = Z / weights
        t = np.asarray(t, dtype=float).reshape(self.dim)
        return self.expected_covariance(np.outer(t, t))

    def expected_covariance(self, second) -> np.ndarray:
        return self.bound**2 / self.dim * np.diag(1.0 / self.weights**2) - np.asarray(second, dtype=float)


register("duchi", Duchi, "Duchi, Jordan & Wainwright (2018): each coordinate released as +-D at epsilon / d",
         "release", one_dimensional=True, audit_dims=(1,))
# duchi_linf also at d = 4: even d has ties (docs/corrections.md, item 29)
register("duchi_linf", DuchiLinf, "Duchi et al.'s l-infinity mechanism: the whole vector at epsilon", "release",
         audit_dims=(5, 4))
register("duchi_l2", DuchiL2, "Duchi et al.'s l2 mechanism: the whole vector at epsilon", "release", audit_dims=(5,))

__all__ = ["Duchi", "DuchiL2", "DuchiL2Release", "DuchiLinf", "DuchiLinfRelease", "DuchiRelease", "duchi_bound",
           "duchi_draw", "duchi_variance", "l2_constant", "linf_constant", "linf_correlation"]
