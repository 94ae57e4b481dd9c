"""``coverage.png``: what a coverage run found, at a glance.

A panel per combination of the varied keys other than the x axis (``tau``,
``model``, ...) and, for multivariate models, per coordinate ``theta_j``; two
panels to a row, each panel a pair of plots under its label:

* **coverage** of each method against the x axis, with +-2 Monte Carlo SE
  bars (the SE of a proportion over the replications used) and the nominal
  level drawn as a dashed line (the diagonal, if ``level`` is the x axis);
* **mean length over the oracle's** (the interval with the true asymptotic
  variance, the yardstick) in the same setting, with +-2 SE bars and 1 drawn.
  The oracle's length is the same in every replication, so the bar is the
  method's length SE over it; were it not, the SE would come from the delta
  method with the two lengths taken as independent (the title says so).
  A run without the oracle draws the mean length itself, on a log axis.

The x axis is ``n`` (log scale) when ``n`` takes several values; otherwise the
last varied numeric key of the grid (``beta`` in a gamma x beta sweep, a panel
per ``tau`` and ``gamma``; ``batch_size`` in the mini-batch run), on a log
scale if it spans a decade or more. The methods are offset a little along x
(never a third of the way to the next value) so that their bars do not hide
each other; the x limits hold every point so placed. A method's points are
joined by a line along ``n`` only: the values of another x key (``tau``,
``beta``) are other problems, shown as points. One legend for the figure sits below the panels. A grid of
more than :data:`MAX_PANELS` panels shows the first ones and says so.
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import numpy as np

from ...engine.errors import MissingExtra
from ...inference.methods import REGISTRY
from ...reporting.figures import figure_class
from .summary import key_columns

#: File name of the figure.
FIGURE = "coverage.png"
_SUPERSCRIPTS = str.maketrans("0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b")
#: Nominal level when neither the rows nor the config say (the ``level`` key's default).
DEFAULT_LEVEL = 0.9
#: A figure shows at most this many panels (a larger grid gets the first ones and a line on stderr).
MAX_PANELS = 24
#: Colour and marker of each method.
_STYLE = {name: method.style for name, method in REGISTRY.items() if method.style is not None}
#: Largest spread of the methods' offsets along a log x axis, in decades.
_SPREAD = 0.16


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _show(value, tex: bool = False) -> str:
    """A key's value: ``10^6`` (with a superscript on an axis) for powers of ten from 10^5, else as printed."""
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e5:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10**5 and _is_power_of_ten(value):
        k = round(math.log10(value))
        return "10" + str(k).translate(_SUPERSCRIPTS) if tex else f"10^{k}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _is_power_of_ten(value: int) -> bool:
    return value > 0 and 10 ** round(math.log10(value)) == value


def _x_key(rows: list[dict], keys: list[str]) -> str:
    """``n`` if it varies, else the last varied key whose values are all numbers (``n`` if none)."""
    if len({r["n"] for r in rows}) > 1:
        return "n"
    for key in reversed(keys):
        values = {r[key] for r in rows}
        if len(values) > 1 and all(_finite(v) for v in values):
            return key
    return "n"


def _panels(rows: list[dict], keys: list[str], x_key: str) -> dict[tuple, list[dict]]:
    """Rows by panel: the values of the keys other than ``x_key`` (``n`` among them) and the coordinate."""
    others = [k for k in keys + ["n"] if k != x_key]
    multi = {}  # coordinates of each setting: a panel per coordinate only where there are several
    for r in rows:
        multi.setdefault(tuple(r[k] for k in others), set()).add(r.get("coord", 0))
    panels: dict[tuple, list[dict]] = {}
    for r in rows:
        ident = tuple((k, r[k]) for k in others)
        coord = r.get("coord", 0) if len(multi[tuple(v for _, v in ident)]) > 1 else None
        panels.setdefault(ident + (("coord", coord),), []).append(r)
    return panels


def _label(ident: tuple, varied: set) -> str:
    """``tau = 0.5, theta_1``: the keys that vary between panels (``None``: a key that does not apply)."""
    parts = []
    for key, value in ident:
        if key == "coord":
            if value is not None:
                parts.append(f"theta_{value}")
        elif key in varied and value not in (None, ""):
            parts.append(f"{key} = {_show(value)}")
    return ", ".join(parts) or "all settings"


def _ratio(row: dict, oracle: dict | None) -> tuple[float, float, bool]:
    """``(length / oracle length, its SE, exact)``; NaN where it cannot be formed."""
    if oracle is None or not (_finite(oracle["length"]) and oracle["length"] > 0 and _finite(row["length"])):
        return math.nan, math.nan, True
    ratio = row["length"] / oracle["length"]
    se, se_o = row["length_se"], oracle["length_se"]
    if not (_finite(se) and _finite(se_o)):
        return ratio, math.nan, True
    if se_o <= 1e-12 * oracle["length"]:  # the oracle's length is a constant (up to rounding)
        return ratio, se / oracle["length"], True
    return ratio, ratio * math.hypot(se / row["length"], se_o / oracle["length"]), False


