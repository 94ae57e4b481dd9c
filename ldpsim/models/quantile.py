"""Quantile of N(0, 1) or the standard Cauchy law by LDP-SGD with randomized response (000, Section 4).

The loss gradient at ``theta`` for observation ``X`` is
``g = -tau + 1{X <= theta}``; the indicator is privatized by randomized
response and debiased, so the reported gradient is
``-tau + (A_RR - (1 - p)) / (2p - 1)``, unbiased for ``g`` given ``X``.

The law of ``X`` is the config key ``law``: ``normal`` (the default, the law
of every run before the key) or ``cauchy``, the standard Cauchy law (Cai,
Hu, Sun & Wu, NeurIPS 2025), drawn by inversion as
``X = tan(pi (U - 1/2))`` from one uniform ``U``. The law changes the data
only: the gradient, its privatization and ``S`` are the same, while
``theta* = F^-1(tau)`` and ``G = f(theta*)`` are the law's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..engine.dialect.dispatch import by_record
from ..engine.errors import ConfigError
from ..engine.dialect.lanes import where
from ..engine.dialect.rng import normal, uniform
from ..privacy.mechanisms import RandomizedResponse, randomized_response
from .base import Model, observe, register_scalar


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


class NormalLaw(NamedTuple):
    """``X ~ N(0, 1)``."""


class CauchyLaw(NamedTuple):
    """``X`` standard Cauchy."""


class QuantileParams(NamedTuple):
    """The gradient's constants (:class:`QuantileRR` or :class:`QuantilePlain`) and the data's law.

    One record of both, as :class:`~ldpsim.models.mean.MeanParams`: each part
    picks its code at compile time (a kernel per combination, one class per part).
    """

    gradient: tuple
    law: tuple


#: The record of each law.
LAW_RECORDS = {"normal": NormalLaw(), "cauchy": CauchyLaw()}
#: The values of the ``law`` key, the default first.
LAWS = tuple(LAW_RECORDS)


@by_record
def draw_law(law, gen):
    """One observation of ``law``."""


@draw_law.register(NormalLaw)
def draw_normal(law, gen):
    """One observation ``X ~ N(0, 1)``."""
    return normal(gen)


@draw_law.register(CauchyLaw)
def draw_cauchy(law, gen):
    """One observation ``X = tan(pi (U - 1/2))``, standard Cauchy, from ``U ~ U[0, 1)``.

    ``U - 1/2`` is exact; ``U = 0`` gives ``tan(-pi/2)``, about ``-1.6e16``, finite.
    """
    return math.tan(math.pi * (uniform(gen) - 0.5))


@observe.register(QuantileParams)
def draw_quantile_observation(params, gen):
    """One observation ``X`` of the model's law."""
    return draw_law(params.law, gen)


@by_record
def quantile_gradient(gradient, obs, theta, gen):
    """``-tau + 1{X <= theta}`` of ``X = obs``, privatized as ``gradient`` says."""


@quantile_gradient.register(QuantileRR)
def quantile_rr_gradient(gradient, obs, theta, gen):
    """The debiased randomized-response gradient of ``X = obs`` at ``theta``."""
    report = randomized_response(obs <= theta, gen, gradient.flip_prob)
    return where(report, gradient.high, gradient.low)


@quantile_gradient.register(QuantilePlain)
def quantile_plain_gradient(gradient, obs, theta, gen):
    """``-tau + 1{X <= theta}`` of ``X = obs``."""
    return where(obs <= theta, gradient.high, gradient.low)


@register_scalar(QuantileParams)
def quantile_params_gradient(params, obs, theta, gen):
    """The model's gradient of ``X = obs`` at ``theta``."""
    return quantile_gradient(params.gradient, obs, theta, gen)


def parse_law(name: str, value) -> str:
    """A ``law`` value of the quantile model in its canonical spelling: ``'normal'`` or ``'cauchy'``.

    Raises
    ------
    ConfigError
        In one line naming the key, the value and the laws allowed.
    """
    text = value.strip().lower() if isinstance(value, str) else None
    if text in LAWS:
        return text
    raise ConfigError(f"{name} = {value!r} is not a law of the quantile model; allowed: normal (default), cauchy")


def law_distribution(law: str):
    """``scipy.stats`` frozen law of ``X``: ``norm()`` or ``cauchy()``."""
    from scipy import stats  # lazy: import ldpsim <= 1 s (issue 41)

    return stats.cauchy() if law == "cauchy" else stats.norm()


