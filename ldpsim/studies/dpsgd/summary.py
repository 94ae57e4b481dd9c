"""Summaries of the DP-SGD study: intervals, accuracy and privacy, each statistic with its standard error.

* ``summary``: one row per setting x method (DP-GD: x T2) x coordinate with
  the coverage study's columns (:data:`ldpsim.studies.coverage.summary.STAT_COLUMNS`),
  then ``mse``, ``mse_se``, ``T`` (iterations behind the estimate: ``T`` of
  DP-SGD, ``T2`` of DP-GD, 0 for the oracle) and the joint coverage. theta* is
  drawn per replication: ``theta_star`` is its mean, ``bias`` and ``sd`` are
  those of the error ``estimate - theta*``.
* ``accuracy``: per setting and estimator (``DP-SGD``: theta_bar_T;
  ``oracle``: the full-sample fit; ``DPGD``), ``mse = E||estimate - theta*||^2``,
  ``rmse``, and the ratio of MSEs to the oracle's on the same samples, each
  with its SE (delta method for the ratio, with the covariance of the paired
  errors).
* ``privacy``: per setting, ``T``, the noise multiplier ``sigma`` and step
  noise ``sigma_1``, the budgets, the (epsilon, delta) that the CLT's mu
  implies and, with the ``accounting`` extra, dp-accounting's epsilon of
  the same sampled Gaussian mechanism, and the clipping rates.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ...engine.config import Config
from ...inference.intervals import normal_quantile
from ...privacy.accounting import NEIGHBOURS, dp_accounting_epsilons
from ...privacy.gdp import compose, gdp_delta, gdp_epsilon
from ...reporting.stats import mean_se, proportion
from ..coverage.summary import STAT_COLUMNS
from .calibration import PRIVATE_MOMENT_METHODS, calibrate, output_columns

#: The delta at which epsilons are reported.
DELTA = 1e-5


def interval_stats(est, lo, hi, truth, z) -> dict:
    """Coverage, length and error statistics of one coordinate over replications (``truth`` per replication)."""
    r = est.shape[0]
    if r == 0:
        nan = math.nan
        return dict(coverage=nan, coverage_se=nan, length=nan, length_se=nan, theta_star=nan, bias=nan, sd=nan,
                    se_ratio=nan, mse=nan, mse_se=nan)
    err = est - truth
    row = proportion("coverage", (lo <= truth) & (truth <= hi))
    length, length_se = mean_se(hi - lo)
    sd = float(err.std(ddof=1)) if r > 1 else math.nan
    mse, mse_se = mean_se(err * err)
    row.update(length=length, length_se=length_se, theta_star=float(truth.mean()), bias=float(err.mean()), sd=sd,
               se_ratio=length / (2.0 * z) / sd if r > 1 and sd > 0 else math.nan, mse=mse, mse_se=mse_se)
    return row


def ratio_of_means(num, den) -> tuple[float, float]:
    """``mean(num) / mean(den)`` with its delta-method SE (paired samples)."""
    r = num.shape[0]
    if r == 0:  # every replication failed: no numbers (and no numpy warning about an empty mean)
        return math.nan, math.nan
    a, b = float(num.mean()), float(den.mean())
    if r < 2 or b == 0:
        return (a / b if b else math.nan), math.nan
    cov = np.cov(np.stack([num, den]), ddof=1) / r
    g = np.array([1.0 / b, -a / (b * b)])
    return a / b, math.sqrt(max(float(g @ cov @ g), 0.0))


def accuracy_row(keys, estimator, steps, errors, oracle_errors, failed) -> dict:
    sq = np.einsum("rd,rd->r", errors, errors)
    sq_oracle = np.einsum("rd,rd->r", oracle_errors, oracle_errors)
    mse, mse_se = mean_se(sq)
    rmse = math.sqrt(mse) if mse >= 0 else math.nan
    ratio, ratio_se = ratio_of_means(sq, sq_oracle)
    return {**keys, "estimator": estimator, "T": int(steps), "reps": int(errors.shape[0]), "n_failed": int(failed),
            "mse": mse, "mse_se": mse_se, "rmse": rmse, "rmse_se": mse_se / (2.0 * rmse) if rmse > 0 else math.nan,
            "mse_ratio": ratio, "mse_ratio_se": ratio_se}


def privacy_row(keys, setting, methods, cal, chunk, accountant: bool) -> dict:
    private_moments = any(m in PRIVATE_MOMENT_METHODS for m in methods)
    mu = setting.mu
    total = compose(mu, setting.mu_var) if private_moments else mu
    row = {**keys, "n": setting.n, "T": cal.steps, "sampling": setting.sampling, "q": cal.q,
           "neighbours": NEIGHBOURS[setting.sampling], "sigma": cal.sigma, "sigma1": cal.sigma1, "clip": setting.clip,
           "mu": mu, "mu_var": setting.mu_var if private_moments else math.nan, "mu_total": total,
           "delta_at_eps1": gdp_delta(1.0, mu) if not math.isinf(mu) else 1.0,
           "eps_clt": gdp_epsilon(mu, DELTA) if not math.isinf(mu) else math.inf,
           "eps_total": gdp_epsilon(total, DELTA) if not math.isinf(total) else math.inf,
           "eps_rdp": math.nan, "eps_pld": math.nan}
    if accountant and not math.isinf(mu) and setting.sampling in ("swor", "poisson"):
        found = dp_accounting_epsilons(cal.sigma, cal.q, cal.steps, setting.sampling, DELTA, n=setting.n,
                                       batch_size=setting.batch_size)
        if found:
            row["eps_rdp"] = found.get("rdp", math.nan)
            row["eps_pld"] = found.get("pld", math.nan)
    ok = chunk["ok"]
    row["clip_rate_path"], row["clip_rate_path_se"] = mean_se(chunk["clip_path"][ok])
    row["clip_rate_star"], row["clip_rate_star_se"] = mean_se(chunk["clip_star"][ok])
    return row


def accountant_available() -> bool:
    """Whether dp-accounting is installed; says so in one line on stderr if not."""
    try:
        import dp_accounting  # noqa: F401
    except ImportError:
        print("ldpsim: dp-accounting comparison skipped: pip install 'ldpsim[accounting]'", file=sys.stderr)
        return False
    return True


def summarize(config: Config, chunks: list[dict]) -> dict[str, list[dict]]:
    """``summary``, ``accuracy`` and ``privacy`` rows of a finished run."""
    keys = [k for k in config.varied if k != "n"]
    columns = output_columns(config.options)
    methods = config.options["methods"]
    accountant = any(not math.isinf(s.mu) for s in config.settings) and accountant_available()
    joint = True
    rows, accuracy, privacy = [], [], []
    for setting, chunk in zip(config.settings, chunks):
        cal = calibrate(setting, methods)
        ident = {k: getattr(setting, k) for k in keys}
        ok = chunk["ok"]
        reps, failed = int(ok.sum()), int((~ok).sum())
        truth = chunk["theta_star"][ok]
        z = normal_quantile(setting.level)
        for j, (method, t2) in enumerate(columns):
            est = chunk["estimates"][ok, j]
            lo, hi = chunk["bounds"][ok, j, :, 0], chunk["bounds"][ok, j, :, 1]
            steps = t2 if method == "DPGD" else (0 if method == "oracle" else cal.steps)
            all_covered = ((lo <= truth) & (truth <= hi)).all(axis=1)
            for coord in range(truth.shape[1]):
                row = {**ident, "method": method, "coord": coord, "n": setting.n, "reps": reps, "n_failed": failed}
                row.update(interval_stats(est[:, coord], lo[:, coord], hi[:, coord], truth[:, coord], z))
                row["T"] = int(steps)
                if joint:
                    row.update(proportion("joint_coverage", all_covered))
                rows.append(row)
        ident_n = {**ident, "n": setting.n}
        oracle_err = chunk["oracle_est"][ok] - truth
        accuracy.append(accuracy_row(ident_n, "DP-SGD", cal.steps, chunk["theta_bar"][ok] - truth, oracle_err, failed))
        accuracy.append(accuracy_row(ident_n, "oracle", 0, oracle_err, oracle_err, failed))
        for j, (method, t2) in enumerate(columns):
            if method == "DPGD":
                accuracy.append(accuracy_row(ident_n, "DPGD", t2, chunk["estimates"][ok, j] - truth, oracle_err,
                                             failed))
        privacy.append(privacy_row(ident, setting, methods, cal, chunk, accountant))
    return {"summary": rows, "accuracy": accuracy, "privacy": privacy}


__all__ = ["DELTA", "STAT_COLUMNS", "accuracy_row", "interval_stats", "privacy_row", "ratio_of_means", "summarize"]
