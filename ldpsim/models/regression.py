"""What the regression models share: covariates, coefficients, mechanism, moments.

Data as in 000, Section 4: ``X = (1, X_1, X_2, X_3)`` with the ``X_j`` i.i.d.
on ``[-1, 1]`` (truncated standard normal or uniform), true coefficients
``(0, 0, 1, -1)``. Each model bounds its per-observation gradient,
coordinate by coordinate (:meth:`RegressionModel.gradient_bounds`); the
mechanism's sensitivity is computed from those bounds, never typed in.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine.lanes import lane_array
from ..privacy.ldp import LDP_MECHANISMS, NPRR, BoundedMechanism
from ..privacy.mechanisms import make_mechanism, noise_record
from .base import Model
from .truth import truth_of
from .covariates import CovariateLaw

#: The true coefficients of the regression models (000, Table 2).
COEF = (0.0, 0.0, 1.0, -1.0)


class RegressionModel(Model):
    """Base of the models with covariates ``X = (1, X_1, ..., X_3)``.

    Parameters
    ----------
    epsilon : float
        Privacy budget per observation (``inf``: non-private).
    covariates : {'truncnorm', 'uniform'}
        Law of ``X_1..X_3`` on ``[-1, 1]``.
    mechanism : {'laplace', 'gaussian'}
        Additive noise, calibrated to the gradient's l1 or l2 sensitivity.
    delta : float, optional
        The Gaussian mechanism's delta.
    """

    dim = len(COEF)
    keys = ("covariates", "mechanism", "delta")
    mechanisms = ("laplace", "gaussian") + LDP_MECHANISMS
    user_mechanisms = True  # a user's additive mechanism (ldpsim.extend.Mechanism) in place of these

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.path_keys = Model.path_keys + cls.keys  # every model key shapes the data or the noise

    def __init__(self, epsilon: float, covariates: str = "truncnorm", mechanism: str = "laplace",
                 delta: float | None = None):
        self.epsilon = float(epsilon)
        self.covariates = CovariateLaw(covariates)
        self.coef = np.array(COEF)
        self.mechanism = make_mechanism(mechanism, self.epsilon, self.gradient_bounds(), delta)

    def gradient_bounds(self) -> np.ndarray:
        """``sup |g_j|`` over observations and parameters, per coordinate."""
        raise NotImplementedError

    def _common(self, lanes: int = 1):
        """Record fields every regression kernel takes: coefficients, scratch ``x`` (per lane), covariate law, noise."""
        return self.coef, lane_array(self.dim, lanes), self.covariates.record(), noise_record(self.mechanism, lanes)

    def sgd_covariance(self) -> np.ndarray:
        """``S_SGD = E[g g']`` at the truth, of the gradient before privacy."""
        raise NotImplementedError

    def gradient_covariance(self) -> np.ndarray:
        """``S_SGD + S_LDP`` (estimated for a user's mechanism that gives no variance, and for NPRR)."""
        if self.noise_estimated:
            return truth_of(self).S
        return self.sgd_covariance() + self.noise_covariance()

    @property
    def noise_estimated(self) -> bool:
        # NPRR's variance needs the law of each coordinate's rounding, not only E[g g']: estimated
        return isinstance(self.mechanism, NPRR) or super().noise_estimated

    def noise_covariance(self) -> np.ndarray:
        """``S_LDP``: the additive mechanism's per-coordinate variance times the identity; for a mechanism of
        :mod:`~ldpsim.privacy.ldp`, its release's covariance averaged over the data (from ``E[g g']``)."""
        mech = self.mechanism
        if isinstance(mech, BoundedMechanism):
            scale = np.outer(mech.bounds, mech.bounds)
            return scale * mech.expected_covariance(self.sgd_covariance() / scale)
        variance = 0.0 if mech is None else mech.variance
        return variance * np.eye(self.dim)

    def theta_star(self) -> np.ndarray:
        return self.coef.copy()

    def __repr__(self) -> str:
        mech = "none" if self.mechanism is None else self.mechanism.name
        return f"{type(self).__name__}(epsilon={self.epsilon}, covariates={self.covariates.name!r}, mechanism={mech!r})"


def normal_clipped_moments(clip: float) -> tuple[float, float]:
    """``P(|e| <= R)`` and ``E[clip(e, R)^2]`` for ``e ~ N(0, 1)``.

    ``E[clip^2] = (2 Phi(R) - 1) - 2 R phi(R) + 2 R^2 (1 - Phi(R))``; both are 1 at ``R = inf``.
    """
    if math.isinf(clip):
        return 1.0, 1.0
    from scipy import stats

    inside = 2.0 * stats.norm.cdf(clip) - 1.0
    tail = 2.0 * stats.norm.sf(clip)
    second = inside - 2.0 * clip * stats.norm.pdf(clip) + clip * clip * tail
    return float(inside), float(second)
