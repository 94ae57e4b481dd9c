"""The Gaussian design of 004's simulations, Mallows weights, and exact expectations over the design.

004, Section 5: ``x = (1, z)`` with ``z ~ N(0, I_d)`` (``sigma_z = 1``), and
Mallows weights ``w(x) = min(1, 2 / ||x||^2)`` that bound the weighted
gradient ``r(x, y) x w(x)``: ``||x|| w(x) <= sqrt(2)``, with equality at
``||x||^2 = 2``.

**Expectations without Monte Carlo.** Every population quantity the models
need (the risk ``F``, its gradient, ``G``, ``S``, the excess risk along a
path) is ``E[f(x)]`` for an ``f`` that depends on ``z`` only through its
projections on one or two fixed directions and through ``||z||^2`` (the
weight, the clipping norm). With ``u_1, u_2`` orthonormal, ``t_k = z'u_k`` are
i.i.d. ``N(0, 1)`` and independent of ``V = ||z||^2 - t_1^2 - t_2^2 ~ chi^2_(d-2)``,
so ``E f`` is a two-dimensional integral over ``(t_1, t_2)`` (polar
coordinates: trapezoid in the angle, which converges geometrically for a
periodic analytic integrand, and Gauss-Legendre in the radius) of an inner
one-dimensional integral over ``V`` (written in ``v = sqrt(V)``, chi
distributed with a smooth density). The weight and the clipping norm have
kinks; the inner integral is split at them, and the outer radius at the one
point (``t_1^2 + t_2^2 = 1``) where the weight's kink meets ``V = 0``, so that
every piece is integrated by a rule for smooth functions. Results agree to
about 1e-12 with twice the nodes (``tests/test_online_models.py``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..engine.dialect.jit import dual
from ..engine.dialect.rng import normal


#: ``w(x) = min(1, MALLOWS_C / ||x||^2)`` (004, Sections 5.1-5.2).
MALLOWS_C = 2.0
#: sup_x ||x|| w(x) = sqrt(MALLOWS_C), reached at ||x||^2 = MALLOWS_C.
MALLOWS_NORM_SUP = math.sqrt(MALLOWS_C)
#: Where the outer integrals stop (``phi(12) ~ 5e-32``).
_TAIL = 12.0


@dual(inline=True)  # plain Python in the twins; inlined in the kernels: it takes the generator
def draw_design(gen, x):
    """004's design ``x = (1, z)``, ``z`` i.i.d. ``N(0, 1)``, drawn into ``x`` (length ``d + 1``)."""
    x[0] = 1.0
    for j in range(1, x.shape[0]):
        x[j] = normal(gen)


@dual(inline=True)
def squared_norm(x):
    """``||x||^2`` of ``x = (1, z)``: 1 plus the squares of ``z``, summed in order."""
    sq = 1.0
    for j in range(1, x.shape[0]):
        sq += x[j] * x[j]
    return sq


def mallows_weight(sq):
    """``w = min(1, 2 / ||x||^2)`` from ``sq = ||x||^2`` (array or float)."""
    return np.minimum(1.0, MALLOWS_C / np.asarray(sq, dtype=float))


@functools.lru_cache(maxsize=None)
def _legendre(n: int):
    from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

    return special.roots_legendre(n)


def gauss_legendre(a, b, n: int):
    """Nodes and weights of the ``n``-point Gauss-Legendre rule on ``[a, b]`` (arrays broadcast)."""
    t, w = _legendre(n)
    a, b = np.asarray(a, dtype=float)[..., None], np.asarray(b, dtype=float)[..., None]
    half = (b - a) / 2.0
    return a + half * (t + 1.0), half * w


def chi_density(v, nu: int):
    """Density of ``sqrt(V)``, ``V ~ chi^2_nu`` (``nu >= 1``): ``v^(nu-1) e^(-v^2/2) / (2^(nu/2-1) Gamma(nu/2))``."""
    from scipy import special

    v = np.asarray(v, dtype=float)
    log_norm = (nu / 2.0 - 1.0) * math.log(2.0) + special.gammaln(nu / 2.0)
    with np.errstate(divide="ignore"):
        return np.exp((nu - 1) * np.log(v) - v * v / 2.0 - log_norm) if nu > 1 else np.exp(-v * v / 2.0 - log_norm)


