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

import csv
import math
from pathlib import Path


from .config import Config
from .replication import ChunkResult
from .inference import normal_quantile
from .models import build_model

#: Columns after the varied config keys, in order. Runs with a multivariate
#: model add ``joint_coverage`` and ``joint_coverage_se``: the share of
#: replications whose intervals cover every coordinate at once (the same on
#: each coordinate's row of a method).
STAT_COLUMNS = (
    "method", "coord", "n", "reps", "n_failed", "coverage", "coverage_se", "length", "length_se",
    "theta_star", "bias", "sd", "se_ratio",
)


def summarize(config: Config, results: list[ChunkResult]) -> list[dict]:
    """Summary rows of a finished run.

    Parameters
    ----------
    config : Config
        The run.
    results : list of ChunkResult
        One per setting, as returned by :func:`ldpsim.driver.simulate`.

    Returns
    -------
    list of dict
        Keys: the varied config keys but ``n``, then :data:`STAT_COLUMNS`
        (and the joint coverage, for multivariate models).
    """
    keys = [k for k in config.varied if k != "n"]
    # simultaneous coverage only means something with more than one coordinate
    joint = any(r.theta_bar.shape[1] > 1 for r in results)
    rows = []
    for setting, res in zip(config.settings, results):
        theta_star = build_model(setting).theta_star()
        ok = res.ok
        reps, failed = int(ok.sum()), int((~ok).sum())
        z = normal_quantile(setting.level)
        for j, method in enumerate(config.methods):
            lo_all, hi_all = res.bounds[ok, j, :, 0], res.bounds[ok, j, :, 1]
            all_covered = ((lo_all <= theta_star) & (theta_star <= hi_all)).all(axis=1)
            for coord in range(theta_star.shape[0]):
                est = res.theta_bar[ok, coord]
                row = {k: getattr(setting, k) for k in keys}
                row.update(method=method, coord=coord, n=setting.n, reps=reps, n_failed=failed)
                row.update(_stats(est, lo_all[:, coord], hi_all[:, coord], float(theta_star[coord]), z))
                if joint:
                    row.update(_proportion("joint_coverage", all_covered))
                rows.append(row)
    return rows


def _proportion(name: str, hits) -> dict:
    r = len(hits)
    p = float(hits.mean()) if r else math.nan
    return {name: p, f"{name}_se": math.sqrt(p * (1.0 - p) / r) if r else math.nan}


def _stats(est, lo, hi, truth, z) -> dict:
    r = est.shape[0]
    if r == 0:
        nan = math.nan
        return dict(coverage=nan, coverage_se=nan, length=nan, length_se=nan, theta_star=truth,
                    bias=nan, sd=nan, se_ratio=nan)
    covered = (lo <= truth) & (truth <= hi)
    coverage = float(covered.mean())
    lengths = hi - lo
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


def write_csv(rows: list[dict], path: Path) -> None:
    """Write rows; floats as ``repr`` so the file is a pure function of the numbers."""
    if not rows:
        raise ValueError("no summary rows to write")
    columns = list(rows[0])
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([repr(v) if isinstance(v, float) else v for v in (row[c] for c in columns)])


def _parse(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_csv(path: Path) -> list[dict]:
    """Read a ``summary.csv`` back into rows with numbers parsed."""
    with open(path, newline="") as fh:
        return [{k: (v if k == "method" else _parse(v)) for k, v in row.items()} for row in csv.DictReader(fh)]


def key_columns(rows: list[dict]) -> list[str]:
    """The config-key columns of summary rows (everything before ``method``)."""
    columns = list(rows[0])
    return columns[: columns.index("method")]


__all__ = ["STAT_COLUMNS", "key_columns", "read_csv", "summarize", "write_csv"]
