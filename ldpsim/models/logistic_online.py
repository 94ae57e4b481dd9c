"""Logistic regression on 004's Gaussian design, Mallows-weighted or clipped (004, Section 5.3 and Figure 1).

``P(y = 1 | x) = s(x'beta)``, ``s`` the logistic function, ``x = (1, z)``,
``z ~ N(0, I_d)``, ``beta = 1_(d+1)``; ``theta`` has ``p = d + 1`` coordinates.
004's weighted cross-entropy ``f = (log(1 + e^(x'theta)) - y x'theta) w(x)`` has
gradient ``(s(x'theta) - y) w(x) x``, of norm at most ``||x|| w(x) <= sqrt(2)``
(``|s - y| < 1``), so two users' gradients differ by at most
``D = 2 sqrt(2)``. The weights depend on ``x`` alone and the model is well
specified, so the population root is ``beta`` -- computed here, not assumed.

``logistic_clip`` clips the unweighted gradient ``(s(x'theta) - y) x`` to the
l2 ball of radius ``clip`` instead (``D = 2 clip``). Its mean is no longer 0
at ``beta``: given ``x``, ``E[clip(g) | x] = s_b (1 - s_b) x [m(s_b) - m(1 - s_b)]``
at ``theta = beta``, ``m(a) = min(1, clip / (a ||x||))``, nonzero wherever the
clip binds and ``s_b != 1/2``; the recursion converges to the root of the mean
clipped gradient, :meth:`LogisticClipModel.limit` (004, Figure 1: clipping
biases the estimator, Mallows weights do not).

The excess risk is ``E[w(x) KL(s(x'beta) || s(x'theta))]`` (unweighted for the
clip model): the expectation over ``y`` in closed form, over ``x`` by
quadrature in the plane of ``beta_z`` and ``theta_z``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ..engine.dialect.lanes import all_lanes, lane_array, where
from ..engine.dialect.rng import uniform
from ..privacy.mechanisms import add_released
from .base import observe, register_vector
from .covariates import predictors
from .design import MALLOWS_NORM_SUP, chi2_expect, draw_design, gauss_legendre, orthonormal_pair, squared_norm
from .online import Clipped, OnlineModel, solve_root


class LogisticOnlineParams(NamedTuple):
    """Constants of the bounded logistic gradient; ``clip = 0`` means Mallows weights."""

    clip: float
    coef: np.ndarray
    x: np.ndarray  # scratch: (1, z)
    noise: tuple


@observe.register(LogisticOnlineParams)
def draw_logistic_online(params, gen):
    """One observation: ``x = (1, z)`` into ``params.x``; returns the uniform ``u`` that draws ``y``."""
    draw_design(gen, params.x)
    return uniform(gen)


@register_vector(LogisticOnlineParams)
def logistic_online_gradient(params, obs, theta, gen, out):
    """Add ``(s(x'theta) - y) x`` of the observation (``u = obs``) weighted (or clipped) plus the noise to ``out``.

    Draws: ``d`` normals (``z``) and one uniform (``obs``) were drawn by
    :func:`draw_logistic_online`; then the mechanism's. A release
    (``logistic_clip`` with a release of :data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS`)
    replaces the clipped gradient by its release instead of adding noise.
    """
    x = params.x
    sq = squared_norm(x)
    fit, mean = predictors(x, theta, params.coef)
    y = where(obs * (1.0 + math.exp(-mean)) < 1.0, 1.0, 0.0)  # u < s(mean), without a division
    r = 1.0 / (1.0 + math.exp(-fit)) - y
    if params.clip > 0.0:
        norm = abs(r) * math.sqrt(sq)
        inside = norm <= params.clip
        w = 1.0
        if not all_lanes(inside):  # (divides only where some lane is outside)
            w = where(inside, 1.0, params.clip / norm)
    else:
        w = where(sq <= 2.0, 1.0, 2.0 / sq)
    add_released(params.noise, gen, r * w, x, out)


def _bregman_softplus(eta, eta_star):
    """``KL(s(eta*) || s(eta)) = sp(eta) - sp(eta*) - s(eta*) (eta - eta*)``, ``sp(t) = log(1 + e^t)``."""
    from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

    return np.logaddexp(0.0, eta) - np.logaddexp(0.0, eta_star) - special.expit(eta_star) * (eta - eta_star)


class LogisticMallowsModel(OnlineModel):
    """Mallows-weighted logistic regression (004, Section 5.3): ``theta = (b_0..b_d)``.

    Parameters: see :class:`~ldpsim.models.online.OnlineModel`.
    """

    name = "logistic_mallows"

    extra_parameters = 1  # the intercept

    def sensitivity(self) -> float:
        """``2 sup ||x|| w(x) = 2 sqrt(2)``."""
        return 2.0 * MALLOWS_NORM_SUP

    def kernel_params(self, lanes: int = 1):
        return LogisticOnlineParams(float(self.clip or 0.0), self.coef, lane_array(self.d + 1, lanes),
                                    self.noise_record(lanes))

    # --- population quantities ----------------------------------------------------

    def _plane(self, theta):
        """``x'beta = 1 + |beta_z| t1`` and ``x'theta = theta_0 + c1 t1 + c2 t2`` with ``t_k = z'u_k``."""
        theta = np.asarray(theta, dtype=float)
        u1, u2, c1, c2 = orthonormal_pair(self.coef[1:], theta[1:]) if self.d > 1 else (
            np.ones(1), None, float(theta[1]), 0.0)
        return u1, u2, c1, c2, float(np.linalg.norm(self.coef[1:]))

    def _expect(self, func, power: int = 1):
        """``E[w^power func(t1, t2)]`` (``t2 = 0`` when ``d = 1``)."""
        if self.d == 1:
            return self.design.expect_line(lambda t: func(t, 0.0 * t), power)
        return self.design.expect_plane(func, power)

    def mean_gradient(self, theta) -> np.ndarray:
        """``E[w (s(x'theta) - s(x'beta)) x]``: the expectation over ``y`` given ``x`` taken exactly."""
        from scipy import special

        u1, u2, c1, c2, b = self._plane(theta)
        th0 = float(np.asarray(theta)[0])

        def diff(t1, t2):
            return special.expit(th0 + c1 * t1 + c2 * t2) - special.expit(1.0 + b * t1)

        g0 = self._expect(diff)
        gz = self._expect(lambda t1, t2: diff(t1, t2) * t1) * u1
        if u2 is not None:
            gz = gz + self._expect(lambda t1, t2: diff(t1, t2) * t2) * u2
        return np.r_[g0, gz]

    def excess_risk(self, thetas) -> np.ndarray:
        """``F(theta) - F(theta*)`` per row: ``E[w(x) KL(s(x'beta) || s(x'theta))]`` (theta* = the computed root)."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        star = self.theta_star()
        if not np.allclose(star, self.coef, rtol=0, atol=1e-9):  # the integrand below is the KL from s(x'beta)
            raise RuntimeError(f"{self.name}: theta* = {star} is not beta; the excess-risk formula needs it")
        b = float(np.linalg.norm(self.coef[1:]))
        if self.d == 1:
            t1, p = self.design.line[:2]
            t2, weights = np.zeros_like(t1), p * self.design.line_weights[2]
            c1, c2 = thetas[:, 1], np.zeros(thetas.shape[0])
        else:
            t1, t2, p, w1 = self.design.plane[:4]
            weights = p * w1
            u1 = self.coef[1:] / b
            c1 = thetas[:, 1:] @ u1
            c2 = np.linalg.norm(thetas[:, 1:] - c1[:, None] * u1, axis=1)
        eta_star = 1.0 + b * t1
        out = np.empty(thetas.shape[0])
        for lo in range(0, thetas.shape[0], 256):
            sl = slice(lo, lo + 256)
            eta = thetas[sl, :1] + c1[sl, None] * t1 + c2[sl, None] * t2
            out[sl] = _bregman_softplus(eta, eta_star) @ weights
        return out

    def _outer(self, func, power: int, theta) -> np.ndarray:
        """``E[w^power func(t1) x x']`` for ``func`` of ``t1 = z'u1``, ``u1`` the direction of ``theta_z``."""
        theta = np.asarray(theta, dtype=float)
        u1 = theta[1:] / np.linalg.norm(theta[1:])
        t, p, w1, w2, wv1, wv2 = self.design.line_weights
        w, wv = (w1, wv1) if power == 1 else (w2, wv2)
        f = func(t)
        out = np.zeros((self.p, self.p))
        out[0, 0] = f @ (p * w)
        out[0, 1:] = out[1:, 0] = (f * t) @ (p * w) * u1
        rest = (f @ (p * wv)) / (self.d - 1) if self.d > 1 else 0.0
        out[1:, 1:] = (f * t * t) @ (p * w) * np.outer(u1, u1) + rest * (np.eye(self.d) - np.outer(u1, u1))
        return out

    def hessian(self) -> np.ndarray:
        """``G = E[w s(x'theta*) (1 - s(x'theta*)) x x']`` by quadrature (``theta*`` = ``beta``, checked)."""
        from scipy import special

        star = self.theta_star()
        norm = float(np.linalg.norm(star[1:]))
        return self._outer(lambda t: special.expit(star[0] + norm * t) * special.expit(-star[0] - norm * t), 1, star)

    def gradient_covariance(self) -> np.ndarray:
        """``S = E[w^2 s (1 - s) x x'] + S_LDP`` at ``theta* = beta`` (``E[(s - y)^2 | x] = s (1 - s)`` there)."""
        from scipy import special

        star = self.theta_star()
        if not np.allclose(star, self.coef, rtol=0, atol=1e-9):
            raise RuntimeError(f"{self.name}: S is written for theta* = beta, got {star}")
        norm = float(np.linalg.norm(star[1:]))
        sgd = self._outer(lambda t: special.expit(star[0] + norm * t) * special.expit(-star[0] - norm * t), 2, star)
        return sgd + self.noise_covariance()


class LogisticClipModel(Clipped, LogisticMallowsModel):
    """Logistic regression with the unweighted gradient clipped to l2 norm ``clip`` (004, Figure 1)."""

    name = "logistic_clip"
    coverage_note = "has no oracle covariance (G and S of the clipped recursion are not computed)"

    def _symmetric_clipped_gradient(self, a0: float, a1: float) -> np.ndarray:
        """Mean clipped gradient at ``theta = (a0, a1 u1)``, ``u1 = beta_z / |beta_z|``: ``(g_0, g_z . u1)``.

        ``E_y[clip(g) | x] = s_b (s - 1) x m(1 - s) + (1 - s_b) s x m(s)``,
        ``m(a) = min(1, clip / (a ||x||))``, ``s = s(x'theta)``, ``s_b = s(x'beta)``; the
        part of ``z`` orthogonal to ``u1`` enters only through ``||x||`` and
        averages out of ``x``, so ``E[. | t]`` needs ``E_V[m]``, ``V ~ chi^2_(d-1)``,
        split where the clip binds. The outer integral over ``t = z'u1`` is
        split where that kink reaches ``V = 0`` (``(clip / a(t))^2 = 1 + t^2``),
        so every piece has a smooth integrand.
        """
        with np.errstate(over="ignore"):  # (clip / a)^2 of a vanishing a is inf: beyond every kink, as meant
            return self._clipped_gradient_terms(a0, a1)

    def _clipped_gradient_terms(self, a0: float, a1: float) -> np.ndarray:
        from scipy import optimize, special

        b = float(np.linalg.norm(self.coef[1:]))
        clip, nodes = self.clip, self.design.nodes
        total = np.zeros(2)
        for case in (0, 1):
            def a_of(t, case=case):
                s = special.expit(a0 + a1 * t)
                return 1.0 - s if case == 0 else s

            def edge(t):
                return (clip / np.maximum(a_of(t), 1e-300)) ** 2 - 1.0 - t * t

            grid = np.linspace(-12.0, 12.0, 4801)
            vals = edge(grid)
            cuts = [-12.0] + [optimize.brentq(edge, grid[i], grid[i + 1], xtol=1e-15)
                              for i in np.flatnonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) < 0)] + [12.0]
            for lo, hi in zip(cuts[:-1], cuts[1:]):
                t, wt = gauss_legendre(lo, hi, nodes)
                wt = wt * np.exp(-t * t / 2.0) / math.sqrt(2.0 * math.pi)
                k = clip / np.maximum(a_of(t), 1e-300)

                def m(sq_z, _, k=k):
                    return np.minimum(1.0, k[:, None] / np.sqrt(1.0 + sq_z))

                factor = chi2_expect(m, t * t, self.d - 1, kinks=(k * k - 1.0,), nodes=nodes)
                s_b = special.expit(1.0 + b * t)
                s = special.expit(a0 + a1 * t)
                h = (s_b * (s - 1.0) if case == 0 else (1.0 - s_b) * s) * factor
                total += np.array([h @ wt, (h * t) @ wt])
        return total

    @functools.cached_property
    def _limit(self) -> np.ndarray:
        if math.isinf(self.clip):
            return self.theta_star()
        # beta and the law of z are invariant under permutations of z's coordinates, so is the limit
        b = float(np.linalg.norm(self.coef[1:]))
        # from the origin, else from beta, the unclipped root, and points beyond it: where the clip binds for
        # almost every x (dim = 20 at clip = 1, dim = 5 at clip = 0.1) the mean clipped gradient is small and flat,
        # Powell's method stalls on the way from the origin, and the root lies further out (a1 = 3.5 |beta_z| at
        # dim = 1000, clip = 1)
        starts = [(1.0, b), (1.0, 2 * b), (2.0, 4 * b), (2.0, 8 * b), (4.0, 16 * b)]
        with np.errstate(all="ignore"):  # the searches pass through far points, where the quadrature overflows
            root = solve_root(lambda a: self._symmetric_clipped_gradient(*a), np.array([0.0, 0.0]),
                              f"limit of {self.name}", fallback=[np.array(x) for x in starts])
        return np.r_[root[0], root[1] / b * self.coef[1:]]

    def mean_bounded_gradient(self, theta) -> np.ndarray:
        """The mean clipped gradient at a ``theta`` with ``theta_z`` along ``beta_z`` (all the limit needs)."""
        theta = np.asarray(theta, dtype=float)
        u1 = self.coef[1:] / np.linalg.norm(self.coef[1:])
        a1 = float(theta[1:] @ u1)
        g0, g1 = self._symmetric_clipped_gradient(float(theta[0]), a1)
        return np.r_[g0, g1 * u1]

    def limit(self) -> np.ndarray:
        """Where the clipped recursion converges (the root of the mean clipped gradient), computed."""
        return self._limit.copy()


__all__ = ["LogisticClipModel", "LogisticMallowsModel", "LogisticOnlineParams", "logistic_online_gradient"]
