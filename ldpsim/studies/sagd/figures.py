"""Figures of the SAGD studies (matplotlib; skipped with one stderr line in an environment that lacks it)."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import numpy as np

from ...engine.errors import MissingExtra
from ...reporting.figures import figure_class


#: Above this many points in a panel a legend goes to a fixed corner instead of the emptiest place.
LEGEND_SEARCH_POINTS = 4000


def _figure(what: str):
    try:
        return figure_class(what)
    except MissingExtra as exc:
        print(f"ldpsim: figure skipped: {exc}", file=sys.stderr)
        return None


def _suptitle(fig, text: str, width: int) -> None:
    fig.suptitle(textwrap.fill(text, width), fontsize=8)


def _panels(rows, split):
    panels: dict[tuple, list[dict]] = {}
    for r in rows:
        panels.setdefault(tuple(r.get(k) for k in split), []).append(r)
    return panels


def _grid(fig, count):
    cols = min(count, 2)
    nrows = math.ceil(count / cols)
    return np.atleast_1d(fig.subplots(nrows, cols, squeeze=False)).ravel()


def concentration_figure(out: Path, tables: dict, title: str = "") -> list[str]:
    """``concentration.png``: frequency against mu per sigma (log scale), the bound dashed, a panel per oracle."""
    Figure = _figure("concentration.png")
    if Figure is None:
        return []
    rows = tables["summary"]
    split = [k for k in rows[0] if k not in ("sigma",) and list(rows[0]).index(k) <= list(rows[0]).index("oracle")]
    panels = _panels(rows, split)
    fig = Figure(figsize=(5.2 * min(len(panels), 2), 3.8 * math.ceil(len(panels) / 2) + 0.4), layout="constrained")
    for ax, (ident, panel) in zip(_grid(fig, len(panels)), panels.items()):
        sigmas = sorted({r["sigma"] for r in panel})
        for i, sigma in enumerate(sigmas):
            pts = sorted((r for r in panel if r["sigma"] == sigma), key=lambda r: r["mu"])
            mu = np.array([r["mu"] for r in pts])
            f = np.array([r["frequency"] for r in pts])
            se = np.array([r["frequency_se"] for r in pts])
            colour = f"C{i}"
            ax.plot(mu, np.where(f > 0, f, np.nan), "o-", color=colour, label=f"sigma = {sigma:g}", markersize=3)
            ax.fill_between(mu, np.where(f - 2 * se > 0, f - 2 * se, np.nan), f + 2 * se, color=colour, alpha=0.15)
            ax.plot(mu, [r["bound"] for r in pts], "--", color=colour, linewidth=0.9)
        ax.set_yscale("log")
        ax.set_xlabel("mu")
        ax.set_ylabel("P(||g~ - g|| >= sqrt(d) sigma (1 + mu))")
        ax.set_title(", ".join(f"{k} = {v}" for k, v in zip(split, ident)), fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, title="dashed: d beta + d e^-mu", title_fontsize=7)
    if title:
        _suptitle(fig, title + " (bands: +-2 SE; zero frequencies not drawn)", 70 * min(len(panels), 2))
    fig.savefig(out / "concentration.png", dpi=120)
    return ["concentration.png"]


def rate_figure(out: Path, tables: dict, title: str = "") -> list[str]:
    """``rate.png``: E[min_t ||grad f||^2] and E[mean_t ||grad f||^2] against n (log-log), fitted and -2/3 lines."""
    Figure = _figure("rate.png")
    if Figure is None:
        return []
    rows, rates = tables["summary"], tables.get("rates", [])
    columns = list(rows[0])
    split = columns[: columns.index("estimator")]
    panels = _panels(rows, split)
    fig = Figure(figsize=(5.2 * min(len(panels), 2), 3.8 * math.ceil(len(panels) / 2) + 0.4), layout="constrained")
    for ax, (ident, panel) in zip(_grid(fig, len(panels)), panels.items()):
        for estimator, colour in (("min", "tab:red"), ("mean", "tab:blue")):
            # a log axis holds positive values only: a setting whose replications all failed (NaN) is left out
            pts = sorted((r for r in panel if r["estimator"] == estimator and r["grad_norm2"] > 0
                          and math.isfinite(r["grad_norm2"])), key=lambda r: r["n"])
            if not pts:
                continue
            n = np.array([r["n"] for r in pts], dtype=float)
            m = np.array([r["grad_norm2"] for r in pts])
            se = np.array([r["grad_norm2_se"] for r in pts])
            rate = next((r for r in rates if r["estimator"] == estimator and all(r.get(k) == v for k, v in
                                                                                  zip(split, ident))), None)
            label = f"{estimator}_t ||grad f||^2"
            if rate is not None and math.isfinite(rate["slope"]):
                label += f": slope {rate['slope']:.2f} [{rate['slope_lo']:.2f}, {rate['slope_hi']:.2f}]"
            ax.errorbar(n, m, yerr=2 * se, fmt="o-", color=colour, markersize=3, capsize=2, label=label)
            ax.plot(n, m[-1] * (n / n[-1]) ** (-2.0 / 3.0), ":", color=colour, linewidth=1.0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n")
        ax.set_ylabel("E[.]")
        ax.set_title(", ".join(f"{k} = {v}" for k, v in zip(split, ident)) + " (dotted: n^-2/3)", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        if ax.get_legend_handles_labels()[0]:  # a panel whose replications all failed has nothing to label
            ax.legend(fontsize=7)
    if title:
        _suptitle(fig, title + " (bars: +-2 SE)", 70 * min(len(panels), 2))
    fig.savefig(out / "rate.png", dpi=120)
    return ["rate.png"]


def generalization_figure(out: Path, tables: dict, title: str = "") -> list[str]:
    """``generalization.png``: train (dashed) and test (solid) loss against epoch per method, a panel per setting."""
    Figure = _figure("generalization.png")
    if Figure is None:
        return []
    rows = tables["summary"]
    columns = list(rows[0])
    split = columns[: columns.index("method")]
    panels = _panels(rows, split)
    fig = Figure(figsize=(5.6 * min(len(panels), 2), 4.0 * math.ceil(len(panels) / 2) + 0.4), layout="constrained")
    for ax, (ident, panel) in zip(_grid(fig, len(panels)), panels.items()):
        methods = list(dict.fromkeys(r["method"] for r in panel))
        for i, method in enumerate(methods):
            pts = sorted((r for r in panel if r["method"] == method), key=lambda r: r["epoch"])
            e = np.array([r["epoch"] for r in pts])
            te = np.array([r["test_loss"] for r in pts])
            se = np.array([r["test_loss_se"] for r in pts])
            colour = f"C{i}"
            ax.plot(e, te, "-", color=colour, label=f"{method}: test")
            ax.fill_between(e, te - 2 * se, te + 2 * se, color=colour, alpha=0.15)
            ax.plot(e, [r["train_loss"] for r in pts], "--", color=colour, linewidth=0.9, label=f"{method}: train")
        ax.axhline(panel[0]["f_star"], color="grey", linewidth=0.8, linestyle=":", label="f* (population minimum)")
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss")
        ax.set_title(", ".join(f"{k} = {v}" for k, v in zip(split, ident)) or "all settings", fontsize=9)
        ax.grid(alpha=0.3)
        # matplotlib's "best" place searches every point, and warns that it is slow past thousands of them
        ax.legend(fontsize=7, ncol=2, loc="best" if len(panel) <= LEGEND_SEARCH_POINTS else "upper right")
    if title:
        _suptitle(fig, title + " (bands: +-2 SE of the test loss)", 75 * min(len(panels), 2))
    fig.savefig(out / "generalization.png", dpi=120)
    return ["generalization.png"]


__all__ = ["concentration_figure", "generalization_figure", "rate_figure"]
