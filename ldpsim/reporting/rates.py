"""The decay rate of a curve of means along a path: its log-log slope over the last decades, with an interval.

Shared by the studies that report a rate (``rates.csv``): the trajectory
study's error trajectories against ``k`` and the SAGD rate study's expected
gradient norms against ``n``.

* :func:`rate_row`: the least-squares slope of ``log distance`` against
  ``log k`` over the last ``decades`` of checkpoints, with a 95% delta-method
  interval (:func:`ldpsim.reporting.stats.loglog_slope`), next to the
  theoretical slope where one is known and the linearized recursion's slope
  over the same window;
* :func:`format_rate`: a row's slope and interval as one table cell.
"""

from __future__ import annotations

import math

import numpy as np

from .stats import loglog_slope

#: Level of the slope intervals.
RATE_LEVEL = 0.95


def fit_window(checkpoints, decades: float) -> np.ndarray:
    """Mask of the checkpoints in the last ``decades`` decades: ``k >= k_C / 10^decades``."""
    ks = np.asarray(checkpoints, dtype=float)
    return ks >= ks[-1] / 10.0 ** decades * (1.0 - 1e-12)


def rate_row(keys: dict, estimator: str, checkpoints, samples, decades: float, theory, metric: str = "parameter",
             linearized=None) -> dict:
    """The decay rate of one trajectory: slope over the last ``decades`` decades, interval, theory.

    Columns: ``keys``, ``estimator``, ``metric``, ``slope``, ``slope_lo``,
    ``slope_hi`` (95% delta-method interval), ``theory`` (``None``, written
    blank, where no rate is known), ``slope_se``, ``k_from``, ``k_to``,
    ``points``, ``linearized_slope`` (the slope of the linearized
    recursion's exact curve ``linearized`` over the same window; blank
    without one).
    """
    window = fit_window(checkpoints, decades)
    ks = np.asarray(checkpoints)[window]
    fit = loglog_slope(ks, samples[:, window], RATE_LEVEL)
    lin = None
    if linearized is not None and ks.size >= 2:
        lin = loglog_slope(ks, np.asarray(linearized)[window][None, :].repeat(2, axis=0))["slope"]
    return {**keys, "estimator": estimator, "metric": metric, "slope": fit["slope"], "slope_lo": fit["slope_lo"],
            "slope_hi": fit["slope_hi"], "theory": theory, "slope_se": fit["slope_se"],
            "k_from": int(ks[0]) if ks.size else 0, "k_to": int(ks[-1]) if ks.size else 0, "points": int(ks.size),
            "linearized_slope": lin}


def format_rate(row: dict) -> str:
    """``-0.998 [-1.02, -0.97]``."""
    if not math.isfinite(row["slope"]):
        return "-"
    return f"{row['slope']:.3f} [{row['slope_lo']:.3f}, {row['slope_hi']:.3f}]"


__all__ = ["RATE_LEVEL", "fit_window", "format_rate", "rate_row"]
