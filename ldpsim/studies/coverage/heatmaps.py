"""Heat maps of a gamma x beta sweep: where the block bootstrap is trustworthy.

Given the summary rows of a run in which both ``gamma`` (step-size exponent)
and ``beta`` (block-length exponent) vary, :func:`write_heatmaps` writes one
PNG per statistic and per combination of the other varied keys (``tau``, ...),
``n`` and, for multivariate models, coordinate:

* ``heatmap_coverage_<METHOD>_...png``: coverage of each interval method but
  the oracle, the colour scale centred on the nominal level;
* ``heatmap_length_ratio_<METHOD>_...png``: its mean length over the oracle's
  mean length in the same setting (needs ``oracle`` among the methods);
* ``heatmap_bias_sd_...png``: ``|bias| / SD`` of ``theta_bar``. It describes
  the estimate, not an interval, so it is the same for every method (and,
  since settings that differ only in ``beta`` share their paths, for every
  ``beta`` of a column); one map per setting, without a method in its name.

One cell per (gamma, beta) with its number printed in it; cells with
``beta <= gamma`` (outside Theorem 3.2) are hatched and a legend says so.
matplotlib is imported only when a map is drawn; without it (a broken install)
:class:`ldpsim.engine.errors.MissingExtra` is raised with a one-line message.
"""

from __future__ import annotations

import math
from pathlib import Path

from ...reporting.figures import figure_class
from .summary import key_columns

#: The note on hatched cells.
OUTSIDE = "outside Theorem 3.2 (beta <= gamma)"
#: Nominal level when the rows do not say (the config's default).
DEFAULT_LEVEL = 0.9


def _matplotlib():
    """``(Figure, colors, Patch)``; :class:`MissingExtra` if matplotlib is not installed."""
    Figure = figure_class("heat maps")
    from matplotlib import colors
    from matplotlib.patches import Patch

    return Figure, colors, Patch


def is_sweep(rows: list[dict]) -> bool:
    """Whether summary rows vary both ``gamma`` and ``beta`` (each is a column with two or more values)."""
    if not rows:
        return False
    keys = key_columns(rows)
    return all(k in keys and len({r[k] for r in rows}) > 1 for k in ("gamma", "beta"))


