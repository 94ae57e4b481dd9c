"""Logistic regression privatized by Laplace or Gaussian noise.

``P(y = 1 | X) = s(X^T beta)`` with ``s`` the logistic function and
``beta = (0, 0, 1, -1)``. The gradient ``g = (s(X^T theta) - y) X`` is bounded
by ``|X_j|`` (``|s - y| <= 1``), which fixes the sensitivity. The Hessian
``G = E[s'(X^T beta) X X^T]`` has no closed form under truncated-normal
covariates: it is computed by quadrature; ``S_SGD = G`` at the truth.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..engine.dialect.lanes import where
from ..engine.errors import ConfigError
from ..engine.dialect.rng import uniform
from ..privacy.mechanisms import add_released
from .base import observe, register_vector
from .covariates import QUADRATURE_NODES, draw_covariates, predictors
from .regression import RegressionModel


class LogisticParams(NamedTuple):
    """Constants of the privatized logistic-regression gradient."""

    coef: np.ndarray
    x: np.ndarray  # scratch: the current covariate vector
    covariates: tuple
    noise: tuple


@observe.register(LogisticParams)
def draw_logistic(params, gen):
    """One observation: the covariates into ``params.x``; returns the uniform ``u`` that draws ``y``."""
    draw_covariates(params.covariates, gen, params.x)
    return uniform(gen)


@register_vector(LogisticParams)
def logistic_gradient(params, obs, theta, gen, out):
    """Add ``(s(X^T theta) - y) X`` of the observation (``u = obs``) plus the mechanism's noise to ``out``."""
    x = params.x
    fit, mean = predictors(x, theta, params.coef)
    y = where(obs * (1.0 + math.exp(-mean)) < 1.0, 1.0, 0.0)  # u < s(mean), without a division
    w = 1.0 / (1.0 + math.exp(-fit)) - y
    add_released(params.noise, gen, w, x, out)


class LogisticModel(RegressionModel):
    """Logistic regression of ``y`` on ``X`` (parameters: see :class:`~ldpsim.models.regression.RegressionModel`)."""

    name = "logistic"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.dim - 1 not in QUADRATURE_NODES:  # a refusal of the key, not a floating-point problem (issue 44)
            raise ConfigError(f"dim = {self.dim - 1} is outside [1, {max(QUADRATURE_NODES)}] for model 'logistic': "
                              f"its G is a quadrature over the covariates, computed for dim <= {max(QUADRATURE_NODES)}")

    def gradient_bounds(self) -> np.ndarray:
        return self.covariates.bounds(self.dim)

    def kernel_params(self, lanes: int = 1):
        return LogisticParams(*self._common(lanes))

    def hessian(self) -> np.ndarray:
        """``G = E[s(X^T beta) (1 - s(X^T beta)) X X^T]`` by Gauss-Legendre quadrature."""
        from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

        def integrand(x):
            p = special.expit(x @ self.coef)
            return (p * (1.0 - p))[:, None, None] * x[:, :, None] * x[:, None, :]

        return self.covariates.expectation(integrand, self.dim)

    def sgd_covariance(self) -> np.ndarray:
        """``G``: ``E[(s - y)^2 | X] = s (1 - s)`` at the truth."""
        return self.hessian()


__all__ = ["LogisticModel", "LogisticParams"]