def _offsets(xs: np.ndarray, count: int, log: bool) -> list[np.ndarray]:
    """Positions of ``count`` methods' points around ``xs``, a small step apart along the axis.

    Together they spread over at most :data:`_SPREAD` decades (log axis) and
    at most 30% of the smallest gap between two values of ``xs``, so that no
    point comes near a neighbouring value's tick.
    """
    if not len(xs):
        return [xs] * count
    where = np.log10(xs) if log else xs
    gap = float(np.min(np.diff(where))) if len(xs) > 1 else (1.0 if log else max(abs(float(xs[0])), 1.0))
    spread = min(_SPREAD, 0.3 * gap) if log else 0.3 * gap
    steps = [(j - (count - 1) / 2) * spread / max(count - 1, 1) for j in range(count)]
    return [xs * 10.0**s for s in steps] if log else [xs + s for s in steps]


def write_coverage_figure(out: Path, rows: list[dict], title: str = "", level: float | None = None) -> list[str]:
    """Draw :data:`FIGURE` from summary rows into ``out``; ``[FIGURE]``, or ``[]`` with one stderr line.

    Parameters
    ----------
    out : Path
        Directory to write into.
    rows : list of dict
        Summary rows of a coverage run (``summary.csv``).
    title : str
        The run's title (its name and the keys every row shares).
    level : float, optional
        The nominal level of the run (the config's ``level``); the rows'
        ``level`` column wins where ``level`` is a varied key.

    Returns
    -------
    list of str
        ``["coverage.png"]``; ``[]`` for no rows, or without matplotlib (one
        line on stderr says so).
    """
    try:
        Figure = figure_class(FIGURE)
    except MissingExtra as exc:
        print(f"ldpsim: figure skipped: {exc}", file=sys.stderr)
        return []
    rows = [r for r in rows if r.get("method")]
    if not rows:
        return []
    fig = draw(Figure, rows, title, level)
    fig.savefig(Path(out) / FIGURE, dpi=100)
    return [FIGURE]