def _fmt_value(key: str, value) -> str:
    """``n1000000``, ``tau0.5``: integers in full, other numbers as ``%g``."""
    if isinstance(value, float) and value.is_integer() and key not in ("tau", "gamma", "beta", "level"):
        value = int(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Rows by (other varied keys..., n, coord): each group is one gamma x beta grid."""
    others = [k for k in key_columns(rows) if k not in ("gamma", "beta")]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        ident = tuple((k, r[k]) for k in others) + (("n", r["n"]), ("coord", r.get("coord", 0)))
        groups.setdefault(ident, []).append(r)
    return groups


def _suffix(ident: tuple, multivariate: bool) -> str:
    parts = []
    for key, value in ident:
        if key == "coord" and not multivariate:
            continue
        parts.append(f"{key}{_fmt_value(key, value)}")
    return "_".join(parts)


def _draw(path: Path, gammas, betas, grid, *, title: str, label: str, norm, cmap: str, fmt: str):
    """One heat map: ``grid[i][j]`` is the value at ``betas[i]`` (rows) and ``gammas[j]`` (columns)."""
    Figure, colors, Patch = _matplotlib()
    import numpy as np

    values = np.array(grid, dtype=float)
    fig = Figure(figsize=(1.1 * len(gammas) + 2.6, 0.75 * len(betas) + 2.0), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(values), origin="lower", cmap=cmap, norm=norm, aspect="auto")
    fig.colorbar(image, ax=ax, label=label)
    ax.set_xticks(range(len(gammas)), [f"{g:g}" for g in gammas])
    ax.set_yticks(range(len(betas)), [f"{b:g}" for b in betas])
    ax.set_xlabel("gamma (step size eta_i = c i^-gamma)")
    ax.set_ylabel("beta (block length floor(n^beta))")
    ax.set_title(title, fontsize=9)
    cm = image.get_cmap()
    for i, beta in enumerate(betas):
        for j, gamma in enumerate(gammas):
            v = values[i, j]
            if beta <= gamma:
                ax.add_patch(_hatch(i, j))
            if math.isnan(v):
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=8, color="0.4")
                continue
            r, g, b, _ = cm(norm(v))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=9,
                    color="white" if dark else "black", fontweight="bold")
    legend = Patch(facecolor="none", edgecolor="0.3", hatch="///", label=OUTSIDE)
    ax.legend(handles=[legend], loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8, frameon=False)
    fig.savefig(path, dpi=110)


def _hatch(i: int, j: int):
    from matplotlib.patches import Rectangle

    return Rectangle((j - 0.5, i - 0.5), 1.0, 1.0, fill=False, hatch="///", edgecolor="0.3", linewidth=0.0)


def _centred_norm(colors, values, centre: float, low: float | None = None, high: float | None = None):
    finite = [v for v in values if math.isfinite(v)]
    spread = max([abs(v - centre) for v in finite] + [1e-3])
    vmin = centre - spread if low is None else max(low, centre - spread)
    vmax = centre + spread if high is None else min(high, centre + spread)
    vmin, vmax = min(vmin, centre - 1e-3), max(vmax, centre + 1e-3)
    return colors.TwoSlopeNorm(vcenter=centre, vmin=vmin, vmax=vmax)


def write_heatmaps(rows: list[dict], out: Path, level: float | None = None) -> list[Path]:
    """Write the heat maps of a gamma x beta sweep into ``out``.

    Parameters
    ----------
    rows : list of dict
        Summary rows (:func:`ldpsim.summary.summarize` or ``read_csv``) in which
        ``gamma`` and ``beta`` are both varied keys.
    out : Path
        Directory for the PNGs (created).
    level : float, optional
        Nominal level, the centre of the coverage colour scale; the rows'
        ``level`` column if it is a varied key, else 0.9.

    Returns
    -------
    list of Path
        The files written, e.g. ``heatmap_coverage_BB_tau0.5_n1000000.png``,
        ``heatmap_length_ratio_BB_tau0.5_n1000000.png``,
        ``heatmap_bias_sd_tau0.5_n1000000.png``.

    Raises
    ------
    ValueError
        If the rows do not vary both gamma and beta.
    ldpsim.engine.errors.MissingExtra
        If matplotlib is not installed.
    """
    if not is_sweep(rows):
        raise ValueError("heat maps need summary rows in which both gamma and beta vary")
    _, colors, _ = _matplotlib()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    multivariate = len({r.get("coord", 0) for r in rows}) > 1
    written = []
    for ident, group in _groups(rows).items():
        gammas = sorted({r["gamma"] for r in group})
        betas = sorted({r["beta"] for r in group})
        methods = list(dict.fromkeys(r["method"] for r in group))
        cell = {(r["method"], r["gamma"], r["beta"]): r for r in group}
        suffix = _suffix(ident, multivariate)
        fixed = ", ".join(f"{k} = {_fmt_value(k, v)}" for k, v in ident if k != "coord" or multivariate)
        nominal = level if level is not None else dict(ident).get("level", DEFAULT_LEVEL)

        def grid(method, stat):
            return [[stat(cell.get((method, g, b))) for g in gammas] for b in betas]

        for method in methods:
            if method == "oracle":
                continue
            cov = grid(method, lambda r: r["coverage"] if r else math.nan)
            path = out / f"heatmap_coverage_{method}_{suffix}.png"
            _draw(path, gammas, betas, cov, title=f"coverage of {method} ({nominal:g} nominal), {fixed}",
                  label=f"coverage (centre {nominal:g})", cmap="RdBu",
                  norm=_centred_norm(colors, sum(cov, []), nominal, 0.0, 1.0), fmt=".3f")
            written.append(path)
            if "oracle" in methods:
                def ratio(r):
                    o = cell.get(("oracle", r["gamma"], r["beta"])) if r else None
                    return r["length"] / o["length"] if o and o["length"] > 0 else math.nan

                rat = grid(method, ratio)
                path = out / f"heatmap_length_ratio_{method}_{suffix}.png"
                _draw(path, gammas, betas, rat, title=f"length of {method} / oracle length, {fixed}",
                      label="length / oracle length", cmap="PuOr_r",
                      norm=_centred_norm(colors, sum(rat, []), 1.0, 0.0), fmt=".2f")
                written.append(path)
        first = methods[0]
        bsd = grid(first, lambda r: abs(r["bias"]) / r["sd"] if r and r["sd"] > 0 else math.nan)
        finite = [v for v in sum(bsd, []) if math.isfinite(v)] or [1.0]
        path = out / f"heatmap_bias_sd_{suffix}.png"
        _draw(path, gammas, betas, bsd, title=f"|bias| / SD of theta_bar, {fixed}", label="|bias| / SD",
              cmap="Reds", norm=colors.Normalize(0.0, max(max(finite), 0.1)), fmt=".2f")
        written.append(path)
    return written


__all__ = ["OUTSIDE", "is_sweep", "write_heatmaps"]
