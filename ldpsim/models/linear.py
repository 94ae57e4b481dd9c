"""Linear regression (squared loss) with a clipped residual, privatized by Laplace or Gaussian noise.

``y = X^T beta + e``, ``e ~ N(0, 1)``, ``beta = (0, 0, 1, -1)``. The residual
``r = X^T theta - y`` is clipped to ``[-clip, clip]`` so that
``g = clip(r) X`` is bounded, ``|g_j| <= clip |X_j|``: that is the Huber
loss, and with symmetric errors its minimiser is still ``beta``. ``clip = inf``
is plain least squares (non-private runs only).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine.dialect.rng import normal
from ..privacy.mechanisms import add_released
from .base import observe, register_vector
from .covariates import draw_covariates, predictors
from .regression import RegressionModel, normal_clipped_moments


class LinearParams(NamedTuple):
    """Constants of the privatized, clipped least-squares gradient."""

    clip: float
    coef: np.ndarray
    x: np.ndarray  # scratch: the current covariate vector
    covariates: tuple
    noise: tuple


@observe.register(LinearParams)
def draw_linear(params, gen):
    """One observation: the covariates into ``params.x``; returns the error ``e`` of ``y = X^T beta + e``."""
    draw_covariates(params.covariates, gen, params.x)
    return normal(gen)


@register_vector(LinearParams)
def linear_gradient(params, obs, theta, gen, out):
    """Add ``clip(X^T theta - y) X`` of the observation (``e = obs``) plus the mechanism's noise to ``out``."""
    x = params.x
    fit, mean = predictors(x, theta, params.coef)
    r = min(max(fit - mean - obs, -params.clip), params.clip)
    add_released(params.noise, gen, r, x, out)


class LinearModel(RegressionModel):
    """Least squares with the residual clipped at ``clip`` (Huber regression).

    Parameters
    ----------
    clip : float
        Residual bound ``R``; sets the gradient bound ``R |X_j|`` and with it
        the sensitivity.
    epsilon, covariates, mechanism, delta
        See :class:`~ldpsim.models.regression.RegressionModel`.
    """

    name = "linear"
    keys = ("clip",) + RegressionModel.keys

    def __init__(self, clip: float = 1.0, **kwargs):
        self.clip = float(clip)
        super().__init__(**kwargs)

    def gradient_bounds(self) -> np.ndarray:
        return self.clip * self.covariates.bounds(self.dim)

    def kernel_params(self, lanes: int = 1):
        return LinearParams(self.clip, *self._common(lanes))

    def hessian(self) -> np.ndarray:
        """``G = P(|e| <= R) Sigma_X``."""
        inside, _ = normal_clipped_moments(self.clip)
        return inside * self.covariates.second_moment(self.dim)

    def sgd_covariance(self) -> np.ndarray:
        """``E[clip(e)^2] Sigma_X``."""
        _, second = normal_clipped_moments(self.clip)
        return second * self.covariates.second_moment(self.dim)


__all__ = ["LinearModel", "LinearParams"]
