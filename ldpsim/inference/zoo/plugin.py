"""The plug-in sandwich of Chen, Lee, Tong & Zhang (2020, AoS), with the Hessian known (``plugin_oracle``).

Chen et al.'s plug-in estimator (their Section 3, the "plug-in estimator")
takes ``A_n = (1/n) sum_i grad^2 f(theta_{i-1}, X_i)`` and
``S_n = (1/n) sum_i g_i g_i'``, ``g_i = grad f(theta_{i-1}, X_i)`` the gradient the
step used, and estimates the covariance of ``sqrt(n) theta_bar`` by
``A_n^-1 S_n A_n^-1``. Under LDP the gradients the users release are the
privatized ``g~_i``, so ``S_n`` is their uncentred second moment along the
path (post-processing: no privacy cost), whose limit is ``S = S_SGD + S_LDP``,
the covariance of one privatized gradient at the truth. ``A`` is taken as the
true ``G``: an oracle, since estimating it from the data under LDP would need
the users' Hessians, a second privatized answer (a cost the method does not
pay here). The interval is ``theta_bar +- z sqrt(Sigma_jj / n)``.
"""

from __future__ import annotations

import numpy as np

from ...engine.dialect.jit import jit
from .common import symmetric_from_upper


@jit(inline=True)
def plugin_add(smat, grad):
    """``S += g g'`` for one privatized gradient ``g`` ``(d,)``, upper triangle of ``smat`` ``(d, d)``, in place."""
    plugin_add_d(smat, grad, grad.shape[0])


@jit(inline=True)
def plugin_add_d(smat, grad, d):
    """:func:`plugin_add` with the dimension ``d`` given (a constant 1 leaves no loop for LLVM to vectorize)."""
    for a in range(d):
        ga = grad[a]
        for b in range(a, d):
            smat[a, b] += ga * grad[b]


def plugin_sigma(smat: np.ndarray, count: int, hessian: np.ndarray, batch_size: int = 1) -> np.ndarray:
    """``G^-1 S_n G^-1 / s`` from the upper triangle of ``sum g g'`` over ``count`` gradients.

    ``s = batch_size`` observations per step, each privatized on its own:
    the step's gradient averages ``s`` of them, so the covariance of
    ``sqrt(n) theta_bar`` over ``n`` steps is ``G^-1 S G^-1 / s`` (as
    :meth:`ldpsim.models.Model.sigma`); ``count = n s``.
    """
    s = symmetric_from_upper(smat) / float(count)
    g_inv = np.linalg.inv(np.asarray(hessian, dtype=float))
    sigma = g_inv @ s @ g_inv.T / batch_size
    return (sigma + sigma.T) / 2.0


def plugin_state_size(d: int) -> int:
    """Floats the plug-in streams: ``sum g g'`` ``(d, d)``."""
    return d * d