def chi2_expect(func, q, nu: int, kinks=(), nodes: int = 48):
    """``E[func(q + V)]`` for ``V ~ chi^2_nu``, at every ``q`` of an array, split at kinks.

    Parameters
    ----------
    func : callable
        Maps arrays ``(s, V)`` (``s = q + V`` and ``V``, broadcast shape
        ``q.shape + (m,)``) to values of that shape; smooth in ``V`` between kinks.
    q : array_like
        Offsets ``>= 0``.
    nu : int
        Degrees of freedom, ``>= 0`` (``0``: ``V = 0``).
    kinks : sequence of array_like
        Values of ``s = q + V`` (broadcast with ``q``) where ``func`` has a kink.
    nodes : int
        Gauss-Legendre nodes per piece.

    Returns
    -------
    numpy.ndarray
        Shape of ``q``.
    """
    q = np.asarray(q, dtype=float)
    if nu == 0:
        return func(q[..., None], np.zeros(q.shape + (1,)))[..., 0]
    # breakpoints in v = sqrt(V): 0, the kinks that fall at V > 0, and the tail
    top = math.sqrt(nu) + _TAIL
    cuts = [np.zeros_like(q)]
    for s in kinks:
        vk = np.sqrt(np.clip(np.broadcast_to(np.asarray(s, dtype=float), q.shape) - q, 0.0, None))
        cuts.append(np.minimum(vk, top))
    cuts.append(np.full_like(q, top))
    cuts = np.sort(np.stack(cuts, axis=-1), axis=-1)
    total = np.zeros_like(q)
    for k in range(cuts.shape[-1] - 1):
        v, wts = gauss_legendre(cuts[..., k], cuts[..., k + 1], nodes)
        V = v * v
        total += np.sum(wts * chi_density(v, nu) * func(q[..., None] + V, V), axis=-1)
    return total


