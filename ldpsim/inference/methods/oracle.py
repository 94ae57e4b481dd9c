"""The oracle: ``theta_bar +- z sqrt(Sigma_jj / n)`` with the true asymptotic covariance, the yardstick."""

from __future__ import annotations

import numpy as np

from ..critical_values import normal_quantile
from .base import Method, register
from .common import LEVEL


def oracle(state, layout, *, sigma: np.ndarray, level: float):
    """Interval from the true asymptotic covariance: ``theta_bar +- z sqrt(Sigma_jj / n)``."""
    half = normal_quantile(level) * np.sqrt(np.diag(sigma) / layout.n)
    return state.theta_bar - half, state.theta_bar + half


register(
    Method("oracle", "theta_bar +- z sqrt(Sigma / n) with the true asymptotic variance: the yardstick",
           studies={"coverage": 50, "trace": 50, "dpsgd": 60}, default_in=("coverage", "dpsgd"), reads=("truth",),
           streams="Sigma = G^-1 S G^-1 of the model; nothing is streamed beyond theta_bar", keys=(LEVEL,),
           state_floats=lambda d, s, options: 0,
           texts={"dpsgd": "full-sample OLS / logistic MLE with its Wald interval (not private)"},
           interval=lambda x: oracle(x.state, x.layout, sigma=x.sigma, level=x.level), style=("black", "x"),
           line=("tab:gray", "-.")),
)

__all__ = ["oracle"]
