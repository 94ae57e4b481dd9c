"""Summaries of the DP-SGD study: intervals, accuracy and privacy, each statistic with its standard error.

* ``summary``: one row per setting x method (DP-GD: x T2) x coordinate with
  the coverage study's columns (:data:`ldpsim.studies.base.STAT_COLUMNS`),
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
  noise ``sigma_1``, the accountant and ``epsilon``, the guarantee the run
  claims at ``delta`` for everything one analysis releases (the path, and
  ``A~``, ``S~`` when an interval method uses them; ``bound`` says whether
  it is a valid upper bound or the CLT's approximation), ``epsilon_path``
  (the path alone), and for the same noise every accountant's epsilon of
  the path (``eps_clt``, ``eps_rdp``, ``eps_pld``, ``eps_gdp``) and of the
  whole release (``eps_total_*``), blank where one does not apply
  (:data:`ldpsim.privacy.accountants.SUPPORTED`); DP-GD's own guarantee
  (``epsilon_dpgd``, exact); the clipping rates.
"""

from __future__ import annotations

import math

import numpy as np

from ...engine.runs.config import Config
from ...inference.intervals import normal_quantile
from ...privacy.accountants import ACCOUNTANTS, IS_BOUND, SUPPORTED, Unresolved, epsilon_pair
from ...privacy.clt import NEIGHBOURS, clt_mu
from ...privacy.gdp import compose, gdp_epsilon
from ...reporting.stats import mean_se, proportion
from ..base import STAT_COLUMNS
from .calibration import PRIVATE_MOMENT_METHODS, calibrate, dpgd_mu, output_columns, path_target, undefined_methods


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


#: Columns of a privacy row that a varied key of the same name would otherwise repeat.
OWN_COLUMNS = ("sampling", "delta", "accountant", "epsilon", "budget_of", "mu_var", "clip")


def privacy_row(keys, setting, methods, cal, chunk) -> dict:
    """The privacy of one setting's release at its ``delta`` (module docstring), with the clipping rates."""
    moments = any(m in PRIVATE_MOMENT_METHODS for m in methods)
    extra = setting.mu_var if moments else 0.0
    delta = setting.delta
    mu_clt = clt_mu(cal.sigma, cal.q, cal.steps, setting.sampling) if cal.sigma > 0 else math.inf
    # the row's own columns come after the varied keys they repeat (epsilon there is the claim, not the key)
    row = {**{k: v for k, v in keys.items() if k not in OWN_COLUMNS}, "n": setting.n, "T": cal.steps, "sampling": setting.sampling, "q": cal.q,
           "neighbours": NEIGHBOURS[setting.sampling], "sigma": cal.sigma, "sigma1": cal.sigma1, "clip": setting.clip,
           "delta": delta, "accountant": setting.accountant,
           "bound": "upper bound" if IS_BOUND[setting.accountant] else "approximation (CLT)",
           "epsilon": math.nan, "epsilon_path": math.nan, "epsilon_target": path_target(setting),
           "budget_of": setting.budget_of,
           "mu_clt": mu_clt, "mu_var": setting.mu_var if moments else math.nan,
           "mu_total_clt": compose(mu_clt, extra) if moments else mu_clt}
    for name in ACCOUNTANTS:
        alone = total = math.nan
        if setting.sampling in SUPPORTED[name]:
            try:
                alone, total = epsilon_pair(name, setting.sampling, cal.sigma, cal.steps, setting.n,
                                            setting.batch_size, delta, extra)
            except Unresolved:  # another accountant's column, which PLD cannot resolve at this delta: blank
                pass
        row[f"eps_{name}"], row[f"eps_total_{name}"] = alone, total
    row["epsilon_path"] = row[f"eps_{setting.accountant}"]
    row["epsilon"] = row[f"eps_total_{setting.accountant}"]
    # each DP-GD run is its own release: T2 full-batch Gaussian steps and its own A~, S~, composed exactly in GDP
    gd = dpgd_mu(setting)
    row["epsilon_dpgd"] = (gdp_epsilon(compose(gd, setting.mu_var), delta) if not math.isinf(compose(gd, setting.mu_var))
                           else math.inf) if "DPGD" in methods else math.nan
    ok = chunk["ok"]
    row["clip_rate_path"], row["clip_rate_path_se"] = mean_se(chunk["clip_path"][ok])
    row["clip_rate_star"], row["clip_rate_star_se"] = mean_se(chunk["clip_star"][ok])
    return row


def summarize(config: Config, chunks: list[dict]) -> dict[str, list[dict]]:
    """``summary``, ``accuracy`` and ``privacy`` rows of a finished run."""
    keys = [k for k in config.varied if k != "n"]
    columns = output_columns(config.options)
    methods = config.options["methods"]
    joint = True
    rows, accuracy, privacy = [], [], []
    for setting, chunk in zip(config.settings, chunks):
        cal = calibrate(setting, methods)
        ident = {k: getattr(setting, k) for k in keys}
        ok = chunk["ok"]
        reps, failed = int(ok.sum()), int((~ok).sum())
        truth = chunk["theta_star"][ok]
        z = normal_quantile(setting.level)
        undefined = undefined_methods(setting, methods)
        for j, (method, t2) in enumerate(columns):
            if method in undefined:  # no interval on a deterministic path (the warning said so)
                continue
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
        privacy.append(privacy_row(ident, setting, methods, cal, chunk))
    return {"summary": rows, "accuracy": accuracy, "privacy": privacy}


__all__ = ["STAT_COLUMNS", "accuracy_row", "interval_stats", "privacy_row", "ratio_of_means", "summarize"]
