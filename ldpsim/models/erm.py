"""Empirical-risk models: a training set of n points, per-sample losses, and exact population risks.

Methods that run on a fixed sample (SAGD, DP-GD) need, besides the data and
the per-sample gradient, the *population* risk ``f(w) = E l(w; z)`` and its
gradient at any ``w``, exactly. The design makes that a two-dimensional
integral:

    x = (x0, r S),  S uniform on the unit sphere of R^p  (p = d - 1, x0 = 1),

with labels that depend on ``x`` through ``x'beta`` alone. For any unit
``e1`` and ``f`` orthogonal to it, ``(S'e1, S'f)`` has a known law, so

    E[h(x'beta, x'w) x] = (x0 E[h], r (E[h U1] e1 + E[h U2] f))

with ``U1 = S'e1`` (``e1`` the direction of ``beta[1:]``), ``U2 = S'f`` (``f``
the direction of the part of ``w[1:]`` orthogonal to ``e1``): by symmetry,
the component of ``E[h S]`` outside the plane of ``e1`` and ``f`` vanishes.
``U1`` has density proportional to ``(1 - u^2)^((p-3)/2)`` on ``[-1, 1]``
and, given ``U1 = u``, ``U2 = sqrt(1 - u^2) V`` with ``V`` the first
coordinate of a uniform point of the sphere of ``R^(p-1)``, density
proportional to ``(1 - v^2)^((p-4)/2)`` (``V = +-1`` for ``p = 2``). A
tensor Gauss-Jacobi rule in ``(U1, V)`` with ``K`` nodes each integrates
``h(a + b U1 + c sqrt(1 - U1^2) V)`` with exponential accuracy: the inner
integral is even in ``c sqrt(1 - U1^2)``, hence analytic in ``U1``
(:func:`sphere_plane_rule`; ``tests/test_sagd.py`` checks it against Monte
Carlo and against twice the nodes).

Two models, both with population minimiser ``beta`` (so ``f* = f(beta)``):

* ``logistic`` (convex): ``P(y = 1 | x) = s(x'beta)``, loss
  ``log(1 + e^(x'w)) - y x'w``, per-sample gradient ``(s(x'w) - y) x``;
* ``welsch`` (smooth, bounded, non-convex): ``y = x'beta + noise N(0, s^2)``,
  loss ``c^2 (1 - exp(-(y - x'w)^2 / (2 c^2)))`` (Welsch / correntropy loss);
  the conditional risk given ``x`` is closed form (Gaussian convolution):
  ``c^2 (1 - c / sqrt(c^2 + s^2) exp(-a^2 / (2 (c^2 + s^2))))``, ``a = x'(beta - w)``.

``beta = (0, signal / r, ..., signal / r)``: ``x'beta`` has standard deviation
``signal``. Every per-sample gradient is bounded, which the privacy
accounting needs: ``||grad l||_1 <= G1 = psi_max (x0 + r sqrt(p))`` and
each coordinate lies in an interval of width ``W = 2 psi_max max(x0, r)``,
with ``psi_max = 1`` (logistic, ``|s - y| < 1``) or ``c e^(-1/2)`` (welsch,
``max |rho'|``).

Kernel functions take the :class:`ErmParams` record; the plain functions
are :func:`dual`: Python calls run them as written (the kernels' twins),
jitted callers compile them. The loss is the record's ``loss`` field, a
:class:`LogisticLoss` or :class:`WelschLoss` record, and its functions
(:func:`sample_loss`, :func:`sample_dloss`, :func:`conditional_loss`,
:func:`conditional_dloss`, :func:`draw_label`) are picked by its type
(:func:`ldpsim.engine.dialect.dispatch.by_record`), as every model's gradient is:
a kernel is compiled for one loss, with no branch on the model inside.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..engine.dialect.dispatch import by_record
from ..engine.dialect.jit import dual
from ..engine.dialect.rng import normal, uniform


class LogisticLoss(NamedTuple):
    """The logistic model's loss ``log(1 + e^(x'w)) - y x'w``, labels ``P(y = 1 | x) = s(x'beta)``."""

    zero: float = 0.0  # numba wants a field


class WelschLoss(NamedTuple):
    """The Welsch loss ``c^2 (1 - exp(-(y - x'w)^2 / (2 c^2)))``, labels ``y = x'beta + N(0, s^2)``."""

    scale: float  # c of the loss
    noise: float  # s, sd of the model's errors


#: Model names, as configs spell them, and the record of each one's loss.
ERM_MODELS = {"logistic": LogisticLoss, "welsch": WelschLoss}


class ErmParams(NamedTuple):
    """Constants of an empirical-risk model, for the kernels."""

    loss: tuple  # LogisticLoss or WelschLoss: the kernels are compiled for its type
    x0: float  # intercept coordinate of every x
    radius: float  # r: x[1:] = r S
    beta: np.ndarray  # (d,) true parameter, population minimiser
    e1: np.ndarray  # (d,) unit direction of beta[1:], e1[0] = 0
    u1: np.ndarray  # (K,) quadrature nodes U1 = S'e1
    u2: np.ndarray  # (K,) quadrature nodes U2 = S'f
    qw: np.ndarray  # (K,) quadrature weights, summing to 1
    ub: np.ndarray  # (K,) x'beta at the nodes


# --- scalar pieces --------------------------------------------------------------


@dual
def sigmoid(u):
    """``1 / (1 + e^-u)`` without overflow for any finite ``u``."""
    if u >= 0.0:
        return 1.0 / (1.0 + math.exp(-u))
    e = math.exp(u)
    return e / (1.0 + e)


@dual
def softplus(u):
    """``log(1 + e^u)`` without overflow."""
    return max(u, 0.0) + math.log1p(math.exp(-abs(u)))


@by_record
def sample_loss(loss, u, y):
    """Per-sample loss at linear predictor ``u = x'w`` and label ``y``."""


@by_record
def sample_dloss(loss, u, y):
    """Derivative of :func:`sample_loss` in ``u``: the per-sample gradient is this times ``x``."""


@by_record
def conditional_loss(loss, ub, uw):
    """``E[loss | x]`` at ``x'beta = ub``, ``x'w = uw``."""


@by_record
def conditional_dloss(loss, ub, uw):
    """Derivative of :func:`conditional_loss` in ``uw``: ``E[grad loss | x]`` is this times ``x``."""


@by_record
def draw_label(loss, gen, ub):
    """The label of a point with ``x'beta = ub``: one uniform (logistic) or one normal (welsch)."""


@sample_loss.register(LogisticLoss)
def _logistic_loss(loss, u, y):
    return softplus(u) - y * u


@sample_dloss.register(LogisticLoss)
def _logistic_dloss(loss, u, y):
    return sigmoid(u) - y


@conditional_loss.register(LogisticLoss)
def _logistic_conditional_loss(loss, ub, uw):
    return softplus(uw) - sigmoid(ub) * uw


@conditional_dloss.register(LogisticLoss)
def _logistic_conditional_dloss(loss, ub, uw):
    return sigmoid(uw) - sigmoid(ub)


@draw_label.register(LogisticLoss)
def _logistic_label(loss, gen, ub):
    return 1.0 if uniform(gen) * (1.0 + math.exp(-ub)) < 1.0 else 0.0


@sample_loss.register(WelschLoss)
def _welsch_loss(loss, u, y):
    r = y - u
    c2 = loss.scale * loss.scale
    return c2 * (1.0 - math.exp(-r * r / (2.0 * c2)))


@sample_dloss.register(WelschLoss)
def _welsch_dloss(loss, u, y):
    r = y - u
    return -r * math.exp(-r * r / (2.0 * loss.scale * loss.scale))


@conditional_loss.register(WelschLoss)
def _welsch_conditional_loss(loss, ub, uw):
    a = ub - uw
    c2 = loss.scale * loss.scale
    t = c2 + loss.noise * loss.noise
    return c2 * (1.0 - loss.scale / math.sqrt(t) * math.exp(-a * a / (2.0 * t)))


@conditional_dloss.register(WelschLoss)
def _welsch_conditional_dloss(loss, ub, uw):
    a = ub - uw
    c = loss.scale
    t = c * c + loss.noise * loss.noise
    return -(c * c * c / (t * math.sqrt(t))) * a * math.exp(-a * a / (2.0 * t))


@draw_label.register(WelschLoss)
def _welsch_label(loss, gen, ub):
    return ub + loss.noise * normal(gen)


# --- the sample ---------------------------------------------------------------


@dual(inline=True)
def draw_sample(params, gen, X, y):
    """Fill ``X`` (n, d) and ``y`` (n,) with n i.i.d. points.

    Per point: ``d - 1`` standard normals normalised to the sphere, then the
    label (logistic: one uniform, ``y = 1`` if ``u (1 + e^(-x'beta)) < 1``;
    welsch: one normal).
    """
    n, d = X.shape
    beta = params.beta
    for i in range(n):
        ss = 0.0
        for j in range(1, d):
            z = normal(gen)
            X[i, j] = z
            ss += z * z
        k = params.radius / math.sqrt(ss)
        X[i, 0] = params.x0
        ub = params.x0 * beta[0]
        for j in range(1, d):
            X[i, j] = X[i, j] * k
            ub += X[i, j] * beta[j]
        y[i] = draw_label(params.loss, gen, ub)


# --- empirical and population risks -------------------------------------------


@dual
def empirical_gradient(params, X, y, w, lo, hi, out):
    """``out = (1 / (hi - lo)) sum_{lo <= i < hi} grad l(w; x_i, y_i)``."""
    d = w.shape[0]
    for j in range(d):
        out[j] = 0.0
    for i in range(lo, hi):
        u = 0.0
        for j in range(d):
            u += X[i, j] * w[j]
        psi = sample_dloss(params.loss, u, y[i])
        for j in range(d):
            out[j] += psi * X[i, j]
    count = hi - lo
    for j in range(d):
        out[j] = out[j] / count


@dual
def empirical_loss(params, X, y, w, lo, hi):
    """``(1 / (hi - lo)) sum_{lo <= i < hi} l(w; x_i, y_i)``."""
    d = w.shape[0]
    total = 0.0
    for i in range(lo, hi):
        u = 0.0
        for j in range(d):
            u += X[i, j] * w[j]
        total += sample_loss(params.loss, u, y[i])
    return total / (hi - lo)


@dual
def _plane(params, w):
    """``(a, b)`` with ``w[1:] = a e1 + b f``, ``f`` a unit vector orthogonal to ``e1`` (``b >= 0``)."""
    e1 = params.e1
    a = 0.0
    for j in range(1, w.shape[0]):
        a += w[j] * e1[j]
    bb = 0.0
    for j in range(1, w.shape[0]):
        r = w[j] - a * e1[j]
        bb += r * r
    return a, math.sqrt(bb)


@dual
def population_gradient(params, w, out):
    """``out = grad f(w) = E[grad l(w; x, y)]`` by the quadrature rule of the record."""
    a, b = _plane(params, w)
    r = params.radius
    base = params.x0 * w[0]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for k in range(params.qw.shape[0]):
        uw = base + r * (a * params.u1[k] + b * params.u2[k])
        h = params.qw[k] * conditional_dloss(params.loss, params.ub[k], uw)
        s0 += h
        s1 += h * params.u1[k]
        s2 += h * params.u2[k]
    out[0] = params.x0 * s0
    e1 = params.e1
    for j in range(1, w.shape[0]):
        # f = (w[1:] - a e1) / b; when b = 0, s2 = 0 by symmetry and f is not needed
        fj = (w[j] - a * e1[j]) / b if b > 0.0 else 0.0
        out[j] = r * (s1 * e1[j] + s2 * fj)


@dual
def population_loss(params, w):
    """``f(w) = E[l(w; x, y)]`` by the quadrature rule of the record."""
    a, b = _plane(params, w)
    r = params.radius
    base = params.x0 * w[0]
    total = 0.0
    for k in range(params.qw.shape[0]):
        uw = base + r * (a * params.u1[k] + b * params.u2[k])
        total += params.qw[k] * conditional_loss(params.loss, params.ub[k], uw)
    return total


# --- Python side ----------------------------------------------------------------


def _symmetric_jacobi(k: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Jacobi nodes and weights (summing to 1) for the weight ``(1 - u^2)^alpha``, made exactly symmetric.

    Raises
    ------
    ValueError
        If scipy's rule is not finite (its Newton refinement fails for many
        nodes and a large ``alpha``: 400 nodes at ``alpha = 348``).
    """
    from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

    with np.errstate(all="ignore"):
        nodes, weights = special.roots_jacobi(k, alpha, alpha)
    if not (np.isfinite(nodes).all() and np.isfinite(weights).all() and weights.sum() > 0):
        raise ValueError(f"the Gauss-Jacobi rule of {k} nodes for the weight (1 - u^2)^{alpha:g} is not finite")
    nodes = (nodes - nodes[::-1]) / 2.0
    weights = (weights + weights[::-1]) / 2.0
    return nodes, weights / weights.sum()


def sphere_plane_rule(p: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes ``(u1, u2)`` and weights of ``E h(S'e1, S'f)``, ``S`` uniform on the sphere of ``R^p``.

    Parameters
    ----------
    p : int
        Dimension of the sphere's space, ``>= 2``.
    k : int
        Gauss-Jacobi nodes per axis (``U1`` and ``V``; ``V = +-1`` for ``p = 2``).

    Returns
    -------
    u1, u2, weights : numpy.ndarray
        ``k * k`` (``2 k`` for ``p = 2``) nodes and weights summing to 1.
    """
    if p < 2:
        raise ValueError(f"p must be >= 2, got {p}")
    x1, w1 = _symmetric_jacobi(k, (p - 3) / 2.0)
    if p == 2:
        xv, wv = np.array([-1.0, 1.0]), np.array([0.5, 0.5])
    else:
        xv, wv = _symmetric_jacobi(k, (p - 4) / 2.0)
    u1 = np.repeat(x1, xv.size)
    u2 = np.repeat(np.sqrt(np.maximum(1.0 - x1 * x1, 0.0)), xv.size) * np.tile(xv, x1.size)
    return u1, u2, np.repeat(w1, xv.size) * np.tile(wv, x1.size)


class ErmModel:
    """An empirical-risk model of this module on the sphere design.

    Parameters
    ----------
    name : {'logistic', 'welsch'}
    d : int
        Dimension of ``x`` and ``w`` (intercept included), ``>= 3``.
    radius : float
        ``r``: ``x[1:]`` lies on the sphere of radius ``r``.
    signal : float
        Standard deviation of ``x'beta``.
    noise : float
        Welsch model: standard deviation of the errors.
    scale : float
        Welsch model: ``c`` of the loss.
    nodes : int
        Quadrature nodes per axis of the population integrals.
    """

    x0 = 1.0

    def __init__(self, name: str, d: int, radius: float = 1.0, signal: float = 2.0, noise: float = 0.5,
                 scale: float = 1.0, nodes: int = 32):
        if name not in ERM_MODELS:
            raise ValueError(f"model must be one of {', '.join(ERM_MODELS)}, got {name!r}")
        if d < 3:
            raise ValueError(f"d must be >= 3, got {d}")
        self.name, self.dim, self.radius, self.signal = name, int(d), float(radius), float(signal)
        self.noise, self.scale, self.nodes = float(noise), float(scale), int(nodes)
        self.loss = LogisticLoss() if name == "logistic" else WelschLoss(self.scale, self.noise)
        p = self.dim - 1
        self.beta = np.concatenate([[0.0], np.full(p, self.signal / self.radius)])
        self.e1 = np.concatenate([[0.0], np.full(p, 1.0 / math.sqrt(p))])
        self.u1, self.u2, self.qw = sphere_plane_rule(p, self.nodes)
        beta_norm = self.signal * math.sqrt(p) / self.radius
        self.ub = self.x0 * self.beta[0] + self.radius * beta_norm * self.u1

    def kernel_params(self) -> ErmParams:
        """The record the kernels take."""
        return ErmParams(self.loss, self.x0, self.radius, self.beta, self.e1, self.u1, self.u2, self.qw, self.ub)

    @property
    def psi_max(self) -> float:
        """``sup |dl/du|`` over samples and ``w``: 1 (logistic) or ``c e^(-1/2)`` (welsch)."""
        return 1.0 if self.name == "logistic" else self.scale * math.exp(-0.5)

    @property
    def g1(self) -> float:
        """``G1 = sup ||grad l(w; z)||_1 = psi_max (x0 + r sqrt(p))`` (``||S||_1 <= sqrt(p)``)."""
        return self.psi_max * (self.x0 + self.radius * math.sqrt(self.dim - 1))

    @property
    def coordinate_range(self) -> float:
        """``W``: every coordinate of a per-sample gradient lies in an interval of this width."""
        return 2.0 * self.psi_max * max(self.x0, self.radius)

    @property
    def smoothness(self) -> float:
        """``L``, a Lipschitz constant of ``grad f``: ``sup |l''| lambda_max(E x x')``.

        ``E x x' = diag(x0^2, r^2 / p I)``; ``sup l'' = 1/4`` (logistic) or 1
        (welsch: ``|rho''(t)| = |1 - t^2/c^2| e^(-t^2/(2c^2)) <= 1``).
        """
        second = 0.25 if self.name == "logistic" else 1.0
        return second * max(self.x0 ** 2, self.radius ** 2 / (self.dim - 1))

    def population_loss(self, w) -> float:
        """``f(w)``."""
        return float(population_loss(self.kernel_params(), np.asarray(w, dtype=float)))

    def population_gradient(self, w) -> np.ndarray:
        """``grad f(w)``, shape ``(d,)``."""
        out = np.zeros(self.dim)
        population_gradient(self.kernel_params(), np.asarray(w, dtype=float), out)
        return out

    def f_star(self) -> float:
        """``f* = f(beta)``, the population minimum."""
        return self.population_loss(self.beta)

    def draw(self, gen: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """A sample of ``n`` points drawn in Python (the kernel's draw order)."""
        X, y = np.empty((n, self.dim)), np.empty(n)
        draw_sample(self.kernel_params(), gen, X, y)
        return X, y


__all__ = ["ERM_MODELS", "ErmModel", "ErmParams", "LogisticLoss", "WelschLoss", "conditional_dloss", "conditional_loss",
           "draw_label", "draw_sample",
           "empirical_gradient", "empirical_loss", "population_gradient", "population_loss", "sample_dloss",
           "sample_loss", "sigmoid", "softplus", "sphere_plane_rule"]
