"""Linear quantile regression by LDP-SGD with the Laplace mechanism (000, Section 4, Table 2).

``y = X^T beta_tau + e`` with ``e ~ N(0, 1)``, so ``beta_tau = (0, 0, 1, -1)``
at ``tau = 0.5``. The gradient ``g = (1{y <= X^T theta} - tau) X`` has
``|g_j| <= max(tau, 1 - tau) |X_j|``, so its l1 sensitivity is
``2 max(tau, 1 - tau) m d``: the paper's Laplace scale at ``epsilon``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine.dialect.lanes import where
from ..engine.dialect.rng import normal
from ..privacy.mechanisms import add_released
from .base import observe, register_vector
from .covariates import draw_covariates, predictors
from .regression import RegressionModel


class QuantileRegressionParams(NamedTuple):
    """Constants of the privatized quantile-regression gradient."""

    tau: float
    coef: np.ndarray
    x: np.ndarray  # scratch: the current covariate vector
    covariates: tuple
    noise: tuple


@observe.register(QuantileRegressionParams)
def draw_regression(params, gen):
    """One observation: the covariates into ``params.x``; returns the error ``e`` of ``y = X^T beta + e``."""
    draw_covariates(params.covariates, gen, params.x)
    return normal(gen)


@register_vector(QuantileRegressionParams)
def quantile_regression_gradient(params, obs, theta, gen, out):
    """Add ``(1{y <= X^T theta} - tau) X`` of the observation (``e = obs``) plus the mechanism's noise to ``out``."""
    x = params.x
    fit, mean = predictors(x, theta, params.coef)
    w = where(mean + obs <= fit, 1.0, 0.0) - params.tau
    add_released(params.noise, gen, w, x, out)


class QuantileRegressionModel(RegressionModel):
    """The ``tau``-quantile regression of ``y`` on ``X`` (000, Table 2).

    Parameters
    ----------
    tau : float
        Quantile level; the errors are shifted so that ``beta_tau = (0, 0, 1, -1)``
        for every ``tau``.
    epsilon, covariates, mechanism, delta
        See :class:`~ldpsim.models.regression.RegressionModel`.
    """

    name = "quantile_regression"
    keys = ("tau",) + RegressionModel.keys

    def __init__(self, tau: float = 0.5, **kwargs):
        from scipy import stats  # lazy: import ldpsim <= 1 s (issue 41)

        self.tau = float(tau)
        # e ~ N(-q_tau, 1): its tau-quantile is 0, so beta_tau = COEF for every tau
        self.shift = float(stats.norm.ppf(self.tau))
        super().__init__(**kwargs)

    def gradient_bounds(self) -> np.ndarray:
        return max(self.tau, 1.0 - self.tau) * self.covariates.bounds(self.dim)

    def kernel_params(self, lanes: int = 1):
        coef, x, law, noise = self._common(lanes)
        coef = coef.copy()
        coef[0] -= self.shift  # the error's shift, folded into the intercept of the mean
        return QuantileRegressionParams(self.tau, coef, x, law, noise)

    def hessian(self) -> np.ndarray:
        """``G = p_e(0) Sigma_X``."""
        from scipy import stats

        return float(stats.norm.pdf(self.shift)) * self.covariates.second_moment(self.dim)

    def sgd_covariance(self) -> np.ndarray:
        """``tau (1 - tau) Sigma_X``."""
        return self.tau * (1.0 - self.tau) * self.covariates.second_moment(self.dim)


__all__ = ["QuantileRegressionModel", "QuantileRegressionParams"]
