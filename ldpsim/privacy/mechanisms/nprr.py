"""Waudby-Smith, Wu & Ramdas (2023, ICML), nonparametric randomized response (NPRR), each coordinate at ``epsilon / d``.

On ``x = (t + 1) / 2`` in ``[0, 1]``: ``x`` is rounded at random to the grid
``{0, 1/G, .., 1}`` (unbiasedly), kept with probability ``r`` and otherwise
replaced by a uniform point of the grid; the release is debiased back to
``[-1, 1]`` scale. ``eps = log(1 + (G + 1) r / (1 - r))``; ``G`` and ``r`` by
the authors' entropy rule (:func:`nprr_entropy_rule`) unless given. The
coverage study's NPRR confidence sequences (:mod:`ldpsim.studies.coverage.releases`)
read the releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from ...engine.dialect.lanes import where
from ...engine.errors import ConfigError
from ...engine.dialect.rng import uniform
from .bounded import Coordinatewise, clamp
from .kernel import register_release
from .registry import register


def _nprr_entropy(r: float, epsilon: float) -> float:
    # minus the entropy (bits) of NPRR's output for an input between two grid points, G from r and epsilon
    G = math.expm1(epsilon) * (1.0 - r) / r - 1.0
    p0 = (1.0 - r) / (G + 1.0)
    p1 = p0 + r / 2.0
    return (G - 1.0) * p0 * math.log2(p0) + 2.0 * p1 * math.log2(p1)


def nprr_entropy_rule(epsilon: float) -> tuple[int, float]:
    """``(G, r)`` of NPRR by the authors' entropy rule (``r_G_opt_entropy`` in WannabeSmith/nprr, mechanisms.py).

    With ``G(r) = (e^eps - 1)(1 - r) / r - 1`` (the continuous solution of
    ``eps = log(1 + (G + 1) r / (1 - r))``), ``r*`` minimises minus the
    output's entropy over ``[0.51, 0.99]`` (L-BFGS-B from 0.6, as theirs);
    ``G`` is the floor or the ceiling of ``max(1, G(r*))``, whichever has the
    smaller objective (the ceiling on ties), and ``r = (e^eps - 1) / (e^eps + G)``
    keeps epsilon exact. Gives their (G, r) at eps = 0.5, 1, 2, 4, 8
    (tests/data/mechanism_references.json).
    """
    from scipy import optimize

    found = optimize.minimize(lambda r: _nprr_entropy(float(r[0]), epsilon), [0.6], bounds=[(0.51, 0.99)],
                              method="L-BFGS-B")
    r_star = float(found.x[0])
    g_star = max(1.0, math.expm1(epsilon) * (1.0 - r_star) / r_star - 1.0)

    def r_of(G):
        return math.expm1(epsilon) / (math.exp(epsilon) + G)

    low, high = int(math.floor(g_star)), int(math.ceil(g_star))
    G = low if _nprr_entropy(r_of(low), epsilon) < _nprr_entropy(r_of(high), epsilon) else high
    return G, r_of(G)


#: The largest grid NPRR is built with: its worst-case variance is evaluated on ``20 G + 1`` points of
#: ``[-1, 1]`` (:attr:`NPRR.variance`), and its confidence sets count the grid's ``G + 1`` values. The entropy
#: rule's ``G`` grows like ``e^epsilon``: ``G = 2863`` at epsilon 8, about ``10^6`` at 13.8, ``10^303`` at 700.
MAX_GRID = 10**6


def max_grid_epsilon() -> float:
    """The largest per-coordinate epsilon whose entropy-rule grid has at most :data:`MAX_GRID` cells (bisection)."""
    low, high = 1.0, 40.0
    for _ in range(40):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if nprr_entropy_rule(mid)[0] <= MAX_GRID else (low, mid)
    return low


def nprr_epsilon(G: int, r: float) -> float:
    """``eps = log(1 + (G + 1) r / (1 - r))``, NPRR's guarantee."""
    return math.log1p((G + 1) * r / (1.0 - r))


class NPRRRelease(NamedTuple):
    """Coordinatewise NPRR on ``x = (t + 1) / 2``: the grid ``{0, 1/G, .., 1}``, kept with probability ``r``."""

    grid: float  # G, as a float
    keep: float  # r


@register_release(NPRRRelease)
def _release_nprr(noise, gen, t):
    g, r = noise.grid, noise.keep
    for j in range(t.shape[0]):
        xg = 0.5 * (clamp(t[j]) + 1.0) * g
        low = min(float(int(xg)), g - 1.0)  # floor, and x = 1 rounds within the last cell
        up = where(uniform(gen) < xg - low, 1.0, 0.0)
        kept = uniform(gen) < r
        anywhere = min(float(int(uniform(gen) * (g + 1.0))), g)
        y = where(kept, low + up, anywhere) / g
        t[j] = 2.0 * (y - 0.5 * (1.0 - r)) / r - 1.0


