"""The mean of a bounded variable on ``[0, 1]`` (``U(0, 1)`` or ``Beta(a, b)``) by LDP-SGD.

The squared loss ``(theta - X)^2 / 2`` has gradient ``theta - X``; whatever
``theta``, two observations' gradients differ by ``|X - X'| <= 1``, the
sensitivity, so the reported gradient is ``theta - X + L`` with ``L`` an
additive mechanism's noise, or the release of ``1 - 2X`` by a mechanism of
:mod:`ldpsim.privacy.mechanisms` (``LDP_MECHANISMS``). ``theta* = E X``, ``G = 1``, ``S = Var(X) + S_LDP``.

The law is the config key ``law``: ``uniform`` (the default, the law of every
run before the key) or ``beta(a, b)`` with positive integers ``a, b``, drawn
exactly as ``G_a / (G_a + G_b)`` with ``G_k = -log`` of a product of ``k``
uniforms (a Gamma(k, 1) variable).
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

import numpy as np

from ..engine.dialect.dispatch import by_record
from ..engine.errors import ConfigError
from ..engine.dialect.rng import uniform
from ..privacy.mechanisms import BOX_MECHANISMS, BoundedMechanism, make_mechanism, noise_record, released_scalar
from ..privacy.mechanisms.nprr import NPRR
from .base import Model, observe, register_scalar
from .truth import truth_of


class UniformLaw(NamedTuple):
    """``X ~ U(0, 1)``."""


class BetaLaw(NamedTuple):
    """``X ~ Beta(a, b)``, integer ``a, b >= 1``."""

    a: int
    b: int


class MeanParams(NamedTuple):
    """The mechanism's noise record and the data's law."""

    noise: tuple
    law: tuple


@by_record
def draw_law(law, gen):
    """One observation of ``law``."""


@draw_law.register(UniformLaw)
def _draw_uniform(law, gen):
    return uniform(gen)


@draw_law.register(BetaLaw)
def _draw_beta(law, gen):
    # Gamma(k, 1) = -log(U_1 ... U_k) for integer k; 1 - U lies in (0, 1], so no log(0)
    pa = 1.0 - uniform(gen)
    for _ in range(law.a - 1):
        pa = pa * (1.0 - uniform(gen))
    pb = 1.0 - uniform(gen)
    for _ in range(law.b - 1):
        pb = pb * (1.0 - uniform(gen))
    la = math.log(pa)
    return la / (la + math.log(pb))


@observe.register(MeanParams)
def draw_mean_observation(params, gen):
    """One observation ``X`` of the model's law."""
    return draw_law(params.law, gen)


@register_scalar(MeanParams)
def mean_gradient(params, obs, theta, gen):
    """``theta - X`` of ``X = obs``, released: plus the noise, or the release of ``1 - 2X`` (in ``[-1, 1]``)."""
    return released_scalar(params.noise, gen, theta - obs, theta - 0.5, 0.5)


_BETA_TEXT = re.compile(r"\s*beta\s*\(\s*([^,]+?)\s*,\s*([^)]+?)\s*\)\s*")
#: Largest ``a + b`` of a Beta law: each observation costs ``a + b`` uniforms.
MAX_BETA = 200


def parse_law(name: str, value) -> str:
    """A ``law`` value in its canonical spelling: ``'uniform'`` or ``'beta(a, b)'`` (positive integers)."""
    allowed = f"allowed: uniform, or beta(a, b) with integers a, b >= 1 and a + b <= {MAX_BETA}"
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text == "uniform":
        return text
    match = _BETA_TEXT.fullmatch(text) if text is not None else None
    if match:
        try:
            a, b = (float(g) for g in match.groups())
        except ValueError:
            a = b = math.nan
        if all(math.isfinite(v) and v == int(v) and v >= 1 for v in (a, b)) and a + b <= MAX_BETA:
            return f"beta({int(a)}, {int(b)})"
    raise ConfigError(f"{name} = {value!r} is not a law of the mean model; {allowed}")


def law_record(law: str):
    """The kernel record of a canonical ``law``."""
    if law == "uniform":
        return UniformLaw()
    a, b = (int(g) for g in _BETA_TEXT.fullmatch(law).groups())
    return BetaLaw(a, b)


