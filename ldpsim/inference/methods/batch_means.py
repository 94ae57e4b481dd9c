"""BM: batch means (Chen, Lee, Tong & Zhang 2020), from the batch sums the main kernel streams.

Batches ``k = 0..M`` of the iterates, ``M = floor(n^((1 - gamma) / 2))``,
growing with the step sizes (:func:`~ldpsim.inference.streaming.batch_ends`);
batch 0 is burn-in (docs/corrections.md, item 3).
"""

from __future__ import annotations

import numpy as np

from ..critical_values import normal_quantile
from ..streaming import floor_power
from .base import Method, register
from .common import LEVEL


def batch_means_variance(state, layout) -> np.ndarray:
    """Batch-means estimate of the asymptotic variance (Chen et al. 2020).

    ``(1/M) sum_{k=1..M} n_k (xbar_k - xbar)^2`` with batch 0 (burn-in)
    dropped and ``xbar`` the mean of the retained iterates.

    Returns
    -------
    numpy.ndarray
        Diagonal of the estimate, shape ``(d,)``.
    """
    sizes = layout.batch_sizes[1:].astype(float)[:, None]
    sums = state.batches[1:]
    means = sums / sizes
    grand = sums.sum(axis=0) / sizes.sum()
    return (sizes * (means - grand) ** 2).sum(axis=0) / sums.shape[0]


def batch_means(state, layout, *, level: float):
    """Batch-means interval ``theta_bar +- z sqrt(Sigma_hat / n)``."""
    half = normal_quantile(level) * np.sqrt(batch_means_variance(state, layout) / layout.n)
    return state.theta_bar - half, state.theta_bar + half


#: What BM (and AsympCS) stream: the main path's batch sums.
STREAMS = "M + 1 of them, M = floor(n^((1 - gamma) / 2)), batch 0 burn-in ((M + 1) d floats)"

def batch_floats(d: int, s, options) -> int:
    """Floats of the batch sums: ``(M + 1) d``."""
    return (floor_power(s.n, (1.0 - s.gamma) / 2.0) + 1) * d


register(
    Method("BM", "batch means (Chen, Lee, Tong & Zhang 2020)",
           studies={"coverage": 30, "trace": 30, "dpsgd": 80}, default_in=("coverage", "trace", "dpsgd"),
           reads=("batches",), streams=STREAMS, tags=frozenset({"path"}), keys=(LEVEL,), state_floats=batch_floats,
           texts={"dpsgd": "the coverage study's batch means on the DP-SGD path"},
           interval=lambda x: batch_means(x.state, x.layout, level=x.level), style=("tab:blue", "^"),
           line=("tab:blue", "--")),
)

__all__ = ["STREAMS", "batch_floats", "batch_means", "batch_means_variance"]