@dataclass(frozen=True)
class NPRR(Coordinatewise):
    """Waudby-Smith, Wu & Ramdas (2023, ICML), nonparametric randomized response, on ``x = (t + 1) / 2``.

    ``G`` and ``r`` by the authors' entropy rule unless given (both or neither).
    """

    G: int | None = None
    r: float | None = None

    name: ClassVar[str] = "nprr"
    label: ClassVar[str] = "NPRR"

    def __post_init__(self):
        super().__post_init__()
        if (self.G is None) != (self.r is None):
            raise ValueError("give both G and r, or neither")
        if self.G is None:
            if math.isfinite(self.coordinate_epsilon) and self.coordinate_epsilon > 40.0:  # e^eps overflows at 710
                G = math.inf
            else:
                G, r = nprr_entropy_rule(self.coordinate_epsilon)
            if G > MAX_GRID:
                cells = (f"{G:.3g}" if math.isfinite(G)
                         else f"about 10^{self.coordinate_epsilon / math.log(10.0):.3g}")  # G ~ e^epsilon
                raise ConfigError(f"mechanism = 'nprr' at epsilon = {self.coordinate_epsilon:g} per coordinate: the "
                                  f"entropy rule's grid would have G = {cells} cells, more than the 10^6 ldpsim "
                                  f"builds NPRR with; allowed: epsilon <= {max_grid_epsilon():.1f} per coordinate "
                                  "(epsilon / d for a vector)")
            object.__setattr__(self, "G", G)
            object.__setattr__(self, "r", r)
        elif abs(nprr_epsilon(self.G, self.r) - self.coordinate_epsilon) > 1e-9 * self.coordinate_epsilon:
            raise ValueError(f"G = {self.G}, r = {self.r} give epsilon = {nprr_epsilon(self.G, self.r):g}, "
                             f"not {self.coordinate_epsilon:g}")

    def record(self, lanes: int = 1):
        return NPRRRelease(float(self.G), float(self.r))

    @property
    def output_bound(self) -> np.ndarray:
        return np.full(self.dim, 1.0 / self.r)

    @property
    def jump_points(self) -> tuple:
        # between the two lowest and the two highest of the G + 1 outputs
        G, r = self.G, self.r
        return tuple(2.0 * (k / G - 0.5 * (1.0 - r)) / r - 1.0 for k in (0.5, G - 0.5))

    def rounding_term(self, t) -> np.ndarray:
        """``f (1 - f)``, ``f`` the fractional part of ``x G``, ``x = (t + 1) / 2``: the rounding's variance times G^2."""
        xg = 0.5 * (np.clip(np.asarray(t, dtype=float), -1.0, 1.0) + 1.0) * self.G
        f = xg - np.minimum(np.floor(xg), self.G - 1)
        return f * (1.0 - f)

    def _variance(self, t, rounding=None):
        G, r = self.G, self.r
        t = np.asarray(t, dtype=float)
        x = 0.5 * (t + 1.0)
        rounding = self.rounding_term(t) if rounding is None else rounding
        second = r * (x * x + rounding / G**2) + (1.0 - r) * (2.0 * G + 1.0) / (6.0 * G)
        return 4.0 * (second - (r * x + 0.5 * (1.0 - r)) ** 2) / r**2

    def expected_covariance(self, second, rounding=None) -> np.ndarray | None:
        """Needs ``rounding = E[f (1 - f)]`` per coordinate too (:meth:`rounding_term`); ``None`` without it."""
        if rounding is None:
            return None
        second = np.asarray(second, dtype=float)
        a = self._variance(np.zeros(self.dim), np.zeros(self.dim))
        b = self._variance(np.ones(self.dim), np.zeros(self.dim)) - a
        r_part = 4.0 * np.asarray(rounding, dtype=float) / (self.r * self.G**2)
        return np.diag(a + b * np.diag(second) + r_part)

    @property
    def variance(self) -> float:
        t = np.linspace(-1.0, 1.0, 20 * self.G + 1)  # the rounding term peaks mid-cell
        return float(np.max(self._variance(t)))


register("nprr", NPRR, "nonparametric randomized response (Waudby-Smith, Wu & Ramdas 2023), each coordinate at "
         "epsilon / d", "release", one_dimensional=True, audit_dims=(1,))

__all__ = ["MAX_GRID", "NPRR", "NPRRRelease", "max_grid_epsilon", "nprr_entropy_rule", "nprr_epsilon"]
