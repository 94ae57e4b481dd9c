"""LDP mechanisms for bounded numbers and vectors: Duchi, Piecewise, Hybrid, Harmony, NPRR (issue 30).

Unlike the additive mechanisms (Laplace, Gaussian), these release a value
whose law depends on the input: the gradient ``g`` of one observation, in
the box ``|g_j| <= bounds[j]``, is scaled to ``t = g / bounds`` in
``[-1, 1]^d`` and the mechanism releases an unbiased estimate of ``t``
(``E[M(t) | t] = t``); the model adds ``bounds * M(t)``. Each is pure
epsilon-LDP for the whole vector:

* ``duchi`` (Duchi, Jordan & Wainwright 2018, JASA, the 1-D mechanism),
  ``piecewise`` (Wang et al. 2019, ICDE, "PM"), ``hybrid`` ("HM") and
  ``nprr`` (Waudby-Smith, Wu & Ramdas 2023, ICML) are 1-D: on a vector each
  coordinate gets ``epsilon / d`` (sequential composition);
* ``duchi_linf`` and ``duchi_l2`` (Duchi et al. 2018, the multidimensional
  mechanisms), ``harmony`` (Nguyen et al. 2016), ``piecewise_d`` and
  ``hybrid_d`` (Wang et al. 2019, Algorithm 4) spend ``epsilon`` on the
  whole vector.

Each has a Python-side description (its constants, its guarantee, the exact
conditional covariance of its release and that covariance averaged over the
data) and a kernel function, :func:`release`, registered for its record; the
audit (:mod:`.audit`, ``ReleaseProbe``) draws through the same function.
docs/mechanisms.md has the formulas and their sources.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import numpy as np

from ..engine.dispatch import by_record
from ..engine.jit import dual
from ..engine.lanes import lane_array, where
from ..engine.rng import normal, uniform

#: The mechanisms of this module, as configs spell them.
LDP_MECHANISMS = ("duchi", "piecewise", "hybrid", "nprr", "duchi_linf", "duchi_l2", "harmony", "piecewise_d",
                  "hybrid_d")
#: Of those, the 1-D ones (a vector's coordinates each get epsilon / d).
ONE_DIMENSIONAL = ("duchi", "piecewise", "hybrid", "nprr")


def _fmt(x: float) -> str:
    return f"{x:g}"


# --- the constants ----------------------------------------------------------------


def duchi_bound(epsilon: float) -> float:
    """``D = (e^eps + 1) / (e^eps - 1)``, the 1-D Duchi mechanism's output magnitude."""
    return 1.0 + 2.0 / math.expm1(epsilon)


def piecewise_c(epsilon: float) -> float:
    """``C = (e^(eps/2) + 1) / (e^(eps/2) - 1)``, the Piecewise mechanism's output range ``[-C, C]``."""
    return 1.0 + 2.0 / math.expm1(epsilon / 2.0)


def duchi_variance(epsilon: float, t):
    """``Var = D^2 - t^2`` of the 1-D Duchi mechanism at ``t``."""
    return duchi_bound(epsilon) ** 2 - np.square(t)


def piecewise_variance(epsilon: float, t):
    """``Var = t^2 / (e^(eps/2) - 1) + (e^(eps/2) + 3) / (3 (e^(eps/2) - 1)^2)`` (Wang et al. 2019, Lemma 1)."""
    a = math.expm1(epsilon / 2.0)
    return np.square(t) / a + (a + 4.0) / (3.0 * a * a)


def _hybrid_gap(epsilon: float) -> float:
    # the Piecewise mechanism's variance at t = 0 minus Duchi's: HM mixes in PM where this is negative
    a = math.expm1(epsilon / 2.0)
    return (a + 4.0) / (3.0 * a * a) - duchi_bound(epsilon) ** 2


@functools.cache
def _hybrid_threshold() -> float:
    from scipy import optimize  # lazy: import ldpsim <= 1 s (issue 41)

    return float(optimize.brentq(_hybrid_gap, 0.1, 2.0, xtol=1e-15))


#: ``eps*`` of the Hybrid mechanism (Wang et al. 2019, about 0.61): below it HM is Duchi's mechanism alone. It is
#: where PM's variance at ``t = 0`` equals Duchi's (the worst case of both); solved, not typed in (on first use, by
#: the module's ``__getattr__``: scipy.optimize is not loaded at import).
HYBRID_THRESHOLD: float


def __getattr__(name):
    if name == "HYBRID_THRESHOLD":
        return _hybrid_threshold()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def hybrid_alpha(epsilon: float) -> float:
    """The Hybrid mechanism's probability of using PM: ``1 - e^(-eps/2)`` above :data:`HYBRID_THRESHOLD`, else 0."""
    return -math.expm1(-epsilon / 2.0) if epsilon > _hybrid_threshold() else 0.0


