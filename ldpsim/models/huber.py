"""Huber regression with a joint scale, Mallows-weighted or clipped (004, Sections 5.1-5.2).

Data: ``y = x'beta + sigma e``, ``x = (1, z)``, ``z ~ N(0, I_d)``, ``e ~ N(0, 1)``,
``beta = 1_(d+1)``, ``sigma = 2``. Parameter ``theta = (b, s)``, ``p = d + 2``.
004's loss (Huber's Proposal 2 with Mallows weights) is

    f(b, s; x, y) = (s rho_c((y - x'b) / s) + kappa_c s / 2) w(x),

``rho_c`` the Huber function with ``c = 1.345``, ``w(x) = min(1, 2 / ||x||^2)``.
With ``u = (y - x'b) / s`` and ``psi_c(u) = max(-c, min(c, u))``, and since
``rho_c(u) - u psi_c(u) = -min(u^2, c^2) / 2 = -psi_c(u)^2 / 2``,

    grad_b f = -psi_c(u) w(x) x,      grad_s f = (kappa_c - psi_c(u)^2) w(x) / 2.

``kappa_c = E min(Z^2, c^2)`` (Z standard normal; 0.7101 at c = 1.345) makes
the scale consistent: the population root is ``(beta, sigma)`` for Gaussian
errors and weights that depend on ``x`` alone. ``theta*`` is nevertheless
computed as the root of the population gradient (:mod:`.online`).

**Sensitivity.** ``||x|| w(x) <= sqrt(2)`` (at ``||x||^2 = 2``) and
``|psi_c| <= c`` bound the ``b`` part by ``sqrt(2) c``, so two users' ``b`` parts
differ by at most ``2 sqrt(2) c``; the ``s`` part lies in
``[(kappa_c - c^2) / 2, kappa_c / 2]``, a range of ``c^2 / 2``. Hence
``D = sqrt(8 c^2 + c^4 / 4)`` (004, Section 5.1), 3.910 at c = 1.345, which
calibrates the noise here. It is an upper bound: the two parts cannot be
extreme together (the largest ``b`` difference needs ``|u| >= c`` for both
users, where their ``s`` parts agree), and the exact supremum is the ``b``
part's alone, ``2 sqrt(2) c = 3.804`` (brute force in the tests;
docs/corrections.md, item 24).

The ``huber_clip`` model clips the unweighted gradient to the l2 ball of
radius ``clip`` instead (``D = 2 clip``); its recursion converges to
``(beta, sigma_clip)``: the ``b`` part of the clipped gradient stays odd in the
error, but clipping shrinks the scale equation's large residuals.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ..engine.dialect.lanes import all_lanes, any_lane, lane_array, where
from ..engine.dialect.rng import normal
from ..privacy.mechanisms import add_released_joint
from .base import constrain, observe, register_vector
from .covariates import predictors
from .design import MALLOWS_NORM_SUP, chi2_expect, draw_design, gauss_legendre, squared_norm
from .online import Clipped, OnlineModel, numerical_jacobian

#: Huber's tuning constant (004, Section 5.1).
HUBER_C = 1.345
#: Standard deviation of the errors (004, Section 5.1).
ERROR_SD = 2.0
#: The scale iterate is kept at or above this (the loss needs s > 0; see :func:`keep_scale_positive`).
SCALE_FLOOR = 0.01


def huber_kappa(c: float) -> float:
    """``kappa_c = E min(Z^2, c^2) = (2 Phi(c) - 1) - 2 c phi(c) + 2 c^2 (1 - Phi(c))``."""
    from scipy import special, stats  # lazy: import ldpsim <= 1 s (issue 41)

    inside = 2.0 * special.ndtr(c) - 1.0
    return float(inside - 2.0 * c * stats.norm.pdf(c) + 2.0 * c * c * special.ndtr(-c))


def huber_sensitivity(c: float, kappa: float) -> float:
    """004's l2 sensitivity of the Mallows-weighted joint gradient, from its two parts (module docstring)."""
    beta_part = 2.0 * c * MALLOWS_NORM_SUP
    scale_range = max(kappa / 2.0, 0.0) - min((kappa - c * c) / 2.0, 0.0)
    return math.sqrt(beta_part**2 + scale_range**2)