def draw(Figure, rows: list[dict], title: str = "", level: float | None = None):
    """The figure of :func:`write_coverage_figure` (matplotlib ``Figure``), not saved.

    Each panel is a subfigure holding two axes, coverage then length; every
    method's points are one ``errorbar`` labelled with its name.
    """
    keys = key_columns(rows)
    x_key = _x_key(rows, keys)
    panels = _panels(rows, keys, x_key)
    if len(panels) > MAX_PANELS:
        print(f"ldpsim: {FIGURE} shows the first {MAX_PANELS} of its {len(panels)} panels "
              "(every number is in summary.csv and table.md)", file=sys.stderr)
        panels = dict(list(panels.items())[:MAX_PANELS])
    varied = {k for k in keys + ["n"] if k != x_key and len({r[k] for r in rows}) > 1}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    has_oracle = "oracle" in methods
    xs_all = [r[x_key] for r in rows if _finite(r[x_key])]
    log_x = x_key == "n" or (min(xs_all, default=1) > 0 and max(xs_all, default=1) >= 10 * min(xs_all, default=1))

    per_row = 1 if len(panels) == 1 else 2
    grid_rows = math.ceil(len(panels) / per_row)
    fig = Figure(figsize=(7.6 * per_row, 3.1 * grid_rows + 1.3), layout="constrained")
    subfigs = np.atleast_1d(fig.subfigures(grid_rows, per_row, squeeze=False)).ravel()
    approximate = False
    handles = {}
    for p, (ident, panel) in enumerate(panels.items()):
        sub = subfigs[p]  # a panel: its label once, over its two plots
        sub.suptitle(textwrap.fill(_label(ident, varied), 80), fontsize=9, fontweight="bold")
        ax_c, ax_l = sub.subplots(1, 2)
        xs = np.array(sorted({r[x_key] for r in panel if _finite(r[x_key])}), dtype=float)
        at = {m: dict(zip(xs, pos)) for m, pos in zip(methods, _offsets(xs, len(methods), log_x))}
        cell = {(r["method"], r[x_key]): r for r in panel}
        lows, highs = [], []
        if x_key == "level":  # the nominal level is the x axis: coverage should follow the diagonal
            ax_c.plot(xs, xs, color="0.35", linestyle="--", linewidth=1.0, zorder=1)
            lows, highs = list(xs), list(xs)
        else:
            nominal = panel[0].get("level") if _finite(panel[0].get("level")) else level
            nominal = nominal if _finite(nominal) else DEFAULT_LEVEL
            ax_c.axhline(nominal, color="0.35", linestyle="--", linewidth=1.0, zorder=1)
            lows, highs = [nominal], [nominal]
        if has_oracle:
            ax_l.axhline(1.0, color="0.35", linestyle="--", linewidth=1.0, zorder=1)
        for method in methods:
            colour, marker = _STYLE.get(method, (None, "o"))
            # a line follows a method along n only: the values of another key (tau, beta) are other problems
            style = dict(color=colour, marker=marker, ms=4, capsize=2.5, linewidth=1.1, label=method,
                         linestyle="-" if x_key == "n" else "none")
            pts = [(x, cell[(method, x)]) for x in xs if (method, x) in cell and _finite(cell[(method, x)]["coverage"])]
            if pts:
                cov = np.array([r["coverage"] for _, r in pts])
                se = np.array([r["coverage_se"] if _finite(r["coverage_se"]) else 0.0 for _, r in pts])
                bars = ax_c.errorbar([at[method][x] for x, _ in pts], cov, yerr=2 * se, **style)
                handles.setdefault(method, bars)
                lows.append(float(np.min(cov - 2 * se)))
                highs.append(float(np.max(cov + 2 * se)))
            if has_oracle and method == "oracle":
                continue
            if has_oracle:
                values = [(x, *_ratio(cell[(method, x)], cell.get(("oracle", x)))) for x in xs if (method, x) in cell]
            else:
                values = [(x, cell[(method, x)]["length"], cell[(method, x)]["length_se"], True)
                          for x in xs if (method, x) in cell]
            values = [v for v in values if _finite(v[1]) and v[1] > 0]
            if values:
                approximate |= not all(v[3] for v in values)
                y = np.array([v[1] for v in values])
                se = np.array([v[2] if _finite(v[2]) else 0.0 for v in values])
                # on the log axis of lengths a bar that would reach 0 or below stops at a tenth of its point
                below = 2 * se if has_oracle else np.minimum(2 * se, 0.9 * y)
                bars = ax_l.errorbar([at[method][v[0]] for v in values], y, yerr=[below, 2 * se], **style)
                handles.setdefault(method, bars)
        ax_c.set_title("coverage", fontsize=9)
        ax_l.set_title("mean length / the oracle's" if has_oracle else "mean length", fontsize=9)
        ax_c.set_ylim(max(0.0, min(lows) - 0.03), min(1.0, max(highs)) + 0.02)
        ax_c.set_ylabel("coverage")
        ax_l.set_ylabel("length ratio" if has_oracle else "mean length")
        if not has_oracle:
            ax_l.set_yscale("log")
        placed = np.array([x for m in methods for x in at[m].values()], dtype=float)
        for ax in (ax_c, ax_l):
            _x_axis(ax, xs, x_key, log_x, placed)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=len(handles), fontsize=9,
                   frameon=False)
    if x_key == "level":
        note = "bars: +-2 Monte Carlo SE; dashed: coverage = level"
    else:
        note = "bars: +-2 Monte Carlo SE; dashed: the nominal level"
    if has_oracle:
        note += " and length ratio 1"
    if approximate:
        note += "; length ratio SEs by the delta method, the two lengths taken as independent"
    ns = {r["n"] for r in rows}
    if x_key != "n" and len(ns) == 1:
        note = f"n = {_show(ns.pop())}; {note}"
    heading = f"{title} ({note})" if title else note
    fig.suptitle(textwrap.fill(heading, int(95 * per_row)), fontsize=9)
    return fig


def _x_axis(ax, xs: np.ndarray, x_key: str, log_x: bool, placed=None) -> None:
    """Scale, limits, ticks (the grid's own values, if few) and label of a panel's x axis.

    The limits hold every point as placed (``placed``: the methods' offset positions), with a margin.
    """
    ends = np.concatenate([xs, placed if placed is not None else []]) if len(xs) else xs
    if log_x:
        ax.set_xscale("log")
        if len(xs):
            ax.set_xlim(ends.min() / 10**0.25, ends.max() * 10**0.25)
    elif len(xs) == 1:
        ax.set_xlim(min(xs[0] - 1.0, ends.min() - 0.1), max(xs[0] + 1.0, ends.max() + 0.1))
    elif len(xs):
        pad = 0.12 * float(np.ptp(xs))
        ax.set_xlim(ends.min() - pad, ends.max() + pad)
    if len(xs) and (not log_x or len(xs) <= 6):
        ax.set_xticks(xs, [_show(int(x) if x_key == "n" else float(x), tex=True) for x in xs])
        ax.minorticks_off()
    ax.set_xlabel(f"{x_key} (log scale)" if log_x else x_key)
    ax.grid(alpha=0.3)


__all__ = ["DEFAULT_LEVEL", "FIGURE", "MAX_PANELS", "draw", "write_coverage_figure"]