def hybrid_variance(epsilon: float, t):
    """HM's variance: ``alpha Var_PM(0) + (1 - alpha) D^2`` above eps* (the same at every ``t``), Duchi's below."""
    alpha = hybrid_alpha(epsilon)
    if alpha == 0.0:
        return duchi_variance(epsilon, t)
    value = alpha * piecewise_variance(epsilon, 0.0) + (1.0 - alpha) * duchi_bound(epsilon) ** 2
    return np.full(np.shape(t), value) if np.ndim(t) else value


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


def piecewise_d_k(epsilon: float, d: int) -> int:
    """Coordinates Wang et al.'s Algorithm 4 perturbs: ``k = max(1, min(d, floor(eps / 2.5)))``."""
    return max(1, min(d, int(math.floor(epsilon / 2.5))))


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


def nprr_epsilon(G: int, r: float) -> float:
    """``eps = log(1 + (G + 1) r / (1 - r))``, NPRR's guarantee."""
    return math.log1p((G + 1) * r / (1.0 - r))


# --- kernel records ------------------------------------------------------------------------
# Each record's release overwrites t (shape (d,), values in [-1, 1], one per lane in lanes) with
# an unbiased release of it. Every draw is made in every lane (both sides of each `where`), so
# lanes draw as one-lane runs do, and each call draws a fixed number of numbers.


class DuchiRelease(NamedTuple):
    """Coordinatewise 1-D Duchi: ``+-D`` with ``P(+D) = 1/2 + t tilt``, ``tilt = (e^e - 1) / (2 (e^e + 1))``."""

    bound: float
    tilt: float


class PiecewiseRelease(NamedTuple):
    """Coordinatewise PM: ``C``, and ``P(inside) = e^(e/2) / (e^(e/2) + 1)``."""

    c: float
    inside: float


class HybridRelease(NamedTuple):
    """Coordinatewise HM: PM with probability ``alpha``, Duchi otherwise."""

    alpha: float
    c: float
    inside: float
    bound: float
    tilt: float


class NPRRRelease(NamedTuple):
    """Coordinatewise NPRR on ``x = (t + 1) / 2``: the grid ``{0, 1/G, .., 1}``, kept with probability ``r``."""

    grid: float  # G, as a float
    keep: float  # r


class HarmonyRelease(NamedTuple):
    """Harmony: one coordinate, ``+-d D``."""

    dim: float
    value: float  # d D
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


class SampledRelease(NamedTuple):
    """Wang et al.'s Algorithm 4: ``k`` coordinates at ``eps / k`` by the 1-D release ``one``, scaled by ``d / k``."""

    k: float
    scale: float
    one: tuple  # DuchiRelease, PiecewiseRelease or HybridRelease


@by_record
def release(noise, gen, t):
    """Overwrite ``t`` (``(d,)``, in ``[-1, 1]``) with the mechanism's unbiased release of it."""


def register_release(record_cls):
    """Register a releasing mechanism: ``func(noise, gen, t)`` overwrites ``t`` with its release, in place.

    ``t`` is the gradient scaled into ``[-1, 1]^d`` (``g_j / bounds[j]``; one
    entry per lane in lanes); the function must release an unbiased estimate
    of it, ``E[t_new | t] = t``, drawing only from ``gen``. The models with a
    bounded gradient scale the release back (``bounds[j] t_new[j]``), and the
    audit draws through the same function. ldpsim's own mechanisms of this
    kind (Duchi, PM, HM, NPRR, Harmony, ...) are registered with it.
    """
    return release.register(record_cls)


@dual(inline=True)
def _duchi(gen, t, bound, tilt):
    return where(uniform(gen) < 0.5 + t * tilt, bound, -bound)


@dual(inline=True)
def _piecewise(gen, t, c, inside):
    left = 0.5 * (c + 1.0) * t - 0.5 * (c - 1.0)
    right = left + c - 1.0
    u = uniform(gen)
    v = uniform(gen)
    pos = v * (c + 1.0)  # a point of [-C, l) U (r, C], whose length is C + 1
    outside = where(pos < left + c, pos - c, right + (pos - (left + c)))
    return where(u < inside, left + (c - 1.0) * v, outside)


@dual(inline=True)
def _hybrid(gen, t, alpha, c, inside, bound, tilt):
    u = uniform(gen)
    pm = _piecewise(gen, t, c, inside)
    duchi = _duchi(gen, t, bound, tilt)
    return where(u < alpha, pm, duchi)


