"""Figures of the DP-SGD study, shaped like 002's Figures 1-3.

* ``coverage_length.png`` (Figure 2), when ``n`` takes several values: per
  group of the other varied keys, coverage (averaged over the coordinates,
  +-2 SE, the nominal level drawn) and mean length against ``n``, a line per method.
* ``mse_iterations.png`` (Figure 1), when ``kappa`` varies: E||theta_bar_T - theta*||^2
  against ``T``, a line per setting of the other keys, the full-sample (OLS /
  MLE) MSE as a horizontal line.
* ``dpsgd_vs_dpgd.png`` (Figure 3), when the DPGD method ran: RMSE, coverage
  and length of DP-SGD's corrected plug-in against ``kappa`` (top axis) and
  of DP-GD against ``T2`` (bottom axis).
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import numpy as np

from ...engine.errors import MissingExtra
from ...reporting.csvio import columns_before
from ...reporting.figures import figure_class

_COLOURS = {"plugin": "tab:blue", "plugin_raw": "tab:cyan", "RS": "tab:red", "RS_raw": "tab:pink",
            "RS_paper": "tab:orange", "oracle": "black", "BB": "tab:green", "BM": "tab:olive", "DPGD": "tab:purple"}


def _level(rows) -> float | None:
    levels = {r.get("level") for r in rows if isinstance(r.get("level"), float)}
    return levels.pop() if len(levels) == 1 else None


def _average(rows, stat):
    """Mean over coordinates of ``stat`` and a conservative SE (the mean of the SEs: coordinates correlate)."""
    vals = [r[stat] for r in rows]
    ses = [r[f"{stat}_se"] for r in rows]
    return float(np.mean(vals)), float(np.mean(ses))


def _coverage_length(Figure, out, rows, title, level):
    keys = [k for k in columns_before(rows, "method")]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["method"] != "DPGD":
            groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    fig = Figure(figsize=(10, 3.2 * len(groups) + 0.6), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(groups), 2, squeeze=False))
    for (ax_c, ax_l), (ident, group) in zip(axes, groups.items()):
        methods = list(dict.fromkeys(r["method"] for r in group))
        for method in methods:
            by_n: dict[int, list[dict]] = {}
            for r in group:
                if r["method"] == method:
                    by_n.setdefault(r["n"], []).append(r)
            ns = sorted(by_n)
            cov = np.array([_average(by_n[n], "coverage") for n in ns])
            length = np.array([_average(by_n[n], "length") for n in ns])
            colour = _COLOURS.get(method)
            style = "--" if method in ("plugin_raw", "RS_raw", "RS_paper") else "-"
            ax_c.errorbar(ns, cov[:, 0], yerr=2 * cov[:, 1], color=colour, linestyle=style, marker="o", ms=3,
                          capsize=2, label=method)
            ax_l.errorbar(ns, length[:, 0], yerr=2 * length[:, 1], color=colour, linestyle=style, marker="o", ms=3,
                          capsize=2, label=method)
        if level is not None:
            ax_c.axhline(level, color="grey", linewidth=0.8, linestyle=":")
        name = ", ".join(f"{k} = {v}" for k, v in zip(keys, ident)) or "all settings"
        ax_c.set_title(f"coverage: {name}", fontsize=9)
        ax_l.set_title(f"mean length: {name}", fontsize=9)
        ax_l.set_yscale("log")
        for ax in (ax_c, ax_l):
            ax.set_xlabel("n")
            ax.grid(alpha=0.3)
        ax_c.set_ylim(max(0.0, ax_c.get_ylim()[0]), 1.005)
        ax_c.legend(fontsize=7, ncol=2)
    if title:
        fig.suptitle(textwrap.fill(title + " (coverage averaged over coordinates; bars +-2 SE)", 160), fontsize=8)
    fig.savefig(out / "coverage_length.png", dpi=110)
    return ["coverage_length.png"]


def _mse_iterations(Figure, out, accuracy, title):
    keys = [k for k in columns_before(accuracy, "estimator") if k not in ("kappa", "n")]
    # a log axis holds positive values only: a setting whose replications all failed (NaN) is left out
    rows = [r for r in accuracy if r["estimator"] in ("DP-SGD", "oracle") and r["mse"] > 0 and math.isfinite(r["mse"])]
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    ax = fig.subplots()
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["estimator"] == "DP-SGD":
            groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    for ident, group in groups.items():
        group = sorted(group, key=lambda r: r["T"])
        t = np.array([r["T"] for r in group], dtype=float)
        m = np.array([r["mse"] for r in group])
        se = np.array([r["mse_se"] for r in group])
        shown = [(k, v) for k, v in zip(keys, ident) if k != "mu_var"]
        label = ", ".join(f"{k} = {v}" for k, v in shown) or "DP-SGD"
        line = ax.plot(t, m, marker="o", ms=3, label=label)[0]
        ax.fill_between(t, m - 2 * se, m + 2 * se, color=line.get_color(), alpha=0.2, linewidth=0)
        named = dict(zip(keys, ident))
        if named.get("sampling") == "cyclic" and named.get("mu", math.inf) == math.inf:
            # 002 draws cyclic SGD as one pass (T = n), a horizontal line
            ax.axhline(m[0], color=line.get_color(), linestyle="--", linewidth=1.0,
                       label=f"cyclic, one pass (T = {int(t[0]):,}), as Xia et al. draw it")
    oracle = [r for r in rows if r["estimator"] == "oracle"]
    if oracle:
        m, se = float(np.mean([r["mse"] for r in oracle])), float(np.mean([r["mse_se"] for r in oracle]))
        ax.axhline(m, color="red", linewidth=1.2, label="full sample (OLS / MLE)")
        ax.axhspan(m - 2 * se, m + 2 * se, color="red", alpha=0.1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("T (iterations)")
    ax.set_ylabel("E ||estimate - theta*||^2")
    ax.grid(alpha=0.3, which="both")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    if title:
        ax.set_title(textwrap.fill(title + " (bands +-2 SE)", 90), fontsize=7)
    fig.savefig(out / "mse_iterations.png", dpi=110)
    return ["mse_iterations.png"]


def _dpsgd_vs_dpgd(Figure, out, rows, accuracy, title, level):
    sgd = [r for r in rows if r["method"] == "plugin" and "kappa" in r]
    gd = [r for r in rows if r["method"] == "DPGD"]
    if not gd:
        return []
    # DP-GD does not depend on kappa: take its rows from the setting with the largest kappa
    if "kappa" in gd[0]:
        top = max(r["kappa"] for r in gd)
        gd = [r for r in gd if r["kappa"] == top]
    acc_sgd = sorted((r for r in accuracy if r["estimator"] == "DP-SGD" and "kappa" in r), key=lambda r: r["kappa"])
    acc_gd = [r for r in accuracy if r["estimator"] == "DPGD" and (("kappa" not in r) or r["kappa"] == max(
        q["kappa"] for q in accuracy if "kappa" in q))]
    fig = Figure(figsize=(13, 3.8), layout="constrained")
    axes = fig.subplots(1, 3)
    t2 = sorted({r["T"] for r in gd})
    gd_stats = {
        "RMSE": [(next(a for a in acc_gd if a["T"] == t)["rmse"], next(a for a in acc_gd if a["T"] == t)["rmse_se"])
                 for t in t2],
        "coverage": [_average([r for r in gd if r["T"] == t], "coverage") for t in t2],
        "length": [_average([r for r in gd if r["T"] == t], "length") for t in t2],
    }
    kappas = sorted({r["kappa"] for r in sgd})
    sgd_stats = {
        "RMSE": [(a["rmse"], a["rmse_se"]) for a in acc_sgd],
        "coverage": [_average([r for r in sgd if r["kappa"] == k], "coverage") for k in kappas],
        "length": [_average([r for r in sgd if r["kappa"] == k], "length") for k in kappas],
    }
    for ax, stat in zip(axes, ("RMSE", "coverage", "length")):
        g = np.array(gd_stats[stat])
        ax.errorbar(t2, g[:, 0], yerr=2 * g[:, 1], color=_COLOURS["DPGD"], marker="s", ms=3, capsize=2,
                    label="DP-GD (bottom axis: T2)")
        ax.set_xlabel("T2 (DP-GD iterations)")
        top = ax.twiny()
        if kappas:
            s = np.array(sgd_stats[stat])
            top.errorbar(kappas, s[:, 0], yerr=2 * s[:, 1], color=_COLOURS["plugin"], marker="o", ms=3, capsize=2,
                         label="DP-SGD, corrected plug-in (top axis: kappa)")
        top.set_xlabel("kappa (DP-SGD: T1 = n^kappa)")
        if stat == "coverage" and level is not None:
            ax.axhline(level, color="grey", linestyle=":", linewidth=0.8)
        ax.set_title(stat, fontsize=9)
        ax.grid(alpha=0.3)
        lines = ax.get_legend_handles_labels()
        tops = top.get_legend_handles_labels()
        ax.legend(lines[0] + tops[0], lines[1] + tops[1], fontsize=7)
    if title:
        fig.suptitle(textwrap.fill(title + " (bars +-2 SE; coverage and length averaged over coordinates)", 200), fontsize=8)
    fig.savefig(out / "dpsgd_vs_dpgd.png", dpi=110)
    return ["dpsgd_vs_dpgd.png"]


def write_figures(out: Path, tables: dict[str, list[dict]], title: str = "", level: float | None = None) -> list[str]:
    """Draw the figures that the run's shape calls for; ``[]`` with one stderr line without matplotlib."""
    rows, accuracy = tables["summary"], tables.get("accuracy", [])
    want_cov = len({r["n"] for r in rows}) > 1
    want_mse = bool(accuracy) and "kappa" in columns_before(accuracy, "estimator") \
        and not any(r["method"] == "DPGD" for r in rows)
    want_gd = any(r["method"] == "DPGD" for r in rows)
    if not (want_cov or want_mse or want_gd):
        return []
    try:
        Figure = figure_class("the DP-SGD figures")
    except MissingExtra as exc:
        print(f"ldpsim: figures skipped: {exc}", file=sys.stderr)
        return []
    level = level if level is not None else _level(rows)
    files = []
    if want_cov:
        files += _coverage_length(Figure, out, rows, title, level)
    if want_mse:
        files += _mse_iterations(Figure, out, accuracy, title)
    if want_gd:
        files += _dpsgd_vs_dpgd(Figure, out, rows, accuracy, title, level)
    return files


__all__ = ["write_figures"]
