"""Gaussian noise calibrated to mu-GDP per user (Shi et al. 2025, Example 3): the online models' default mechanism.

``sigma = D / mu`` (:class:`GaussianGDP`, and :class:`GDPGuarantee`, whose
guarantee lists points of the (epsilon, delta) curve, :func:`gdp_delta`; the
conversions and composition are :mod:`ldpsim.privacy.gdp`'s); its kernel records are the
Gaussian family's (:class:`~.gaussian_noise.GaussianNoise`, and for budgets drawn per user
:class:`~.gaussian_noise.UniformBudgetGaussianNoise`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from .additive import Guaranteed
from .gaussian_noise import GaussianNoise, UniformBudgetGaussianNoise, gaussian_delta
from .kernel import _fmt
from .registry import OnlineCalibration, register


def _check_mu(mu: float) -> None:
    if not mu > 0:  # also catches nan
        raise ValueError(f"mu must be > 0 (inf for no privacy), got {mu}")


def gdp_delta(epsilon: float, mu: float) -> float:
    """``delta(epsilon)`` of a mu-GDP mechanism (0 for ``mu = 0``-like limits, 1 for ``mu = inf``)."""
    _check_mu(mu)
    if math.isinf(mu):
        return 1.0
    return gaussian_delta(1.0 / mu, epsilon, 1.0)


@dataclass(frozen=True)
class GaussianGDP(Guaranteed):
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
    budget_key: ClassVar[str] = "mu"
    switched_off: ClassVar[str] = "Gaussian noise"

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

    def noise_record(self, lanes: int = 1) -> GaussianNoise:
        """The kernel record: the Gaussian family's, i.i.d. ``N(0, sigma^2)`` per coordinate."""
        return GaussianNoise(float(self.sigma))

    def claim(self) -> str:
        """E.g. ``mu = 1 GDP (Gaussian, l2 sensitivity 2): (epsilon = 1, delta = 0.127) DP``."""
        return (f"mu = {_fmt(self.mu)} GDP (Gaussian, l2 sensitivity {_fmt(self.sensitivity)}): "
                f"(epsilon = 1, delta = {gdp_delta(1.0, self.mu):.3g}) DP")


@dataclass(frozen=True)
class GDPGuarantee(GaussianGDP):
    """:class:`ldpsim.privacy.gdp.GaussianGDP` whose guarantee also lists (epsilon, delta(epsilon)) at epsilon = 1, 2, 3."""

    def claim(self) -> str:
        pairs = ", ".join(f"({e}, {gdp_delta(float(e), self.mu):.3g})" for e in (1, 2, 3))
        return (f"mu = {_fmt(self.mu)} GDP (Gaussian, l2 sensitivity {self.sensitivity:.4g}): "
                f"(epsilon, delta) LDP for {pairs}, ...")


register("gdp", GDPGuarantee, "Gaussian noise at mu-GDP per user, budgets per user possible (Shi et al. 2025)",
         "additive", bounded=False, online=True, online_default=True, per_user=True, budget_key="mu",
         calibration=OnlineCalibration(
             make=lambda budget, dim, sensitivity, delta: GDPGuarantee(budget, sensitivity),
             numerator=lambda dim, sensitivity, delta: sensitivity,  # sd D / mu (004, Example 3)
             per_user_text="mu_i-GDP (Gaussian, sd {numerator:.4g} / mu_i, l2 sensitivity {sensitivity:.4g})",
             per_user_record=UniformBudgetGaussianNoise))

__all__ = ["GDPGuarantee", "GaussianGDP", "gdp_delta"]