def law_moments(law: str) -> tuple[float, float]:
    """``(E X, Var X)``: ``(1/2, 1/12)`` for ``U(0, 1)``, ``(a / (a + b), a b / ((a + b)^2 (a + b + 1)))``."""
    record = law_record(law)
    if isinstance(record, UniformLaw):
        return 0.5, 1.0 / 12.0
    a, b = float(record.a), float(record.b)
    return a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1.0))


def law_distribution(law: str):
    """``scipy.stats`` frozen law of ``X``."""
    from scipy import stats  # lazy: import ldpsim <= 1 s (issue 41)

    record = law_record(law)
    return stats.uniform() if isinstance(record, UniformLaw) else stats.beta(record.a, record.b)


def rounding_term(law: str, G: int) -> float:
    """``E[f (1 - f)]``, ``f`` the fractional part of ``G (1 - X)``: NPRR's rounding variance over the data.

    ``1/6`` for ``U(0, 1)`` (``f`` is uniform); otherwise by adaptive quadrature on each grid cell.
    """
    from scipy import integrate

    if law == "uniform":
        return 1.0 / 6.0
    dist = law_distribution(law)
    total = 0.0
    for k in range(G):  # x = 1 - X in [k / G, (k + 1) / G]: f = G x - k
        total += integrate.quad(lambda x: (G * x - k) * (k + 1 - G * x) * dist.pdf(1.0 - x), k / G, (k + 1) / G,
                                epsabs=1e-14, epsrel=1e-12)[0]
    return total


class MeanModel(Model):
    """Mean of a law on ``[0, 1]`` under Laplace, Gaussian or a bounded-input LDP mechanism.

    Parameters
    ----------
    epsilon : float
        Privacy budget (``inf``: non-private).
    mechanism : str
        ``'laplace'``, ``'gaussian'``, a release of :data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS`, or a user's.
    delta : float, optional
        The Gaussian mechanism's delta.
    law : str
        ``'uniform'`` (default) or ``'beta(a, b)'`` (see :func:`parse_law`).
    """

    name = "mean"
    dim = 1
    keys = ("mechanism", "delta", "law")
    mechanisms = BOX_MECHANISMS
    user_mechanisms = True  # a user's additive mechanism (ldpsim.extend.Mechanism) in place of these
    path_keys = ("n", "epsilon", "c", "gamma", "theta0", "mechanism", "delta")
    key_defaults = {"law": "uniform"}
    late_path_keys = key_defaults  # the law of every run before the key

    def __init__(self, epsilon: float, mechanism: str = "laplace", delta: float | None = None,
                 law: str | None = None):
        self.epsilon = float(epsilon)
        self.law = parse_law("law", law or "uniform")
        # the gradient theta - X ranges over an interval of length 1: bound 1/2 about its centre
        self.mechanism = make_mechanism(mechanism, self.epsilon, [0.5], delta)

    def kernel_params(self, lanes: int = 1):
        return MeanParams(noise_record(self.mechanism, lanes), law_record(self.law))

    def theta_star(self) -> np.ndarray:
        return np.array([law_moments(self.law)[0]])

    def hessian(self) -> np.ndarray:
        return np.eye(1)

    def gradient_covariance(self) -> np.ndarray:
        """``Var(X) + S_LDP`` (``1/12 + Var(L)`` for ``U(0, 1)`` and additive noise; estimated for a user's
        mechanism that gives no variance)."""
        if self.noise_estimated:
            return truth_of(self).S
        mech = self.mechanism
        mean, var_x = law_moments(self.law)
        if isinstance(mech, BoundedMechanism):
            # theta - X = (theta - 1/2) + t / 2 with t = 1 - 2X: E[t^2] = 4 Var X + (1 - 2 E X)^2 (1/3 for U(0, 1));
            # NPRR also needs the law of the fraction f of G x, x = 1 - X (uniform for U(0, 1): E[f (1 - f)] = 1/6)
            second = 4.0 * var_x + (1.0 - 2.0 * mean) ** 2
            extra = {"rounding": [rounding_term(self.law, mech.G)]} if isinstance(mech, NPRR) else {}
            return np.array([[var_x]]) + 0.25 * mech.expected_covariance(np.array([[second]]), **extra)
        extra = 0.0 if mech is None else mech.variance
        return np.array([[var_x + extra]])

    def __repr__(self) -> str:
        return (f"MeanModel(epsilon={self.epsilon}, mechanism={getattr(self.mechanism, 'name', 'none')!r}, "
                f"law={self.law!r})")


__all__ = ["BetaLaw", "MeanModel", "MeanParams", "UniformLaw", "parse_law"]
