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

from ..engine.dialect.lanes import lane_array
from ..privacy.mechanisms import BOX_MECHANISMS, BoundedMechanism, make_mechanism, noise_record
from ..privacy.mechanisms.nprr import NPRR
from .base import Model
from .truth import truth_of
from .covariates import CovariateLaw

#: The true coefficients of the regression models (000, Table 2).
COEF = (0.0, 0.0, 1.0, -1.0)
#: Covariates besides the intercept by default (000's three); the ``dim`` key sets another number.
DEFAULT_DIM = len(COEF) - 1


def coefficients(dim: int) -> np.ndarray:
    """``beta`` with ``dim`` slopes: intercept 0, slopes cycling through 000's ``(0, 1, -1)``.

    ``dim = 3`` gives 000's ``(0, 0, 1, -1)``; ``dim = 4`` gives ``(0, 0, 1, -1, 0)``.
    """
    return np.array([0.0] + [(0.0, 1.0, -1.0)[j % 3] for j in range(int(dim))])


class RegressionModel(Model):
    """Base of the models with covariates ``X = (1, X_1, ..., X_dim)`` (``dim = 3`` by default, 000's).

    Parameters
    ----------
    epsilon : float
        Privacy budget per observation (``inf``: non-private).
    covariates : {'truncnorm', 'uniform'}
        Law of ``X_1..X_dim`` on ``[-1, 1]``.
    mechanism : str
        Additive noise (``'laplace'``, ``'gaussian'``: calibrated to the gradient's l1 or l2
        sensitivity), a release of :data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS`, or a user's.
    delta : float, optional
        The Gaussian mechanism's delta.
    dim : int, optional
        Covariates besides the intercept; ``beta`` from :func:`coefficients`.
    """

    dim = len(COEF)
    keys = ("covariates", "mechanism", "delta", "dim")
    mechanisms = BOX_MECHANISMS
    user_mechanisms = True  # a user's additive mechanism (ldpsim.extend.Mechanism) in place of these
    key_defaults = {"dim": DEFAULT_DIM}
    late_path_keys = key_defaults  # 000's three covariates: every run before the key

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # every model key shapes the data or the noise (dim only away from its default: late_path_keys)
        cls.path_keys = Model.path_keys + tuple(k for k in cls.keys if k not in cls.late_path_keys)

    @classmethod
    def dimension(cls, setting) -> int:
        return int(setting.dim if setting.dim is not None else DEFAULT_DIM) + 1

    def __init__(self, epsilon: float, covariates: str = "truncnorm", mechanism: str = "laplace",
                 delta: float | None = None, dim: int | None = None):
        self.epsilon = float(epsilon)
        self.covariates = CovariateLaw(covariates)
        self.coef = coefficients(DEFAULT_DIM if dim is None else dim)
        self.dim = self.coef.size
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
        :data:`~ldpsim.privacy.mechanisms.LDP_MECHANISMS`, its release's covariance averaged over the data (from ``E[g g']``)."""
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