def law_quantile(law: str, p: float) -> float:
    """``F^-1(p)`` of the law; the normal's without scipy.stats (0.4 s to import; a run of seconds needs neither)."""
    if law == "cauchy":
        return float(law_distribution(law).ppf(p))
    from scipy import special

    return float(special.ndtri(p))  # scipy.stats.norm.ppf's own function: the same number


def law_density(law: str, x: float) -> float:
    """``f(x)`` of the law; the normal's as scipy.stats.norm.pdf computes it (tests/test_quantile_law.py: equal)."""
    if law == "cauchy":
        return float(law_distribution(law).pdf(x))
    return float(np.exp(-x**2 / 2.0) / np.sqrt(2 * np.pi))


class QuantileModel(Model):
    """The ``tau``-quantile of N(0, 1) or the standard Cauchy law under epsilon-LDP randomized response.

    Parameters
    ----------
    tau : float
        Quantile level in (0, 1).
    epsilon : float
        Privacy budget (> 0, ``inf`` for non-private SGD).
    mechanism : str
        ``'rr'``, the only one.
    law : str, optional
        ``'normal'`` (default, also for ``None``) or ``'cauchy'`` (see :func:`parse_law`).

    Notes
    -----
    ``theta* = F^-1(tau)``: ``Phi^-1(tau)``, or ``tan(pi (tau - 1/2))`` for
    Cauchy data; ``G = f(theta*)``: ``phi(theta*)``, or
    ``1 / (pi (1 + theta*^2))``; ``S = tau (1 - tau) + S_LDP`` for both laws.
    """

    name = "quantile"
    dim = 1
    keys = ("tau", "mechanism", "law")
    mechanisms = ("rr",)
    path_keys = ("n", "tau", "epsilon", "c", "gamma", "theta0")
    key_defaults = {"law": "normal"}
    late_path_keys = key_defaults  # the law of every run before the key

    def __init__(self, tau: float, epsilon: float, mechanism: str = "rr", law: str | None = None):
        self.tau = float(tau)
        self.epsilon = float(epsilon)
        self.law = parse_law("law", "normal" if law is None else law)
        self.mechanism = None if math.isinf(self.epsilon) else RandomizedResponse(self.epsilon)

    def kernel_params(self, lanes: int = 1):
        law = LAW_RECORDS[self.law]
        if self.mechanism is None:
            return QuantileParams(QuantilePlain(self.tau, 1.0 - self.tau, 0.0 - self.tau), law)
        rr = self.mechanism
        offset = self.tau + rr.shift
        return QuantileParams(QuantileRR(rr.flip_prob, rr.scale, offset, rr.scale * 1.0 - offset,
                                         rr.scale * 0.0 - offset), law)

    def theta_star(self) -> np.ndarray:
        """``F^-1(tau)`` of the law."""
        return np.array([law_quantile(self.law, self.tau)])

    def _density(self) -> float:
        return law_density(self.law, law_quantile(self.law, self.tau))

    def hessian(self) -> np.ndarray:
        """``f(x_tau)``, the law's density at the quantile."""
        return np.array([[self._density()]])

    def gradient_covariance(self) -> np.ndarray:
        """``tau (1 - tau) + S_LDP`` with ``S_LDP = e^eps / (e^eps - 1)^2`` (docs/corrections.md, item 1), any law."""
        extra = 0.0 if self.mechanism is None else self.mechanism.variance
        return np.array([[self.tau * (1.0 - self.tau) + extra]])

    def sigma(self, batch_size: int = 1) -> np.ndarray:
        """``S / f(x_tau)^2 / s`` in closed form (the generic ``G^-1 S G^-1`` rounds differently)."""
        return self.gradient_covariance() / self._density() ** 2 / batch_size

    def __repr__(self) -> str:
        """``QuantileModel(tau=..., epsilon=...)``, with ``law=...`` when the law is not the default normal."""
        law = "" if self.law == "normal" else f", law={self.law!r}"
        return f"QuantileModel(tau={self.tau}, epsilon={self.epsilon}{law})"


__all__ = ["CauchyLaw", "NormalLaw", "QuantileModel", "QuantileParams", "QuantilePlain", "QuantileRR", "parse_law"]