def huber_gradient_parts(u, sq, c: float, kappa: float, clip: float | None):
    """``(coefficient of x, s part)`` of one user's bounded gradient: ``g_b = coef x``, ``g_s``.

    Plain-numpy form of the kernel's arithmetic (for tests and the sensitivity).
    """
    psi = np.clip(u, -c, c)
    gs = 0.5 * (kappa - psi * psi)
    if clip is None:
        w = np.minimum(1.0, 2.0 / sq)
    else:
        norm = np.sqrt(psi * psi * sq + gs * gs)
        w = np.minimum(1.0, clip / norm)
    return -psi * w, gs * w


def normal_huber_moments(mu, tau, c: float):
    """For ``U ~ N(mu, tau^2)``: ``E rho_c(U)``, ``E psi_c(U)``, ``E min(U^2, c^2)`` (closed forms, broadcast)."""
    from scipy import special

    a1 = (-c - mu) / tau
    a2 = (c - mu) / tau
    low = special.ndtr(a1)  # P(U < -c)
    up = special.ndtr(-a2)  # P(U > c)
    inside = special.ndtr(a2) - low
    f1 = np.exp(-a1 * a1 / 2.0) / math.sqrt(2.0 * math.pi)
    f2 = np.exp(-a2 * a2 / 2.0) / math.sqrt(2.0 * math.pi)
    ey = f1 - f2  # E[Y; a1 < Y < a2], U = mu + tau Y
    ey2 = inside + a1 * f1 - a2 * f2
    eu2_in = mu * mu * inside + 2.0 * mu * tau * ey + tau * tau * ey2
    eu_up = mu * up + tau * f2  # E[U; U > c]
    eu_low = -mu * low + tau * f1  # E[-U; U < -c]
    rho = 0.5 * eu2_in + c * (eu_up + eu_low) - 0.5 * c * c * (low + up)
    psi = mu * inside + tau * ey + c * (up - low)
    minsq = eu2_in + c * c * (low + up)
    return rho, psi, minsq


class HuberParams(NamedTuple):
    """Constants of the bounded Huber gradient; ``clip = 0`` means Mallows weights."""

    c: float
    kappa: float
    error_sd: float
    clip: float
    floor: float
    coef: np.ndarray
    x: np.ndarray  # scratch: (1, z)
    noise: tuple


@observe.register(HuberParams)
def draw_huber(params, gen):
    """One observation: ``x = (1, z)`` into ``params.x``; returns the error's normal draw."""
    draw_design(gen, params.x)
    return normal(gen)


@register_vector(HuberParams)
def huber_gradient(params, obs, theta, gen, out):
    """Add the weighted (or clipped) joint Huber gradient of the observation plus the noise to ``out``.

    Draws: ``d`` normals (``z``) and one normal (the error, ``obs``) were
    drawn by :func:`draw_huber`; then the mechanism's. A release
    (``huber_clip`` with a release of :data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS`) replaces
    the clipped gradient by its release instead of adding noise.
    """
    x = params.x
    sq = squared_norm(x)
    fit, mean = predictors(x, theta, params.coef)
    p1 = x.shape[0]  # the scale is the last coordinate
    u = (mean + params.error_sd * obs - fit) / theta[p1]
    psi = min(max(u, -params.c), params.c)
    gs = 0.5 * (params.kappa - psi * psi)
    if params.clip > 0.0:
        norm2 = psi * psi * sq + gs * gs
        inside = norm2 <= params.clip * params.clip
        w = 1.0
        if not all_lanes(inside):  # (divides only where some lane is outside)
            w = where(inside, 1.0, params.clip / math.sqrt(norm2))
    else:
        w = where(sq <= 2.0, 1.0, 2.0 / sq)
    add_released_joint(params.noise, gen, -psi * w, x, gs * w, out)


@constrain.register(HuberParams)
def keep_scale_positive(params, theta):
    """Project the scale onto ``[SCALE_FLOOR, inf)``.

    004's loss ``s rho_c(r / s)`` lives on ``s > 0``, but (3.2) does not keep
    the scale there: with the noise of mu = 1 GDP (sd 3.9 per coordinate) a
    path started at ``s = 0`` spends a fifth of its first thousand steps at
    ``s < 0``, where the ``b`` gradient points away from the fit. The
    projection (onto a closed convex set that contains ``theta*``) is
    post-processing, so the privacy guarantee is unchanged.
    """
    p1 = theta.shape[0] - 1
    scale = theta[p1]
    if any_lane(scale < params.floor):
        theta[p1] = where(scale < params.floor, params.floor, scale)


