"""Quantile of N(0, 1) by LDP-SGD with randomized response (000, Section 4).

The loss gradient at ``theta`` for observation ``X`` is
``g = -tau + 1{X <= theta}``; the indicator is privatized by randomized
response and debiased, so the reported gradient is
``-tau + (A_RR - (1 - p)) / (2p - 1)``, unbiased for ``g`` given ``X``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

from ..extend import Model, normal, observe, randomized_response, register_scalar, where
from ..privacy.mechanisms import RandomizedResponse


# The gradient takes two values. The kernel's step theta -> theta - eta g waits on
# the comparison X <= theta; selecting g between two values computed before the
# run, rather than computing it from the report, shortens that chain of
# dependent operations from eight to five (the kernel's cost per step is its
# length). high and low are scale * 1.0 - offset and scale * 0.0 - offset, as
# the arithmetic on a 0.0 / 1.0 report gives them, so the numbers are unchanged.


class QuantileRR(NamedTuple):
    """Constants of the privatized quantile gradient, as the kernel needs them."""

    flip_prob: float  # 1 - p
    scale: float  # 1 / (2p - 1)
    offset: float  # tau + (1 - p) / (2p - 1)
    high: float  # the gradient when the report is 1: scale - offset
    low: float  # when it is 0: -offset


class QuantilePlain(NamedTuple):
    """Constants of the non-private quantile gradient (epsilon = inf)."""

    tau: float
    high: float  # 1 - tau
    low: float  # -tau


@observe.register(QuantileRR)
@observe.register(QuantilePlain)
def draw_normal(params, gen):
    """One observation ``X ~ N(0, 1)``."""
    return normal(gen)


@register_scalar(QuantileRR)
def quantile_rr_gradient(params, obs, theta, gen):
    """The debiased randomized-response gradient of ``X = obs`` at ``theta``."""
    report = randomized_response(obs <= theta, gen, params.flip_prob)
    return where(report, params.high, params.low)


@register_scalar(QuantilePlain)
def quantile_plain_gradient(params, obs, theta, gen):
    """``-tau + 1{X <= theta}`` of ``X = obs``."""
    return where(obs <= theta, params.high, params.low)


class QuantileModel(Model):
    """The ``tau``-quantile of N(0, 1) under epsilon-LDP randomized response.

    Parameters
    ----------
    tau : float
        Quantile level in (0, 1).
    epsilon : float
        Privacy budget (> 0, ``inf`` for non-private SGD).
    """

    name = "quantile"
    dim = 1
    keys = ("tau", "mechanism")
    mechanisms = ("rr",)
    path_keys = ("n", "tau", "epsilon", "c", "gamma", "theta0")

    def __init__(self, tau: float, epsilon: float, mechanism: str = "rr"):
        self.tau = float(tau)
        self.epsilon = float(epsilon)
        self.mechanism = None if math.isinf(self.epsilon) else RandomizedResponse(self.epsilon)

    def kernel_params(self, lanes: int = 1):
        if self.mechanism is None:
            return QuantilePlain(self.tau, 1.0 - self.tau, 0.0 - self.tau)
        rr = self.mechanism
        offset = self.tau + rr.shift
        return QuantileRR(rr.flip_prob, rr.scale, offset, rr.scale * 1.0 - offset, rr.scale * 0.0 - offset)

    def theta_star(self) -> np.ndarray:
        return np.array([stats.norm.ppf(self.tau)])

    def _density(self) -> float:
        return float(stats.norm.pdf(stats.norm.ppf(self.tau)))

    def hessian(self) -> np.ndarray:
        """``f(x_tau)``, the N(0, 1) density at the quantile."""
        return np.array([[self._density()]])

    def gradient_covariance(self) -> np.ndarray:
        """``tau (1 - tau) + S_LDP`` with ``S_LDP = e^eps / (e^eps - 1)^2`` (docs/corrections.md, item 1)."""
        extra = 0.0 if self.mechanism is None else self.mechanism.variance
        return np.array([[self.tau * (1.0 - self.tau) + extra]])

    def sigma(self, batch_size: int = 1) -> np.ndarray:
        """``S / f(x_tau)^2 / s`` in closed form (the generic ``G^-1 S G^-1`` rounds differently)."""
        return self.gradient_covariance() / self._density() ** 2 / batch_size

    def __repr__(self) -> str:
        return f"QuantileModel(tau={self.tau}, epsilon={self.epsilon})"


__all__ = ["QuantileModel", "QuantilePlain", "QuantileRR"]
