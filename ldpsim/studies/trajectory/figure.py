"""The trajectory study's figure: log-log mean squared distance against k, one panel per setting."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from ...engine.errors import MissingExtra
from ...reporting.csvio import columns_before
from ...reporting.figures import figure_class

#: File name of the figure.
FIGURE = "trajectory.png"
#: Colour of each estimator.
_COLOURS = {"last": "tab:red", "average": "tab:blue"}
_LABELS = {"last": "last iterate", "average": "average"}


def write_figure(out: Path, tables: dict[str, list[dict]], title: str = "") -> list[str]:
    """Draw :data:`FIGURE` into ``out``; ``[]`` with one line on stderr if matplotlib is missing."""
    try:
        Figure = figure_class("trajectory.png")
    except MissingExtra as exc:
        print(f"ldpsim: figure skipped: {exc}", file=sys.stderr)
        return []
    rows, rates = tables["summary"], tables["rates"]
    keys = columns_before(rows, "estimator")
    panels: dict[tuple, list[dict]] = {}
    for r in rows:
        panels.setdefault(tuple(r[k] for k in keys), []).append(r)
    count = len(panels)
    cols = 2 if count in (2, 4) else min(count, 3)
    nrows = math.ceil(count / cols)
    fig = Figure(figsize=(4.4 * cols, 3.6 * nrows + 0.5), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, cols, squeeze=False)).ravel()
    for ax, (ident, panel) in zip(axes, panels.items()):
        for estimator in ("last", "average"):
            pts = sorted((r for r in panel if r["estimator"] == estimator), key=lambda r: r["k"])
            if not pts:
                continue
            k = np.array([r["k"] for r in pts], dtype=float)
            m = np.array([r["distance"] for r in pts], dtype=float)
            se = np.array([r["distance_se"] for r in pts], dtype=float)
            colour = _COLOURS[estimator]
            rate = next((r for r in rates if r["estimator"] == estimator
                         and tuple(r[c] for c in keys) == ident), None)
            label = _LABELS[estimator]
            if rate is not None and math.isfinite(rate["slope"]):
                label += f": slope {rate['slope']:.2f}"
            ax.plot(k, m, color=colour, linewidth=1.3, label=label)
            lo = np.where(m - 2 * se > 0, m - 2 * se, np.nan)
            ax.fill_between(k, lo, m + 2 * se, color=colour, alpha=0.2, linewidth=0)
            theory = rate.get("theory") if rate is not None else None
            if isinstance(theory, (int, float)) and math.isfinite(theory):
                window = k >= rate["k_from"]
                ax.plot(k[window], m[-1] * (k[window] / k[-1]) ** theory, color=colour, linestyle="--",
                        linewidth=1.0, label=f"theory k^{theory:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("k (steps)")
        ax.set_ylabel("E ||. - theta*||^2")
        ax.set_title(", ".join(f"{k} = {v}" for k, v in zip(keys, ident)) or "all settings", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    for ax in axes[count:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title + " (bands: +-2 SE)", fontsize=9)
    fig.savefig(out / FIGURE, dpi=120)
    return [FIGURE]


__all__ = ["FIGURE", "write_figure"]
