"""Monte Carlo summaries: coverage, length and diagnostics with their standard errors.

One row per setting x method x coordinate (long format). Every statistic
comes with what a reader needs to judge it: coverage with its binomial
standard error, mean length with the standard error of the mean, and the
diagnostics ``bias`` (mean of ``theta_bar - theta_star``), ``sd`` (empirical
SD of ``theta_bar``) and ``se_ratio`` (the normal-equivalent standard error
``length / (2 z)``, averaged, over ``sd``: 1 means the interval is as wide as
the normal interval with the true SD).
"""

from __future__ import annotations

import math

from ...engine.runs.usercode import display
from ...engine.runs.config import Config
from ...inference.critical_values import normal_quantile
from ...inference.methods import ZOO_METHODS, names
from ...inference.user_methods import is_user_method, label
from ...models import build_model
from ...reporting.csvio import columns_before
from ...reporting.stats import proportion, set_length
from ..base import STAT_COLUMNS



def summarize(config: Config, results: list[dict]) -> list[dict]:
    """Summary rows of a finished run.

    Parameters
    ----------
    config : Config
        The run.
    results : list of dict
        One per setting, as returned by :func:`ldpsim.engine.runs.driver.simulate`:
        ``theta_bar`` ``(R, d)``, ``bounds`` ``(R, n_methods, d, 2)``, ``ok`` ``(R,)``.

    Returns
    -------
    list of dict
        Keys: the varied config keys but ``n``, then :data:`~ldpsim.studies.base.STAT_COLUMNS`
        (and the joint coverage, for multivariate models).
    """
    keys = [k for k in config.varied if k != "n"]
    # simultaneous coverage only means something with more than one coordinate
    joint = any(r["theta_bar"].shape[1] > 1 for r in results)
    rows = []
    for setting, res in zip(config.settings, results):
        theta_star = build_model(setting).theta_star()
        z = normal_quantile(setting.level)
        for j, method in enumerate(config.methods):
            ok, estimates = method_mask(res, j, method)
            reps, failed = int(ok.sum()), int((~ok).sum())
            lo_all, hi_all = res["bounds"][ok, j, :, 0], res["bounds"][ok, j, :, 1]
            all_covered = ((lo_all <= theta_star) & (theta_star <= hi_all)).all(axis=1)
            for coord in range(theta_star.shape[0]):
                est = estimates[ok, coord]
                row = {k: display(getattr(setting, k)) for k in keys}  # a user's file: its path, no hash
                row.update(method=label(method), coord=coord, n=setting.n, reps=reps, n_failed=failed)
                row.update(_stats(est, lo_all[:, coord], hi_all[:, coord], float(theta_star[coord]), z))
                if method in NO_SE_RATIO:  # its interval is not its estimate +- z SE: the ratio means nothing
                    row["se_ratio"] = math.nan
                if joint:
                    row.update(proportion("joint_coverage", all_covered))
                rows.append(row)
    return rows


#: Methods whose interval is not an estimate +- z SE (HulC: the range of its segment averages): no ``se_ratio``.
NO_SE_RATIO = names(tag="no_se_ratio")


def method_mask(res: dict, j: int, method: str):
    """``(ok, estimates)`` of method ``j``: the replications its row counts and the point estimates ``(R, d)``.

    The classic methods count the replications whose path and classic
    intervals are usable (``ok``) and estimate by ``theta_bar``; a zoo method
    or a user's (run with ``method_ok`` and ``estimate``) counts those where its own
    interval is usable and estimates by its own point (HulC: the median of
    its segment averages; HiGrad: the mean of its threads'; OB_split: its own
    path's average; a user's: its ``estimate()``).
    """
    if "method_ok" in res and (method in ZOO_METHODS or is_user_method(method)):
        return res["method_ok"][:, j], res["estimate"][:, j]
    return res["ok"], res["theta_bar"]


def _stats(est, lo, hi, truth, z) -> dict:
    r = est.shape[0]
    if r == 0:
        nan = math.nan
        return dict(coverage=nan, coverage_se=nan, length=nan, length_se=nan, theta_star=truth,
                    bias=nan, sd=nan, se_ratio=nan)
    covered = (lo <= truth) & (truth <= hi)
    coverage = float(covered.mean())
    lengths = set_length(lo, hi)  # an empty set (NPRR's, lo > hi) has length 0
    length = float(lengths.mean())
    sd = float(est.std(ddof=1)) if r > 1 else math.nan
    return dict(
        coverage=coverage,
        coverage_se=math.sqrt(coverage * (1.0 - coverage) / r),
        length=length,
        length_se=float(lengths.std(ddof=1)) / math.sqrt(r) if r > 1 else math.nan,
        theta_star=truth,
        bias=float(est.mean()) - truth,
        sd=sd,
        se_ratio=length / (2.0 * z) / sd if r > 1 and sd > 0 else math.nan,
    )


def key_columns(rows: list[dict]) -> list[str]:
    """The config-key columns of summary rows (everything before ``method``)."""
    return columns_before(rows, "method")


__all__ = ["STAT_COLUMNS", "key_columns", "method_mask", "summarize"]
