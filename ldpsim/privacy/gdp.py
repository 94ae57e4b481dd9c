"""Gaussian differential privacy (Dong, Roth & Su 2022): mu-GDP, its (epsilon, delta) curve, the mechanism.

A mechanism is mu-GDP if telling any two neighbouring inputs apart is at
least as hard as telling ``N(0, 1)`` from ``N(mu, 1)``. The Gaussian mechanism
with l2 sensitivity ``D`` and noise ``N(0, sigma^2)`` is ``D / sigma``-GDP;
``k`` mechanisms that are ``mu_i``-GDP compose to ``sqrt(sum mu_i^2)``-GDP.
mu-GDP is (epsilon, delta(epsilon))-DP for every epsilon at once, with

    delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)

(Dong, Roth & Su, Corollary 2.13): the same function as the analytic
Gaussian mechanism's delta (Balle & Wang 2018) at ``sigma / D = 1 / mu``, so it
is computed by the same cancellation-free formula
(:func:`ldpsim.privacy.mechanisms.gaussian_delta`). mu = 1 gives
delta(1) = 0.1269, delta(2) = 0.0209, delta(3) = 0.0015 (004, Section 5.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from .mechanisms import Gaussian, _fmt, _log_delta, gaussian_delta


def _check_mu(mu: float) -> None:
    if not mu > 0:  # also catches nan
        raise ValueError(f"mu must be > 0 (inf for no privacy), got {mu}")


def gdp_delta(epsilon: float, mu: float) -> float:
    """``delta(epsilon)`` of a mu-GDP mechanism (0 for ``mu = 0``-like limits, 1 for ``mu = inf``)."""
    _check_mu(mu)
    if math.isinf(mu):
        return 1.0
    return gaussian_delta(1.0 / mu, epsilon, 1.0)


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest mu whose mu-GDP guarantee implies (epsilon, delta)-DP.

    The inverse of :func:`gdp_delta` in ``mu`` (delta grows with mu): ``1 / sigma``
    of the analytic Gaussian mechanism with sensitivity 1.
    """
    if math.isinf(epsilon):
        return math.inf
    return 1.0 / Gaussian(epsilon, delta, 1.0).sigma


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon with ``delta(epsilon) <= delta`` for a mu-GDP mechanism.

    Solved by Brent's method; delta(epsilon) falls from ``2 Phi(mu / 2) - 1`` at
    epsilon = 0 to 0. Returns 0 if delta is already met at epsilon = 0.
    """
    from scipy import optimize  # lazy: import ldpsim <= 1 s (issue 41)

    _check_mu(mu)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if math.isinf(mu):
        return math.inf
    log_target = math.log(delta)

    def excess(eps):
        return _log_delta(1.0 / mu, eps, 1.0) - log_target

    if excess(1e-12) <= 0:
        return 0.0
    hi = max(1.0, mu * mu)
    while excess(hi) > 0:
        hi *= 2.0
    return optimize.brentq(excess, 1e-12, hi, xtol=1e-14, rtol=1e-14, maxiter=200)


def compose(*mus: float) -> float:
    """mu of the composition of mechanisms that are ``mus``-GDP each: ``sqrt(sum mu_i^2)``."""
    return math.sqrt(sum(m * m for m in mus))


@dataclass(frozen=True)
class GaussianGDP:
    """The Gaussian mechanism calibrated to mu-GDP: ``N(0, sigma^2)`` per coordinate, ``sigma = D / mu``.

    Parameters
    ----------
    mu : float
        GDP budget, ``> 0``; ``math.inf`` for no privacy (no noise).
    sensitivity : float
        l2 sensitivity ``D`` of the gradient, finite and ``> 0``.
    """

    mu: float
    sensitivity: float

    name: ClassVar[str] = "gdp"

    def __post_init__(self):
        _check_mu(self.mu)
        if not (self.sensitivity > 0 and math.isfinite(self.sensitivity)):
            raise ValueError(f"sensitivity must be finite and > 0, got {self.sensitivity}")

    @property
    def sigma(self) -> float:
        """``D / mu`` (0 for mu = inf)."""
        return 0.0 if math.isinf(self.mu) else self.sensitivity / self.mu

    @property
    def variance(self) -> float:
        """Variance added to each coordinate, ``sigma^2``."""
        return self.sigma**2

    @property
    def guarantee(self) -> str:
        """E.g. ``mu = 1 GDP (Gaussian, l2 sensitivity 2): (epsilon = 1, delta = 0.127) DP``."""
        if math.isinf(self.mu):
            return "no privacy (mu = inf, Gaussian noise off)"
        return (f"mu = {_fmt(self.mu)} GDP (Gaussian, l2 sensitivity {_fmt(self.sensitivity)}): "
                f"(epsilon = 1, delta = {gdp_delta(1.0, self.mu):.3g}) DP")


__all__ = ["GaussianGDP", "compose", "gdp_delta", "gdp_epsilon", "gdp_mu"]