class GaussianDesign:
    """Expectations over ``x = (1, z)``, ``z ~ N(0, I_d)``, reduced to one or two directions of ``z``.

    Parameters
    ----------
    d : int
        Dimension of ``z``.
    weighted : bool
        Whether the integrands carry the Mallows weight ``w(x)``.
    nodes : int
        Gauss-Legendre nodes per piece (outer and inner rules); the angle uses
        ``2 nodes`` trapezoid points.
    """

    def __init__(self, d: int, weighted: bool = True, nodes: int = 48):
        if d < 1:
            raise ValueError(f"d must be >= 1, got {d}")
        self.d, self.weighted, self.nodes = int(d), bool(weighted), int(nodes)

    # --- the weight averaged over the rest of z ---------------------------------

    def weight_moment(self, q, nu: int, power: int = 1, v_power: int = 0):
        """``E[w(x)^power V^v_power]`` with ``||z||^2 = q + V``, ``V ~ chi^2_nu`` (1 for ``power = 0``)."""
        if not self.weighted or power == 0:
            if v_power == 0:
                return np.ones_like(np.asarray(q, dtype=float))
            return np.full_like(np.asarray(q, dtype=float), float(nu) if v_power == 1 else nu * (nu + 2.0))

        def f(s, V):
            return mallows_weight(1.0 + s) ** power * V**v_power

        return chi2_expect(f, q, nu, kinks=(MALLOWS_C - 1.0,), nodes=self.nodes)

    # --- one direction ----------------------------------------------------------------

    @functools.cached_property
    def line(self):
        """Nodes ``t`` of ``t = z'u ~ N(0, 1)`` and their weights (density included), pieces split at ``|t| = 1``."""
        cuts = [-_TAIL, -1.0, 1.0, _TAIL] if self.weighted else [-_TAIL, _TAIL]
        ts, ws = [], []
        for a, b in zip(cuts[:-1], cuts[1:]):
            t, w = gauss_legendre(a, b, 2 * self.nodes)
            ts.append(t)
            ws.append(w * np.exp(-t * t / 2.0) / math.sqrt(2.0 * math.pi))
        return np.concatenate(ts), np.concatenate(ws)

    @functools.cached_property
    def line_weights(self):
        """Nodes ``t``, weights ``p``, and ``E[w | t]``, ``E[w^2 | t]``, ``E[w V | t]``, ``E[w^2 V | t]``.

        ``V = ||z||^2 - t^2 ~ chi^2_(d-1)``.
        """
        t, p = self.line
        nu = self.d - 1
        return (t, p, self.weight_moment(t * t, nu), self.weight_moment(t * t, nu, power=2),
                self.weight_moment(t * t, nu, v_power=1), self.weight_moment(t * t, nu, power=2, v_power=1))

    def expect_line(self, func, power: int = 1):
        """``E[w(x)^power func(t)]`` with ``t = z'u`` for a unit ``u`` (``func`` maps ``(N,)`` nodes to ``(..., N)``)."""
        t, p, w1, w2, _, _ = self.line_weights
        w = {0: np.ones_like(t), 1: w1, 2: w2}[power]
        return np.asarray(func(t)) @ (p * w)

    # --- two directions ---------------------------------------------------------------

    @functools.cached_property
    def plane(self):
        """Nodes ``(t1, t2)`` in polar coordinates, their weights, and ``E[w | rho]``, ``E[w^2 | rho]``."""
        if self.d < 2:
            raise ValueError("two directions need d >= 2")
        cuts = [0.0, 1.0, _TAIL] if self.weighted else [0.0, _TAIL]
        rs, ws = [], []
        for a, b in zip(cuts[:-1], cuts[1:]):
            r, w = gauss_legendre(a, b, self.nodes)
            rs.append(r)
            ws.append(w * r * np.exp(-r * r / 2.0))  # density of rho = |(t1, t2)|: chi_2
        rho, wr = np.concatenate(rs), np.concatenate(ws)
        m = 2 * self.nodes
        phi = 2.0 * math.pi * np.arange(m) / m
        t1 = (rho[:, None] * np.cos(phi)[None, :]).ravel()
        t2 = (rho[:, None] * np.sin(phi)[None, :]).ravel()
        p = np.repeat(wr / m, m)
        nu = self.d - 2
        w1 = np.repeat(self.weight_moment(rho * rho, nu), m)
        w2 = np.repeat(self.weight_moment(rho * rho, nu, power=2), m)
        return t1, t2, p, w1, w2, np.repeat(rho, m)

    def expect_plane(self, func, power: int = 1):
        """``E[w(x)^power func(t1, t2)]`` with ``t_k = z'u_k`` for orthonormal ``u_1, u_2``."""
        t1, t2, p, w1, w2, _ = self.plane
        w = {0: np.ones_like(t1), 1: w1, 2: w2}[power]
        return np.asarray(func(t1, t2)) @ (p * w)

    # --- moments of the weight alone --------------------------------------------------

    @functools.cached_property
    def radial(self):
        """``E[w]``, ``E[w ||z||^2]``, ``E[w^2]``, ``E[w^2 ||z||^2]`` (``||z||^2 ~ chi^2_d``)."""
        zero = np.zeros(1)
        return tuple(float(self.weight_moment(zero, self.d, power=k, v_power=j)[0]) for k, j in
                     ((1, 0), (1, 1), (2, 0), (2, 1)))

    def second_moment(self, power: int = 1) -> np.ndarray:
        """``E[w^power x x']``: ``diag(E[w^power], E[w^power ||z||^2] / d, ...)`` by symmetry."""
        m0, m1 = (self.radial[0], self.radial[1]) if power == 1 else (self.radial[2], self.radial[3])
        if power == 0:
            m0, m1 = 1.0, float(self.d)
        return np.diag([m0] + [m1 / self.d] * self.d)


def orthonormal_pair(a, b):
    """``u1 = a / |a|`` and the unit part of ``b`` orthogonal to it, with ``b = c1 u1 + c2 u2``.

    Returns ``(u1, u2, c1, c2)`` with ``c2 >= 0``; ``u2`` is any unit vector
    orthogonal to ``u1`` when ``b`` is parallel to ``a`` (``c2 = 0``).
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    u1 = a / np.linalg.norm(a)
    c1 = float(b @ u1)
    rest = b - c1 * u1
    c2 = float(np.linalg.norm(rest))
    if c2 > 1e-300:
        u2 = rest / c2
    else:  # any orthogonal unit vector
        e = np.zeros_like(a)
        e[int(np.argmin(np.abs(u1)))] = 1.0
        u2 = e - (e @ u1) * u1
        u2 /= np.linalg.norm(u2)
        c2 = 0.0
    return u1, u2, c1, c2


__all__ = ["GaussianDesign", "MALLOWS_C", "MALLOWS_NORM_SUP", "chi2_expect", "chi_density", "gauss_legendre",
           "mallows_weight", "orthonormal_pair"]
