"""The trajectory study's figures: log-log mean distance against k, one file per metric.

Two layouts. By default a panel per setting with both estimators, +-2 SE
bands, the theoretical slope (dashed), the linearized recursion (dotted) and
the noise-free path (dash-dotted, the decay of the initial error).
With ``panels: KEY`` (004's Figures 4-6) a column of panels per value of
``KEY`` and a row per estimator, a curve per remaining setting; with
``figure_per: KEY`` one file per value of ``KEY``.
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

#: File name of the figure of the ``parameter`` metric (others: ``trajectory_<metric>.png``).
FIGURE = "trajectory.png"
#: Colour of each estimator.
_COLOURS = {"last": "tab:red", "average": "tab:blue"}
_LABELS = {"last": "last iterate", "average": "average"}
_YLABEL = {"parameter": "E ||. - theta*||^2", "loss": "E F(.) - F(theta*)"}


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _series(pts, column):
    return np.array([r[column] if _finite(r.get(column)) else np.nan for r in pts], dtype=float)


def _file_name(metric: str, split: tuple | None) -> str:
    stem = "trajectory" if metric == "parameter" else f"trajectory_{metric}"
    if split is not None:
        key, value = split
        stem += f"_{key}-{value:g}" if isinstance(value, float) else f"_{key}-{value}"
    return stem + ".png"


def _label(keys, ident) -> str:
    return ", ".join(f"{k} = {v}" for k, v in zip(keys, ident) if v not in (None, "")) or "all settings"


def write_figure(out: Path, tables: dict[str, list[dict]], title: str = "", panels: str | None = None,
                 figure_per: str | None = None) -> list[str]:
    """Draw one figure per metric (and per value of ``figure_per``) into ``out``; their names.

    ``[]`` with one line on stderr if matplotlib is missing.
    """
    try:
        Figure = figure_class("trajectory.png")
    except MissingExtra as exc:
        print(f"ldpsim: figure skipped: {exc}", file=sys.stderr)
        return []
    rows, rates = tables["summary"], tables["rates"]
    keys = columns_before(rows, "estimator")
    written = []
    metrics = list(dict.fromkeys(r.get("metric", "parameter") for r in rows))
    splits = [None]
    if figure_per in keys:
        splits = [(figure_per, v) for v in dict.fromkeys(r[figure_per] for r in rows)]
    for metric in metrics:
        for split in splits:
            sub = [r for r in rows if r.get("metric", "parameter") == metric
                   and (split is None or r[split[0]] == split[1])]
            sub_rates = [r for r in rates if r.get("metric", "parameter") == metric
                         and (split is None or r[split[0]] == split[1])]
            name = _file_name(metric, split)
            heading = title + (f", {split[0]} = {split[1]}" if split else "")
            if panels in keys:
                _draw_grid(Figure, out / name, sub, keys, panels, metric, heading, [k for k in keys if k != figure_per])
            else:
                _draw_settings(Figure, out / name, sub, sub_rates, [k for k in keys if k != figure_per], metric,
                               heading)
            written.append(name)
    return written


def _loggable(values) -> bool:
    """Whether a series has a value a log axis can show (positive and finite)."""
    values = np.asarray(values, dtype=float)
    return bool((np.isfinite(values) & (values > 0)).any())


def _log_axes(ax, drawn: bool) -> None:
    """Log-log axes; a panel with nothing to show (every replication failed) says so on linear ones."""
    if drawn:
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:  # matplotlib cannot log-scale axes of NaN
        ax.text(0.5, 0.5, "no replication gave numbers\n(n_failed in summary.csv)", transform=ax.transAxes,
                ha="center", va="center", fontsize=8)


def _draw_settings(Figure, path, rows, rates, keys, metric, title):
    """A panel per setting, both estimators, theory (dashed) and linearized (dotted) lines."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    count = len(groups)
    cols = 2 if count in (2, 4) else min(count, 3)
    nrows = math.ceil(count / cols)
    fig = Figure(figsize=(4.4 * cols, 3.6 * nrows + 0.5), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, cols, squeeze=False)).ravel()
    for ax, (ident, panel) in zip(axes, groups.items()):
        drawn = False
        for estimator in ("last", "average"):
            pts = sorted((r for r in panel if r["estimator"] == estimator), key=lambda r: r["k"])
            if not pts:
                continue
            k, m, se = _series(pts, "k"), _series(pts, "distance"), _series(pts, "distance_se")
            drawn |= _loggable(m)
            colour = _COLOURS[estimator]
            rate = next((r for r in rates if r["estimator"] == estimator
                         and tuple(r[c] for c in keys) == ident), None)
            label = _LABELS[estimator]
            if rate is not None and _finite(rate["slope"]):
                label += f": slope {rate['slope']:.2f}"
            ax.plot(k, m, color=colour, linewidth=1.3, label=label)
            lo = np.where(m - 2 * se > 0, m - 2 * se, np.nan)
            ax.fill_between(k, lo, m + 2 * se, color=colour, alpha=0.2, linewidth=0)
            lin = _series(pts, "linearized")
            if _loggable(lin) and drawn:
                ax.plot(k, lin, color=colour, linestyle=":", linewidth=1.0, label="linearized recursion")
            trans = _series(pts, "transient")
            if _loggable(trans) and drawn:
                ax.plot(k, trans, color=colour, linestyle="-.", linewidth=0.8, alpha=0.7, label="noise-free path")
            theory = rate.get("theory") if rate is not None else None
            if _finite(theory) and np.isfinite(m[-1]):
                window = k >= rate["k_from"]
                ax.plot(k[window], m[-1] * (k[window] / k[-1]) ** theory, color=colour, linestyle="--",
                        linewidth=1.0, label=f"theory k^{theory:.3g}")
        _log_axes(ax, drawn)
        ax.set_xlabel("k (steps)")
        ax.set_ylabel(_YLABEL.get(metric, metric))
        ax.set_title(_label(keys, ident), fontsize=8)
        ax.grid(alpha=0.3, which="both")
        if drawn:
            ax.legend(fontsize=6)
    for ax in axes[count:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(textwrap.fill(title + " (bands: +-2 SE)", 40 * cols + 20), fontsize=9)
    fig.savefig(path, dpi=120)


def _draw_grid(Figure, path, rows, keys, panels, metric, title, curve_keys):
    """Rows: estimators; columns: values of ``panels``; a curve per value of the other keys."""
    values = list(dict.fromkeys(r[panels] for r in rows))
    others = [k for k in curve_keys if k != panels]
    curves = list(dict.fromkeys(tuple(r[k] for k in others) for r in rows))
    colours = [f"C{i % 10}" for i in range(len(curves))]
    fig = Figure(figsize=(3.6 * len(values), 6.4 + 0.6), layout="constrained")
    axes = fig.subplots(2, len(values), squeeze=False)
    for col, value in enumerate(values):
        for row, estimator in enumerate(("last", "average")):
            ax = axes[row, col]
            drawn = False
            for colour, ident in zip(colours, curves):
                pts = sorted((r for r in rows if r[panels] == value and r["estimator"] == estimator
                              and tuple(r[k] for k in others) == ident), key=lambda r: r["k"])
                if not pts:
                    continue
                k, m, se = _series(pts, "k"), _series(pts, "distance"), _series(pts, "distance_se")
                drawn |= _loggable(m)
                ax.plot(k, m, color=colour, linewidth=1.2, label=_label(others, ident))
                lo = np.where(m - 2 * se > 0, m - 2 * se, np.nan)
                ax.fill_between(k, lo, m + 2 * se, color=colour, alpha=0.15, linewidth=0)
            _log_axes(ax, drawn)
            ax.set_xlabel("k (steps)")
            ax.set_ylabel(f"{_LABELS[estimator]}: {_YLABEL.get(metric, metric)}", fontsize=8)
            ax.set_title(f"{panels} = {value:.4g}" if isinstance(value, float) else f"{panels} = {value}",
                         fontsize=9)
            ax.grid(alpha=0.3, which="both")
            if row == 0 and col == 0 and drawn:
                ax.legend(fontsize=6)
    if title:
        fig.suptitle(textwrap.fill(title + " (bands: +-2 SE)", 32 * len(values) + 20), fontsize=9)
    fig.savefig(path, dpi=120)


__all__ = ["FIGURE", "write_figure"]
