"""Monte Carlo statistics, each with its standard error.

Every number a study reports comes from here with the standard error a
reader needs to judge it: a proportion with its binomial SE, a mean with the
SE of the mean, and the slope of a log-log curve of means with a
delta-method interval that accounts for the correlation of the means at
different points (they average the same replications).
"""

from __future__ import annotations

import math

import numpy as np


def proportion(name: str, hits) -> dict:
    """``{name: share of True, name_se: its binomial standard error}`` (NaN without replications)."""
    hits = np.asarray(hits)
    r = len(hits)
    p = float(hits.mean()) if r else math.nan
    return {name: p, f"{name}_se": math.sqrt(p * (1.0 - p) / r) if r else math.nan}


def set_length(lo, hi):
    """The length of ``{m : lo <= m <= hi}``, elementwise: ``hi - lo``, 0 for an empty set (``lo > hi``), NaN kept.

    A confidence set intersected with a parameter range can be empty: NPRR's sets for a mean in
    ``[0, 1]`` are ``[max(0, a), min(1, b)]``, empty once ``a > 1`` or ``b < 0`` or once their running
    intersection crosses (``max_s L_s > min_s U_s``). Its length is 0 and it covers nothing, not the
    negative ``hi - lo``.
    """
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    return np.maximum(hi - lo, 0.0)  # NaN stays NaN


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error of the mean of a sample (NaN SE for fewer than two values)."""
    values = np.asarray(values, dtype=float)
    r = values.shape[0]
    if r == 0:
        return math.nan, math.nan
    mean = float(values.mean())
    return mean, float(values.std(ddof=1)) / math.sqrt(r) if r > 1 else math.nan


def loglog_slope(x, samples, level: float = 0.95) -> dict:
    """Least-squares slope of ``log mean(samples)`` against ``log x``, with a delta-method interval.

    Parameters
    ----------
    x : array_like
        Positive abscissae, shape ``(C,)`` (checkpoints ``k``).
    samples : array_like
        Shape ``(R, C)``: replication ``r``'s value at each ``x`` (a squared
        distance). The curve is the mean over replications, ``m_c``.
    level : float
        Coverage of the interval.

    Returns
    -------
    dict
        ``slope``, ``slope_se``, ``slope_lo``, ``slope_hi``. The slope is
        ``b = sum_c w_c log m_c`` with the least-squares weights ``w``; its
        variance is ``w' D^-1 (S / R) D^-1 w`` with ``S`` the sample covariance
        of the columns of ``samples`` and ``D = diag(m)`` (delta method: the
        means at different ``x`` are correlated, they average the same
        replications). NaN where fewer than two points or two replications,
        or a non-positive mean.
    """
    from scipy import special  # scipy.stats.norm.ppf's own function, without scipy.stats' import (0.4 s)

    x = np.asarray(x, dtype=float)
    samples = np.asarray(samples, dtype=float)
    nan = {"slope": math.nan, "slope_se": math.nan, "slope_lo": math.nan, "slope_hi": math.nan}
    r = samples.shape[0]
    if x.shape[0] < 2 or r < 2:
        return nan
    means = samples.mean(axis=0)
    if not (np.all(means > 0) and np.all(np.isfinite(means))):
        return nan
    lx = np.log(x)
    centred = lx - lx.mean()
    w = centred / (centred @ centred)
    slope = float(w @ np.log(means))
    g = w / means  # gradient of the slope in the means
    cov = np.atleast_2d(np.cov(samples, rowvar=False, ddof=1)) / r
    se = math.sqrt(max(float(g @ cov @ g), 0.0))
    z = float(special.ndtri(0.5 + level / 2.0))
    return {"slope": slope, "slope_se": se, "slope_lo": slope - z * se, "slope_hi": slope + z * se}


__all__ = ["loglog_slope", "mean_se", "proportion", "set_length"]
