"""The Gaussian mechanism: i.i.d. ``N(0, sigma^2)`` noise on every coordinate, (epsilon, delta)-LDP.

``gaussian``: ``sigma`` analytically calibrated, the smallest that gives
(epsilon, delta) exactly (Balle & Wang 2018, Theorem 8; :class:`Gaussian`),
to the l2 sensitivity of a gradient in a box (:func:`.additive.sensitivity`)
or to Shi et al.'s ``D`` (:class:`L2Gaussian`); ``gaussian_classical``:
``sigma = D sqrt(2 ln(1.25 / delta)) / epsilon`` (Dwork & Roth, Theorem A.1;
:class:`ClassicalGaussian`), whose users may draw their budgets, as GDP's
(:mod:`.gdp_noise`) may (:class:`ldpsim.privacy.online.PerUserBudget`).
:func:`gaussian_or_zero` is DP-SGD's step noise. The audit draws through
:func:`~.kernel.add_noise` on these records and through :func:`gaussian_or_zero`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from ...engine.dialect.jit import jit
from ...engine.dialect.rng import normal, uniform
from .additive import Calibrated, Guaranteed, _check_epsilon, _check_sensitivity, sensitivity
from .kernel import _fmt, add_noise, register_additive_vector, register_noise
from .registry import OnlineCalibration, register

_SQRT2 = math.sqrt(2.0)


def _log_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """``log`` of :func:`gaussian_delta` for finite ``epsilon`` and ``0 < sigma < inf``.

    With ``u = D / (2 sigma)``, ``v = eps sigma / D`` the delta of Balle & Wang
    is ``Phi(-x1) - e^eps Phi(-x2)``, ``x1 = v - u``, ``x2 = v + u``. Naively, at
    eps = 50 the second term is 5e21 times 1e-28, and for small delta both
    terms are far below 1 and cancel. Writing ``Phi(-x) = erfcx(x / sqrt 2)
    e^(-x^2/2) / 2`` and using ``(x2^2 - x1^2) / 2 = 2uv = eps`` exactly,

        delta = Phi(-x1) (1 - erfcx(x2 / sqrt 2) / erfcx(x1 / sqrt 2)),

    with no exponential left to overflow and no large logarithms to cancel
    (checked against 60-digit mpmath for delta from 0.4 down to 1e-100:
    relative error below 1e-12 for eps in [0.1, 200], 2e-10 at eps = 1e-3,
    where the difference of two ``log_ndtr`` loses 5e-9 and 2e-7). For
    ``x1 < 0`` (delta > 1/2) ``erfcx`` would overflow, and the difference of
    ``log_ndtr`` terms, both small, is accurate instead.
    """
    from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

    u = sensitivity / (2.0 * sigma)
    v = epsilon * sigma / sensitivity
    x1, x2 = v - u, v + u
    if x1 >= 0.0:
        log_ratio = math.log(special.erfcx(x2 / _SQRT2) / special.erfcx(x1 / _SQRT2))
    else:
        log_ratio = epsilon + special.log_ndtr(-x2) - special.log_ndtr(-x1)
    if not log_ratio < 0.0:  # delta rounds to 0 (only for absurdly large sigma)
        return -math.inf
    return float(special.log_ndtr(-x1) + math.log(-math.expm1(log_ratio)))


def gaussian_delta(sigma, epsilon, sensitivity) -> float:
    """The smallest delta for which ``N(0, sigma^2)`` noise is (epsilon, delta)-DP.

    Balle & Wang (2018, ICML), Theorem 8: with ``D`` the l2 sensitivity,

        delta = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D).

    Parameters
    ----------
    sigma : float
        Noise standard deviation, ``>= 0``.
    epsilon : float
        ``> 0``; ``math.inf`` gives 0.
    sensitivity : float
        l2 sensitivity, finite and ``> 0``.

    Returns
    -------
    float
        delta in [0, 1]: 1 for sigma = 0, 0 for sigma = inf or epsilon = inf.
    """
    sigma, epsilon, sensitivity = float(sigma), float(epsilon), float(sensitivity)
    _check_epsilon(epsilon)
    _check_sensitivity(sensitivity)
    if not sigma >= 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    if math.isinf(epsilon) or math.isinf(sigma):
        return 0.0
    if sigma == 0.0:
        return 1.0  # the gradient itself is released
    return math.exp(_log_delta(sigma, epsilon, sensitivity))


def classical_gaussian_sigma(epsilon, delta, sensitivity) -> float:
    """The classical calibration ``D sqrt(2 ln(1.25 / delta)) / epsilon``.

    Dwork & Roth (2014), Theorem A.1, which proves it only for epsilon < 1;
    kept for comparison with :attr:`Gaussian.sigma`, which is smaller.

    Parameters
    ----------
    epsilon : float
        ``> 0``; ``math.inf`` gives 0.
    delta : float
        In (0, 1).
    sensitivity : float
        l2 sensitivity ``D``, finite and ``> 0``.

    Returns
    -------
    float
        The noise standard deviation.
    """
    _check_epsilon(epsilon)
    _check_sensitivity(sensitivity)
    if delta is None or not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if math.isinf(epsilon):
        return 0.0
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


@dataclass(frozen=True)
class Gaussian(Calibrated):
    """The Gaussian mechanism, (epsilon, delta)-LDP, analytically calibrated.

    Adds i.i.d. ``N(0, sigma^2)`` noise to every coordinate of a gradient
    whose l2 sensitivity is ``sensitivity`` (:func:`sensitivity` with
    ``norm="l2"``). ``sigma`` is the smallest that gives (epsilon, delta)
    exactly (Balle & Wang 2018, Theorem 8), valid for every epsilon > 0,
    unlike the classical ``sqrt(2 ln(1.25/delta))`` calibration
    (:func:`classical_gaussian_sigma`), which also adds more noise.

    Parameters
    ----------
    epsilon : float
        Privacy budget, ``> 0``; ``math.inf`` for no privacy (no noise).
    delta : float
        In (0, 1).
    sensitivity : float
        l2 sensitivity of the gradient, finite and ``> 0``.
    """

    epsilon: float
    delta: float
    sensitivity: float

    name: ClassVar[str] = "gaussian"
    switched_off: ClassVar[str] = "Gaussian noise"

    def __post_init__(self):
        super().__post_init__()
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")

    @classmethod
    def from_bounds(cls, epsilon: float, bounds, delta: float | None = None) -> "Gaussian":
        """Calibrated to the l2 sensitivity of a gradient in the box ``|g_j| <= bounds[j]``."""
        return cls(epsilon, delta, sensitivity(bounds, "l2"))

    def noise_record(self, lanes: int = 1) -> "GaussianNoise":
        """The kernel record: i.i.d. ``N(0, sigma^2)`` per coordinate."""
        return GaussianNoise(float(self.sigma))

    @functools.cached_property  # a root search: once per mechanism, not per access
    def sigma(self) -> float:
        """Smallest sigma with ``gaussian_delta(sigma, epsilon, sensitivity) <= delta``.

        0.0 for epsilon = inf. Solved by Brent's method in ``log sigma`` on
        ``log delta`` (delta decreases in sigma, from 1 at 0 to 0 at inf).
        """
        from scipy import optimize

        eps, delta, sens = float(self.epsilon), float(self.delta), float(self.sensitivity)
        if math.isinf(eps):
            return 0.0
        log_target = math.log(delta)

        def excess(log_sigma):
            return _log_delta(math.exp(log_sigma), eps, sens) - log_target

        # bracket the root around sigma = D / eps by doubling outwards
        lo = hi = math.log(sens / eps)
        while excess(lo) <= 0:
            lo -= math.log(2.0)
        while excess(hi) > 0:
            hi += math.log(2.0)
        root = optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
        sigma = math.exp(root)
        # the root is known to a few ulps: step to the safe side, so that
        # gaussian_delta (this same exp(log delta)) never exceeds delta
        for _ in range(64):
            if math.exp(_log_delta(sigma, eps, sens)) <= delta:
                break
            sigma = math.nextafter(sigma, math.inf)
        return sigma

    @property
    def variance(self) -> float:
        """Variance added to each coordinate, ``sigma^2``."""
        return self.sigma**2

    def claim(self) -> str:
        """E.g. ``(epsilon = 1, delta = 1e-05) LDP (Gaussian, l2 sensitivity 2)``."""
        return (
            f"(epsilon = {_fmt(self.epsilon)}, delta = {_fmt(self.delta)}) LDP "
            f"(Gaussian, l2 sensitivity {_fmt(self.sensitivity)})"
        )


@dataclass(frozen=True)
class ClassicalGaussian(Guaranteed):
    """The Gaussian mechanism with the classical calibration ``sigma = D sqrt(2 ln(1.25/delta)) / epsilon``.

    (epsilon, delta)-LDP for epsilon < 1 (Dwork & Roth, Theorem A.1); for
    larger epsilon it is still (epsilon, delta)-LDP whenever
    ``gaussian_delta(sigma, epsilon, D) <= delta``, which :attr:`exact_delta`
    reports.

    Parameters
    ----------
    epsilon : float
        ``> 0``; ``inf`` for no noise.
    delta : float
        In (0, 1).
    sensitivity : float
        l2 sensitivity ``D``.
    """

    epsilon: float
    delta: float
    sensitivity: float

    name: ClassVar[str] = "gaussian_classical"
    switched_off: ClassVar[str] = "Gaussian noise"

    @property
    def sigma(self) -> float:
        return classical_gaussian_sigma(self.epsilon, self.delta, self.sensitivity)

    @property
    def variance(self) -> float:
        return self.sigma**2

    def noise_record(self, lanes: int = 1) -> "GaussianNoise":
        """The kernel record: i.i.d. ``N(0, sigma^2)`` per coordinate."""
        return GaussianNoise(float(self.sigma))

    @property
    def exact_delta(self) -> float:
        """The smallest delta this sigma attains at epsilon (Balle & Wang's formula)."""
        return gaussian_delta(self.sigma, self.epsilon, self.sensitivity)

    def claim(self) -> str:
        """The (epsilon, delta) its sigma gives: ``delta`` where the classical calibration holds, else the exact one.

        Above epsilon = 1 the classical sigma may give far more than ``delta`` (epsilon = 50, delta = 1e-5: the
        exact delta is 0.59; at 700 it is 1, no privacy): the guarantee printed is then the exact delta, and says
        why, never a pair the noise does not give (issue 44).
        """
        exact = self.exact_delta
        if exact > self.delta:
            return (f"(epsilon = {_fmt(self.epsilon)}, delta = {exact:.3g}) LDP (Gaussian, classical calibration, "
                    f"l2 sensitivity {self.sensitivity:.4g}: NOT the delta = {_fmt(self.delta)} asked, which the classical "
                    "calibration is proved to give for epsilon < 1 only; mechanism gaussian calibrates to (epsilon, "
                    "delta) exactly)")
        return (f"(epsilon = {_fmt(self.epsilon)}, delta = {_fmt(self.delta)}) LDP (Gaussian, classical calibration, "
                f"l2 sensitivity {self.sensitivity:.4g}; exact delta at this sigma {exact:.3g})")


@dataclass(frozen=True)
class L2Gaussian(Gaussian):
    """:class:`Gaussian` (analytic calibration) with a guarantee that prints 4 digits of ``D``."""

    def claim(self) -> str:
        return (f"(epsilon = {_fmt(self.epsilon)}, delta = {_fmt(self.delta)}) LDP (Gaussian, analytic calibration, "
                f"l2 sensitivity {self.sensitivity:.4g})")


@jit(inline=True)
def gaussian(gen, sigma):
    """One ``N(0, sigma^2)`` draw."""
    return sigma * normal(gen)


@jit(inline=True)
def gaussian_or_zero(gen, sigma):
    """One ``N(0, sigma^2)`` draw, or ``0.0`` without a draw when ``sigma = 0`` (a non-private run).

    The noise of one DP-SGD (or DP-GD) step on one coordinate; the privacy
    audit (:mod:`.audit`) draws through this function, so a kernel that
    calls it is audited as it runs.
    """
    return sigma * normal(gen) if sigma > 0.0 else 0.0


class GaussianNoise(NamedTuple):
    """I.i.d. ``N(0, sigma^2)`` per coordinate."""

    sigma: float


@register_noise(GaussianNoise)  # as a user's additive noise: one draw per coordinate
def _draw_gaussian(noise, gen):
    return gaussian(gen, noise.sigma)


class UniformBudgetGaussianNoise(NamedTuple):
    """``N(0, (numerator / b)^2)`` per coordinate with the user's budget ``b ~ U(low, low + width)``."""

    numerator: float
    low: float
    width: float


@add_noise.register(UniformBudgetGaussianNoise)
def _add_uniform_budget_gaussian(noise, gen, out):
    sigma = noise.numerator / (noise.low + noise.width * uniform(gen))  # the user's budget first
    for j in range(out.shape[0]):
        out[j] += gaussian(gen, sigma)


register_additive_vector(UniformBudgetGaussianNoise)  # the online models' calls: add_released(_joint)


# the analytic calibration is a root search: no per-user form
register("gaussian", Gaussian, "Gaussian noise, analytically calibrated to (epsilon, delta) exactly (Balle & Wang 2018)",
         "additive", online=True, delta=True, calibration=OnlineCalibration(
             make=lambda budget, dim, sensitivity, delta: L2Gaussian(budget, delta, sensitivity)))
register("gaussian_classical", ClassicalGaussian, "Gaussian noise with the classical calibration "
         "sqrt(2 ln(1.25 / delta)) / epsilon", "additive", bounded=False, online=True, per_user=True, delta=True,
         calibration=OnlineCalibration(
             make=lambda budget, dim, sensitivity, delta: ClassicalGaussian(budget, delta, sensitivity),
             numerator=lambda dim, sensitivity, delta: classical_gaussian_sigma(1.0, delta, sensitivity),
             per_user_text="(epsilon_i, delta = {delta})-LDP for epsilon_i < 1 (Gaussian, classical calibration, "
                           "sd {numerator:.4g} / epsilon_i)",
             per_user_record=UniformBudgetGaussianNoise))

__all__ = ["ClassicalGaussian", "Gaussian", "GaussianNoise", "L2Gaussian", "UniformBudgetGaussianNoise",
           "classical_gaussian_sigma", "gaussian", "gaussian_delta", "gaussian_or_zero"]