class HuberModel(OnlineModel):
    """Mallows-weighted Huber regression with joint scale (004, Section 5.1): ``theta = (b_0..b_d, s)``.

    Parameters: see :class:`~ldpsim.models.online.OnlineModel`.
    """

    name = "huber_mallows"
    c = HUBER_C
    error_sd = ERROR_SD

    extra_parameters = 2  # the intercept and the scale s

    @functools.cached_property
    def kappa(self) -> float:
        """``kappa_c = E min(Z^2, c^2)``, computed."""
        return huber_kappa(self.c)

    def sensitivity(self) -> float:
        return huber_sensitivity(self.c, self.kappa)

    def start(self) -> np.ndarray:
        return np.r_[np.zeros(self.d + 1), 1.0]

    def kernel_params(self, lanes: int = 1):
        return HuberParams(self.c, self.kappa, self.error_sd, float(self.clip or 0.0), SCALE_FLOOR, self.coef,
                           lane_array(self.d + 1, lanes), self.noise_record(lanes))

    # --- population quantities ----------------------------------------------------

    def _line(self, theta):
        """``(a0, |a_z|, unit a_z, s)``: the fit's offset ``x'(beta - b) = a0 + |a_z| t``, ``t = z'u``."""
        theta = np.asarray(theta, dtype=float)
        a = self.coef - theta[:-1]
        norm = float(np.linalg.norm(a[1:]))
        unit = a[1:] / norm if norm > 0 else np.zeros(self.d)
        return a[0], norm, unit, float(theta[-1])

    def mean_gradient(self, theta) -> np.ndarray:
        """``E grad f`` (weighted for Mallows, unweighted for the clip model's loss), by quadrature in ``t``."""
        a0, norm, unit, s = self._line(theta)
        if not s > 0:
            return np.full(self.p, np.nan)
        t = self.design.line[0]
        _, psi, minsq = normal_huber_moments((a0 + norm * t) / s, self.error_sd / s, self.c)
        g0 = -self.design.expect_line(lambda _: psi)
        gz = -self.design.expect_line(lambda tt: tt * psi) * unit
        gs = 0.5 * self.design.expect_line(lambda _: self.kappa - minsq)
        return np.r_[g0, gz, gs]

    def excess_risk(self, thetas) -> np.ndarray:
        """``F(theta) - F(theta*)`` per row: ``E[w(x) (r(x'(beta - b), s) - r(0, sigma))]``, ``r`` in closed form.

        ``r(m, s) = s E rho_c((m + sigma e) / s) + kappa_c s / 2`` is the
        risk given ``x``, minimal at ``(0, sigma)`` for every ``x``, so the
        integrand is nonnegative; ``inf`` where ``s <= 0`` (outside the
        loss's domain).
        """
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        star = self.theta_star()
        t, p, w1 = self.design.line_weights[:3]
        weights = p * w1
        rho0, _, _ = normal_huber_moments(0.0, self.error_sd / star[-1], self.c)
        base = star[-1] * rho0 + 0.5 * self.kappa * star[-1]
        a = self.coef - thetas[:, :-1]
        a0, norm, s = a[:, 0], np.linalg.norm(a[:, 1:], axis=1), thetas[:, -1]
        out = np.full(thetas.shape[0], math.inf)
        ok = s > 0
        a0, norm, s = a0[ok], norm[ok], s[ok]
        values = np.empty(s.shape[0])
        for lo in range(0, s.shape[0], 1024):
            sl = slice(lo, lo + 1024)
            ss = s[sl, None]
            rho, _, _ = normal_huber_moments((a0[sl, None] + norm[sl, None] * t) / ss, self.error_sd / ss, self.c)
            values[sl] = (ss * rho + 0.5 * self.kappa * ss - base) @ weights
        out[ok] = values
        return out

    def hessian(self) -> np.ndarray:
        """``G`` at ``(beta, sigma)``: ``diag(P(|e| <= c) E[w x x'] / sigma, E[e^2; |e| <= c] E[w] / sigma)``.

        Block diagonal: the cross term ``E[e 1{|e| <= c}]`` vanishes. Tests
        check it against the numerical Jacobian of :meth:`mean_gradient` at
        the computed ``theta*``.
        """
        from scipy import special, stats

        c, sd = self.c, self.error_sd
        inside = 2.0 * special.ndtr(c) - 1.0
        second_in = inside - 2.0 * c * stats.norm.pdf(c)
        g = np.zeros((self.p, self.p))
        g[:-1, :-1] = inside * self.design.second_moment(1) / sd
        g[-1, -1] = second_in * self.design.radial[0] / sd
        return g

    def gradient_covariance(self) -> np.ndarray:
        """``S`` at ``(beta, sigma)``: ``kappa E[w^2 x x']``, ``E[(kappa - psi^2)^2] E[w^2] / 4``, plus ``S_LDP``."""
        from scipy import special, stats

        c, k = self.c, self.kappa
        inside = 2.0 * special.ndtr(c) - 1.0
        fourth = 3.0 * inside - 2.0 * stats.norm.pdf(c) * (c**3 + 3.0 * c) + c**4 * (1.0 - inside)
        s = np.zeros((self.p, self.p))
        s[:-1, :-1] = k * self.design.second_moment(2)
        s[-1, -1] = (fourth - k * k) / 4.0 * self.design.radial[2]
        return s + self.noise_covariance()