@dual(inline=True)
def _clamp(t):
    return min(max(t, -1.0), 1.0)


@by_record
def _release_one(noise, gen, t):
    """The 1-D release of the scalar ``t`` in ``[-1, 1]`` (Duchi, PM, HM)."""


@_release_one.register(DuchiRelease)
def _release_one_duchi(noise, gen, t):
    return _duchi(gen, t, noise.bound, noise.tilt)


@_release_one.register(PiecewiseRelease)
def _release_one_piecewise(noise, gen, t):
    return _piecewise(gen, t, noise.c, noise.inside)


@_release_one.register(HybridRelease)
def _release_one_hybrid(noise, gen, t):
    return _hybrid(gen, t, noise.alpha, noise.c, noise.inside, noise.bound, noise.tilt)


def _release_coordinatewise(noise, gen, t):
    for j in range(t.shape[0]):
        t[j] = _release_one(noise, gen, _clamp(t[j]))


for _cls in (DuchiRelease, PiecewiseRelease, HybridRelease):
    register_release(_cls)(_release_coordinatewise)


@register_release(NPRRRelease)
def _release_nprr(noise, gen, t):
    g, r = noise.grid, noise.keep
    for j in range(t.shape[0]):
        xg = 0.5 * (_clamp(t[j]) + 1.0) * g
        low = min(float(int(xg)), g - 1.0)  # floor, and x = 1 rounds within the last cell
        up = where(uniform(gen) < xg - low, 1.0, 0.0)
        kept = uniform(gen) < r
        anywhere = min(float(int(uniform(gen) * (g + 1.0))), g)
        y = where(kept, low + up, anywhere) / g
        t[j] = 2.0 * (y - 0.5 * (1.0 - r)) / r - 1.0


@register_release(HarmonyRelease)
def _release_harmony(noise, gen, t):
    d = t.shape[0]
    pick = min(float(int(uniform(gen) * noise.dim)), noise.dim - 1.0)
    tj = 0.0 * t[0]
    for j in range(d):
        tj = where(pick == j, _clamp(t[j]), tj)
    value = where(uniform(gen) < 0.5 + tj * noise.tilt, noise.value, -noise.value)
    for j in range(d):
        t[j] = where(pick == j, value, 0.0)


@register_release(DuchiLinfRelease)
def _release_duchi_linf(noise, gen, t):
    d = t.shape[0]
    w = noise.w
    total = 0.0
    for j in range(d):  # the randomized rounding of t to a vertex, into t
        t[j] = where(uniform(gen) < 0.5 + 0.5 * _clamp(t[j]), 1.0, -1.0)
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
        t[j] = _clamp(t[j]) * weights[j]
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
        value = _release_one(noise.one, gen, _clamp(t[j]))  # drawn for every j: a fixed count of draws per call
        t[j] = where(take, noise.scale * value, 0.0)


# --- Python side ---------------------------------------------------------------------------


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

    def record(self, lanes: int = 1):
        """The kernel record of the release (:func:`release`)."""
        raise NotImplementedError

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


class _Coordinatewise(BoundedMechanism):
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


class Duchi(_Coordinatewise):
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


class Piecewise(_Coordinatewise):
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


class Hybrid(_Coordinatewise):
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


@dataclass(frozen=True)
class NPRR(_Coordinatewise):
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
            G, r = nprr_entropy_rule(self.coordinate_epsilon)
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


class _Sampled(BoundedMechanism):
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


class PiecewiseD(_Sampled):
    name: ClassVar[str] = "piecewise_d"
    label: ClassVar[str] = "Piecewise mechanism, k of d coordinates"
    base: ClassVar[type] = Piecewise


class HybridD(_Sampled):
    name: ClassVar[str] = "hybrid_d"
    label: ClassVar[str] = "Hybrid mechanism, k of d coordinates"
    base: ClassVar[type] = Hybrid


CLASSES = {cls.name: cls for cls in (Duchi, Piecewise, Hybrid, NPRR, DuchiLinf, DuchiL2, Harmony, PiecewiseD, HybridD)}


def make_ldp_mechanism(name: str, epsilon: float, bounds) -> BoundedMechanism:
    """The mechanism ``name`` (:data:`LDP_MECHANISMS`) for a gradient in the box ``|g_j| <= bounds[j]``."""
    return CLASSES[name](float(epsilon), bounds)


__all__ = ["BoundedMechanism", "CLASSES", "HYBRID_THRESHOLD", "LDP_MECHANISMS", "ONE_DIMENSIONAL", "make_ldp_mechanism",
           "register_release", "release"]
