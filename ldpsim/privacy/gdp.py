"""Gaussian differential privacy (Dong, Roth & Su 2022): mu-GDP, its (epsilon, delta) curve, its composition.

A mechanism is mu-GDP if telling any two neighbouring inputs apart is at
least as hard as telling ``N(0, 1)`` from ``N(mu, 1)``. The Gaussian mechanism
with l2 sensitivity ``D`` and noise ``N(0, sigma^2)`` is ``D / sigma``-GDP;
``k`` mechanisms that are ``mu_i``-GDP compose to ``sqrt(sum mu_i^2)``-GDP.
mu-GDP is (epsilon, delta(epsilon))-DP for every epsilon at once, with

    delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)

(Dong, Roth & Su, Corollary 2.13): the same function as the analytic
Gaussian mechanism's delta (Balle & Wang 2018) at ``sigma / D = 1 / mu``, so it
is computed by the same cancellation-free formula
(:func:`ldpsim.privacy.mechanisms.gaussian_noise.gaussian_delta`). mu = 1 gives
delta(1) = 0.1269, delta(2) = 0.0209, delta(3) = 0.0015 (004, Section 5.1).
"""

from __future__ import annotations

import math

from .mechanisms.gaussian_noise import Gaussian, _log_delta
from .mechanisms.gdp_noise import GaussianGDP, _check_mu, gdp_delta


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


__all__ = ["GaussianGDP", "compose", "gdp_delta", "gdp_epsilon", "gdp_mu"]
