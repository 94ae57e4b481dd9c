"""Summaries of error trajectories: mean squared distance per checkpoint, and its decay rate.

Shared by every study that records a distance along a path at checkpoints
``k`` (rows in long format; later studies reuse the column names):

* :func:`trajectory_rows`: per estimator, metric and checkpoint,
  ``distance`` (the mean over replications) and ``distance_se`` (its
  standard error), and where known the exact value of the linearized
  recursion (``linearized``) and the distance of the noise-free path
  (``transient``, the decay of the initial error);
* the decay rate of each trajectory is :func:`ldpsim.reporting.rates.rate_row`
  (shared with the SAGD rate study).

The ``metric`` is ``parameter`` (``||. - theta*||^2``) or ``loss``
(``F(.) - F(theta*)``).
"""

from __future__ import annotations

import numpy as np

from ...reporting.stats import mean_se


def trajectory_rows(keys: dict, estimator: str, checkpoints, samples, n_failed: int, metric: str = "parameter",
                    linearized=None, transient=None) -> list[dict]:
    """One row per checkpoint: ``keys``, ``estimator``, ``metric``, ``k``, ``distance``, ``distance_se``, ...

    ``samples`` is ``(R, C)``, the usable replications' distances at the ``C``
    checkpoints. Further columns: ``reps``, ``n_failed``, ``linearized`` (the
    linearized recursion's exact mean distance) and ``transient`` (the
    distance of the noise-free mean-field path: the decay of the initial
    error), both ``(C,)`` or ``None`` (blank).
    """
    rows = []
    for q, k in enumerate(np.asarray(checkpoints)):
        mean, se = mean_se(samples[:, q])
        rows.append({**keys, "estimator": estimator, "metric": metric, "k": int(k), "distance": mean,
                     "distance_se": se, "reps": int(samples.shape[0]), "n_failed": int(n_failed),
                     "linearized": None if linearized is None else float(linearized[q]),
                     "transient": None if transient is None else float(transient[q])})
    return rows


__all__ = ["trajectory_rows"]