class HuberClipModel(Clipped, HuberModel):
    """Huber regression with joint scale, the unweighted gradient clipped to l2 norm ``clip`` (004, Figure 1's alternative)."""

    name = "huber_clip"
    coverage_note = "has no oracle covariance (G and S of the clipped recursion are not computed)"

    def mean_bounded_gradient(self, theta) -> np.ndarray:
        raise NotImplementedError("huber_clip: the mean clipped gradient is computed at b = beta only (limit)")

    @functools.cached_property
    def _limit(self) -> np.ndarray:
        """``(beta, sigma_clip)``: the ``b`` part of the mean clipped gradient at ``b = beta`` is 0 by symmetry."""
        from scipy import optimize, special

        c, k, clip, sd = self.c, self.kappa, self.clip, self.error_sd
        if math.isinf(clip):
            return self.theta_star()

        def scale_equation(s):
            # E[(kappa - psi^2) / 2 * min(1, clip / ||g||)], psi = psi_c(sd e / s), ||z||^2 ~ chi^2_d
            edge = c * s / sd
            e, we = gauss_legendre(-edge, edge, 96)
            we = we * np.exp(-e * e / 2.0) / math.sqrt(2.0 * math.pi)
            psi2 = np.r_[(sd * e / s) ** 2, c * c]
            weights = np.r_[we, 2.0 * special.ndtr(-edge)]
            gs = 0.5 * (k - psi2)
            kink = (clip * clip - gs * gs) / np.maximum(psi2, 1e-300) - 1.0  # ||z||^2 where ||g|| = clip

            def factor(sq_z, _):
                norm = np.sqrt(psi2[:, None] * (1.0 + sq_z) + gs[:, None] ** 2)
                return np.minimum(1.0, clip / norm)

            m = chi2_expect(factor, np.zeros_like(psi2), self.d, kinks=(kink,), nodes=self.design.nodes)
            return float(np.sum(weights * gs * m))

        lo, hi = self.error_sd / 8.0, self.error_sd * 8.0
        sigma = optimize.brentq(scale_equation, lo, hi, xtol=1e-14, rtol=1e-14)
        return np.r_[self.coef, sigma]

    def limit(self) -> np.ndarray:
        """Where the clipped recursion converges: ``(beta, sigma_clip)``, ``sigma_clip`` computed."""
        return self._limit.copy()


__all__ = ["ERROR_SD", "HUBER_C", "SCALE_FLOOR", "keep_scale_positive", "HuberClipModel", "HuberModel", "HuberParams", "huber_gradient",
           "huber_gradient_parts", "huber_kappa", "huber_sensitivity", "normal_huber_moments", "numerical_jacobian"]
