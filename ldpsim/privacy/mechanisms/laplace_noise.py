"""The Laplace mechanism, epsilon-LDP: i.i.d. ``Lap(0, b)`` noise on every coordinate, ``b = sensitivity / epsilon``.

Calibrated to the l1 sensitivity of a gradient in a box (:func:`.additive.sensitivity`)
for the models with a bounded gradient, and to ``sqrt(p)`` times the l2
sensitivity ``D`` for Shi et al.'s online models (:class:`L2Laplace`, 004,
Example 1), whose users may draw their budgets (:class:`ldpsim.privacy.online.PerUserBudget`).
The audit draws through :func:`~.kernel.add_noise` and :func:`~.kernel.draw_noise`
on its records, with the Laplace likelihood ratio (:mod:`ldpsim.privacy.audit`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from ...engine.dialect.jit import dual
from ...engine.dialect.rng import exponential, uniform
from .additive import Calibrated, sensitivity
from .kernel import _fmt, add_noise, register_additive_vector, register_noise
from .registry import OnlineCalibration, register


@dataclass(frozen=True)
class Laplace(Calibrated):
    """The Laplace mechanism, epsilon-LDP (000, Example 2.1).

    Adds i.i.d. ``Lap(0, b)`` noise, ``b = sensitivity / epsilon``, to every
    coordinate of a gradient whose l1 sensitivity is ``sensitivity``
    (:func:`sensitivity` with ``norm="l1"``). 000, Remark 2.1 prints the
    scale as ``Delta(g) eps``; the mechanism needs ``Delta(g) / eps``
    (docs/corrections.md, item 7).

    Parameters
    ----------
    epsilon : float
        Privacy budget, ``> 0``; ``math.inf`` for no privacy (no noise).
    sensitivity : float
        l1 sensitivity of the gradient, finite and ``> 0``.
    """

    epsilon: float
    sensitivity: float

    name: ClassVar[str] = "laplace"
    switched_off: ClassVar[str] = "Laplace noise"

    @classmethod
    def from_bounds(cls, epsilon: float, bounds, delta: float | None = None) -> "Laplace":
        """Calibrated to the l1 sensitivity of a gradient in the box ``|g_j| <= bounds[j]``."""
        return cls(epsilon, sensitivity(bounds, "l1"))

    def noise_record(self, lanes: int = 1) -> "LaplaceNoise":
        """The kernel record: i.i.d. ``Lap(0, scale)`` per coordinate."""
        return LaplaceNoise(self.scale)

    @property
    def scale(self) -> float:
        """``b = sensitivity / epsilon`` (0.0 for epsilon = inf)."""
        if math.isinf(self.epsilon):
            return 0.0
        return self.sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """Variance added to each coordinate, ``2 b^2``."""
        return 2.0 * self.scale**2

    def claim(self) -> str:
        """E.g. ``epsilon = 1 LDP (Laplace, l1 sensitivity 4)``."""
        return f"epsilon = {_fmt(self.epsilon)} LDP (Laplace, l1 sensitivity {_fmt(self.sensitivity)})"


@dataclass(frozen=True)
class L2Laplace(Laplace):
    """:class:`Laplace` with the l1 sensitivity ``sqrt(p) D`` from the l2 bound ``D`` (004, Example 1)."""

    dim: int = 1
    l2_sensitivity: float = 1.0

    def claim(self) -> str:
        return (f"epsilon = {_fmt(self.epsilon)} LDP (Laplace, l1 sensitivity sqrt({self.dim}) x "
                f"{self.l2_sensitivity:.4g} = {self.sensitivity:.4g})")


@dual(inline=True)  # the SAGD twins call it in plain Python
def laplace(gen, scale):
    """One ``Lap(0, scale)`` draw.

    ``E1 - E2`` with ``E1, E2`` i.i.d. standard exponential is exactly
    standard Laplace; numpy's ziggurat exponentials make the two draws about
    twice as fast as ``gen.laplace`` (13 vs 26 ns a draw in a jitted loop),
    which takes a logarithm every time.
    """
    return scale * (exponential(gen) - exponential(gen))


class LaplaceNoise(NamedTuple):
    """I.i.d. ``Lap(0, scale)`` per coordinate."""

    scale: float


@register_noise(LaplaceNoise)  # as a user's additive noise: one draw per coordinate
def _draw_laplace(noise, gen):
    return laplace(gen, noise.scale)


class UniformBudgetLaplaceNoise(NamedTuple):
    """``Lap(0, numerator / b)`` per coordinate with the user's budget ``b ~ U(low, low + width)``."""

    numerator: float
    low: float
    width: float


@add_noise.register(UniformBudgetLaplaceNoise)
def _add_uniform_budget_laplace(noise, gen, out):
    scale = noise.numerator / (noise.low + noise.width * uniform(gen))  # the user's budget first
    for j in range(out.shape[0]):
        out[j] += laplace(gen, scale)


register_additive_vector(UniformBudgetLaplaceNoise)  # the online models' calls: add_released(_joint)


def _online_laplace(budget, dim, sensitivity, delta):
    return L2Laplace(budget, math.sqrt(dim) * sensitivity, dim=dim, l2_sensitivity=sensitivity)


register("laplace", Laplace, "Laplace noise calibrated to the gradient's l1 sensitivity (epsilon-LDP)", "additive",
         online=True, per_user=True, calibration=OnlineCalibration(
             make=_online_laplace,
             numerator=lambda dim, sensitivity, delta: math.sqrt(dim) * sensitivity,  # l1 <= sqrt(p) l2 (004, Ex. 1)
             variance_factor=2.0,
             per_user_text="epsilon_i-LDP (Laplace, scale {numerator:.4g} / epsilon_i: l1 sensitivity sqrt({dim}) x "
                           "{sensitivity:.4g})",
             per_user_record=UniformBudgetLaplaceNoise))

__all__ = ["L2Laplace", "Laplace", "LaplaceNoise", "UniformBudgetLaplaceNoise", "laplace"]
