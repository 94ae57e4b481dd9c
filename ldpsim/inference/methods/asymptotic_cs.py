"""AsympCS and AsympCS_oracle: asymptotic confidence sequences of the averaged iterate (Waudby-Smith et al. 2024).

``theta_bar_t +- sqrt(Sigma_hat_t) mixture_margin(t, rho^2, level)``: Robbins'
normal-mixture boundary, ``rho^2`` tuned to be narrowest at ``t_opt``; the
variance from batch means (``AsympCS``) or the truth (``AsympCS_oracle``).
docs/sequential.md states the guarantee.
"""

from __future__ import annotations

import math

import numpy as np

from .base import Method, register
from .batch_means import STREAMS, batch_floats, batch_means_variance
from .common import LEVEL


def mixture_rho2(t_opt: float, level: float) -> float:
    """``rho^2`` of the normal mixture whose boundary is (nearly) narrowest at ``t_opt``.

    Waudby-Smith et al. (2024), Section 2.2: ``rho^2 = (-2 log alpha + log(1 - 2 log alpha)) / t_opt``,
    ``alpha = 1 - level``.
    """
    la = -2.0 * math.log(1.0 - level)
    return (la + math.log1p(la)) / t_opt


def mixture_margin(t, rho2: float, level: float):
    """Unit-variance half-width of Robbins' two-sided normal-mixture boundary, on the scale of a mean.

    ``sqrt(2 (t rho^2 + 1) / (t^2 rho^2) log(sqrt(t rho^2 + 1) / alpha))``, ``alpha = 1 - level``
    (Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas 2024, Theorem 2.2): for i.i.d. unit-variance
    Gaussian means it is crossed at some ``t >= 1`` with probability at most ``alpha`` (Ville's
    inequality on the mixture martingale, symmetric in the sign, so two-sided at ``alpha``).
    """
    tr = t * rho2 + 1.0
    return np.sqrt(2.0 * tr / (t * t * rho2) * np.log(np.sqrt(tr) / (1.0 - level)))


def asymptotic_cs(state, layout, *, level: float, t_opt: float, variance=None):
    """The asymptotic confidence sequence of the averaged iterate at step ``layout.n``.

    ``theta_bar_t +- sqrt(Sigma_hat_t) mixture_margin(t, rho^2, level)``, ``rho^2`` tuned to be narrowest
    at ``t_opt`` (:func:`mixture_rho2`); ``Sigma_hat_t`` the batch-means estimate at ``t`` (``AsympCS``)
    or the true diagonal (``variance``, ``AsympCS_oracle``). Its guarantee (docs/sequential.md):
    the averaged iterate's partial sums are a martingale plus terms negligible at the ``sqrt(t log t)``
    scale, and ``Sigma_hat_t`` consistent; the same function of ``t`` serves every look of a path.
    """
    if variance is None:
        variance = batch_means_variance(state, layout)
    half = np.sqrt(variance) * mixture_margin(float(layout.n), mixture_rho2(t_opt, level), level)
    return state.theta_bar - half, state.theta_bar + half


register(
    Method("AsympCS", "asymptotic confidence sequence (Waudby-Smith et al. 2024), batch-means variance: valid at "
                      "every look at once", studies={"coverage": 60, "trace": 60}, kind="sequence",
           reads=("batches",), streams=STREAMS, keys=(LEVEL,), state_floats=batch_floats,
           interval=lambda x: asymptotic_cs(x.state, x.layout, level=x.level, t_opt=x.t_opt),
           style=("tab:orange", "v"), line=("tab:brown", (0, (5, 1)))),
    Method("AsympCS_oracle", "AsympCS with the true asymptotic variance", studies={"coverage": 70, "trace": 70},
           kind="sequence", reads=("truth",), streams="nothing is streamed beyond theta_bar", keys=(LEVEL,),
           state_floats=lambda d, s, options: 0,
           interval=lambda x: asymptotic_cs(x.state, x.layout, level=x.level, t_opt=x.t_opt,
                                            variance=np.diag(x.sigma)), style=("tab:olive", "<"),
           line=("tab:olive", (0, (1, 2)))),
)

__all__ = ["asymptotic_cs", "mixture_margin", "mixture_rho2"]
