"""The mean of a bounded variable, ``X ~ U(0, 1)``, by LDP-SGD with additive noise.

The squared loss ``(theta - X)^2 / 2`` has gradient ``theta - X``; whatever
``theta``, two observations' gradients differ by ``|X - X'| <= 1``, the
sensitivity, so the reported gradient is ``theta - X + L`` with ``L`` the
mechanism's noise. ``theta* = 1/2``, ``G = 1``, ``S = 1/12 + Var(L)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..extend import Model, observe, register_scalar, uniform
from .truth import truth_of
from ..privacy.ldp import LDP_MECHANISMS, NPRR, BoundedMechanism
from ..privacy.mechanisms import make_mechanism, noise_record, released_scalar


class MeanParams(NamedTuple):
    """The mechanism's noise record."""

    noise: tuple


@observe.register(MeanParams)
def draw_uniform(params, gen):
    """One observation ``X ~ U(0, 1)``."""
    return uniform(gen)


@register_scalar(MeanParams)
def mean_gradient(params, obs, theta, gen):
    """``theta - X`` of ``X = obs``, released: plus the noise, or the release of ``1 - 2X`` (in ``[-1, 1]``)."""
    return released_scalar(params.noise, gen, theta - obs, theta - 0.5, 0.5)


class MeanModel(Model):
    """Mean of ``U(0, 1)`` under epsilon-LDP Laplace or (epsilon, delta)-LDP Gaussian noise.

    Parameters
    ----------
    epsilon : float
        Privacy budget (``inf``: non-private).
    mechanism : {'laplace', 'gaussian'}
        Noise law.
    delta : float, optional
        The Gaussian mechanism's delta.
    """

    name = "mean"
    dim = 1
    keys = ("mechanism", "delta")
    mechanisms = ("laplace", "gaussian") + LDP_MECHANISMS
    user_mechanisms = True  # a user's additive mechanism (ldpsim.extend.Mechanism) in place of these
    path_keys = ("n", "epsilon", "c", "gamma", "theta0", "mechanism", "delta")

    def __init__(self, epsilon: float, mechanism: str = "laplace", delta: float | None = None):
        self.epsilon = float(epsilon)
        # the gradient theta - X ranges over an interval of length 1: bound 1/2 about its centre
        self.mechanism = make_mechanism(mechanism, self.epsilon, [0.5], delta)

    def kernel_params(self, lanes: int = 1):
        return MeanParams(noise_record(self.mechanism, lanes))

    def theta_star(self) -> np.ndarray:
        return np.array([0.5])

    def hessian(self) -> np.ndarray:
        return np.eye(1)

    def gradient_covariance(self) -> np.ndarray:
        """``Var(X) + Var(L) = 1/12 + Var(L)`` (estimated for a user's mechanism that gives no variance)."""
        if self.noise_estimated:
            return truth_of(self).S
        mech = self.mechanism
        if isinstance(mech, BoundedMechanism):
            # theta - X = (theta - 1/2) + t / 2 with t = 1 - 2X ~ U(-1, 1): E[t^2] = 1/3, and for NPRR the
            # fraction of x G (x = 1 - X) is uniform: E[f (1 - f)] = 1/6
            extra = {"rounding": [1.0 / 6.0]} if isinstance(mech, NPRR) else {}
            return np.array([[1.0 / 12.0]]) + 0.25 * mech.expected_covariance(np.array([[1.0 / 3.0]]), **extra)
        extra = 0.0 if mech is None else mech.variance
        return np.array([[1.0 / 12.0 + extra]])

    def __repr__(self) -> str:
        return f"MeanModel(epsilon={self.epsilon}, mechanism={getattr(self.mechanism, 'name', 'none')!r})"


__all__ = ["MeanModel", "MeanParams"]
