"""The zoo table (``zoo.csv``, ``zoo.md``) and its figure (``zoo.png``): every method on the same streams.

One row per setting x method: coverage with its Monte Carlo SE, mean length
over the oracle's with its SE, the privacy cost per user as a factor of the
run's epsilon, the floats a replication keeps for the method, and the seconds
a replication took, measured in the run (:meth:`CoverageStudy._time_methods`).
For a multivariate model the coverage and the length ratio are averaged over
the coordinates within each replication, and their SEs are those of the
averages across replications (``summary.csv`` has every coordinate).
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import numpy as np

from ...engine.runs.usercode import display
from ...engine.errors import MissingExtra
from ...models import build_model
from ...reporting.figures import figure_class
from ...inference.user_methods import label
from .summary import method_mask
from .zoo import oracle_length, privacy_factor, state_floats

#: Columns after the varied config keys.
ZOO_COLUMNS = ("method", "n", "reps", "n_failed", "coverage", "coverage_se", "length_ratio", "length_ratio_se",
               "privacy_cost", "state_floats", "seconds_per_rep")
#: The figure's file name.
FIGURE = "zoo.png"


def _mean_se(values) -> tuple[float, float]:
    """Mean and its SE, the SD taken with ``ddof = 0`` (for a 0/1 sample: the binomial SE ``sqrt(p (1 - p) / r)``).

    One replication has no SE (NaN, as in summary.csv): its spread of 0 is not a precision.
    """
    values = np.asarray(values, dtype=float)
    if values.shape[0] == 0:
        return math.nan, math.nan
    if values.shape[0] == 1:
        return float(values[0]), math.nan
    return float(values.mean()), float(values.std()) / math.sqrt(values.shape[0])


def _rounding_only(lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether the lengths ``hi - lo`` ``(R, d)`` differ only by the rounding of their ends (the oracle's).

    ``lo = est - h`` and ``hi = est + h`` each round by half a unit in the last
    place of the larger end, and so does their difference: a spread of the
    lengths within 4 such units is rounding, and the SE of their mean is 0.
    """
    lengths = hi - lo
    ulp = np.spacing(np.maximum(np.abs(lo), np.abs(hi)).max(axis=0))
    return bool((np.ptp(lengths, axis=0) <= 4.0 * ulp).all())


def zoo_rows(config, results: list[dict]) -> list[dict]:
    """The zoo table's rows of a finished run (``results`` as :func:`~.summary.summarize` takes them)."""
    keys = [k for k in config.varied if k != "n"]
    rows = []
    for setting, res in zip(config.settings, results):
        model = build_model(setting)
        truth = model.theta_star()
        oracle = oracle_length(model.sigma(setting.batch_size), setting.n, setting.level)
        for j, method in enumerate(config.methods):
            ok, _ = method_mask(res, j, method)
            lo, hi = res["bounds"][ok, j, :, 0], res["bounds"][ok, j, :, 1]
            coverage, coverage_se = _mean_se(((lo <= truth) & (truth <= hi)).mean(axis=1))
            ratio, ratio_se = _mean_se(((hi - lo) / oracle).mean(axis=1))
            if lo.shape[0] > 1 and _rounding_only(lo, hi):  # the oracle's length is a number, not a random variable
                ratio_se = 0.0
            seconds = res["seconds"][:, j]
            seconds = seconds[np.isfinite(seconds)]
            row = {k: display(getattr(setting, k)) for k in keys}
            row.update(method=label(method), n=setting.n, reps=int(ok.sum()), n_failed=int((~ok).sum()),
                       coverage=coverage, coverage_se=coverage_se, length_ratio=ratio, length_ratio_se=ratio_se,
                       privacy_cost=privacy_factor(method, config.options, setting),
                       state_floats=state_floats(method, truth.shape[0], setting, config.options),
                       seconds_per_rep=float(seconds.mean()) if seconds.size else math.nan)
            rows.append(row)
    return rows


def _cell(value, digits: int = 3) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.{digits}g}" if abs(value) < 1e-3 or abs(value) >= 1e4 else f"{value:.{digits}f}"
    return str(value)


def _pm(value, se) -> str:
    """``value +- se``; an SE within rounding of the value (a deterministic length, a zoo.csv of an earlier run) is 0.

    ``-`` where there is no value (every replication of the method failed), the value alone where it has no SE.
    """
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "-"
    if not isinstance(se, (int, float)) or math.isnan(se):
        return _cell(value)
    if abs(se) <= 1e-12 * abs(value):
        se = 0
    return f"{_cell(value)} +- {_cell(se)}"


def render_zoo_markdown(rows: list[dict], title: str | None, level: float | None) -> str:
    """``zoo.md``: a table per setting, the methods as rows."""
    from tabulate import tabulate

    keys = [k for k in rows[0] if k not in ZOO_COLUMNS] + ["n"]
    parts = [f"# {title or 'zoo'}: every method on the same streams", ""]
    if level is not None:
        one = nominal_level([{}], level)
        nominal = f"Nominal coverage {level}" if one is not None else "Nominal coverage: each table's level"
        parts += [f"{nominal}; +- is one Monte Carlo SE. Length over the oracle's (the interval with "
                  "the true asymptotic variance). Privacy cost: the epsilon (mu under GDP) each user spends, as a "
                  "factor of the run's, by sequential composition (GDP: sqrt(k) mu for k answers; a Gaussian mechanism's "
                  "delta by the same factor, OB_split's answers each at epsilon / (B + 1), delta / (B + 1)). State: floats kept per replication beyond the main path's iterate and sum. Time: seconds "
                  "per replication, measured in this run (main path included).", ""]
    groups = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    for values, group in groups.items():
        # a key the setting does not read (no mechanism at epsilon = inf: None in a run, blank in zoo.csv) is left out
        parts.append("## " + ", ".join(f"{k} = {v}" for k, v in zip(keys, values) if v is not None and v != ""))
        parts.append("")
        table = [[r["method"], _pm(r["coverage"], r["coverage_se"]),
                  _pm(r["length_ratio"], r["length_ratio_se"]), r["privacy_cost"], r["state_floats"],
                  _cell(r["seconds_per_rep"]), r["reps"], r["n_failed"]] for r in group]
        parts.append(tabulate(table, headers=["method", "coverage", "length / oracle", "privacy cost (x budget)",
                                              "state (floats)", "s / rep", "reps", "failed"], tablefmt="github"))
        parts.append("")
    return "\n".join(parts)


def write_zoo_outputs(out: Path, rows: list[dict] | None, title: str | None, level: float | None) -> list[str]:
    """``zoo.md`` and ``zoo.png`` from the zoo table (nothing for a run without the zoo's methods)."""
    if not rows:
        return []
    (Path(out) / "zoo.md").write_text(render_zoo_markdown(rows, title, level))
    try:
        return ["zoo.md"] + write_zoo_figure(out, rows, title, level)
    except MissingExtra as exc:
        print(f"ldpsim: zoo figure skipped: {exc}", file=sys.stderr)
        return ["zoo.md"]


def nominal_level(group: list[dict], level) -> float | None:
    """The nominal level of a panel: its rows' ``level`` where the run varies it, else the run's ``level``."""
    value = group[0].get("level", level)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _x(value) -> float:
    """A row's x value; no epsilon (an online model without privacy) is epsilon = inf."""
    return math.inf if value is None or value == "" else float(value)


def _x_positions(values) -> tuple[dict, list[str]]:
    """Epsilon on a log axis, ``inf`` one step past the largest finite value."""
    values = {_x(v) for v in values}
    finite = sorted(v for v in values if math.isfinite(v))
    pos = {v: v for v in finite}
    labels = [f"{v:g}" for v in finite]
    if any(math.isinf(v) for v in values):
        pos[math.inf] = (finite[-1] * 2.0) if finite else 1.0
        labels.append("inf")
    return pos, labels


def write_zoo_figure(out: Path, rows: list[dict], title: str | None, level: float | None) -> list[str]:
    """``zoo.png``: coverage (+-2 SE, nominal line) and length over the oracle's against epsilon, a line per method.

    A pair of panels per combination of the other varied keys (``n``, ``tau``, ...).
    """
    Figure = figure_class(FIGURE)
    x_key = next((k for k in ("epsilon", "mu", "n") if k in rows[0]), "n")
    # the mechanism (and an online model's other budget key) follow the budget (none at inf): no panels of their own
    others = [k for k in rows[0] if k not in ZOO_COLUMNS and k not in (x_key, "mechanism", "mu", "epsilon")] + (
        ["n"] if x_key != "n" else [])
    groups = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in others), []).append(row)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig = Figure(figsize=(11, 3.4 * len(groups) + 1.0), layout="constrained")
    axes = fig.subplots(len(groups), 2, squeeze=False)
    for (values, group), (ax_cov, ax_len) in zip(groups.items(), axes):
        pos, labels = _x_positions({r[x_key] for r in group})
        ticks = sorted(pos.values())
        for k, method in enumerate(methods):
            rs = sorted((r for r in group if r["method"] == method), key=lambda r: pos[_x(r[x_key])])
            if not rs:
                continue
            shift = 1.0 + 0.025 * (k - (len(methods) - 1) / 2.0)  # a small offset so the bars do not hide
            x = np.array([pos[_x(r[x_key])] for r in rs]) * shift
            cov = np.array([r["coverage"] for r in rs], dtype=float)
            se = np.array([r["coverage_se"] for r in rs], dtype=float)
            ax_cov.errorbar(x, cov, yerr=2.0 * se, marker="o", ms=4, capsize=2, label=method)
            ratio = np.array([r["length_ratio"] for r in rs], dtype=float)
            rse = np.array([r["length_ratio_se"] for r in rs], dtype=float)
            ax_len.errorbar(x, ratio, yerr=2.0 * rse, marker="o", ms=4, capsize=2, label=method)
        label = ", ".join(f"{k} = {v}" for k, v in zip(others, values))
        for ax in (ax_cov, ax_len):
            ax.set_xscale("log")
            ax.set_xticks(ticks, labels)
            ax.minorticks_off()
            ax.set_xlabel(x_key)
        nominal = nominal_level(group, level)
        if nominal is not None:
            ax_cov.axhline(nominal, color="grey", ls="--", lw=1)
        ax_len.axhline(1.0, color="grey", ls="--", lw=1)
        ax_len.set_yscale("log")
        ax_cov.set_ylabel("coverage (+-2 SE)")
        ax_len.set_ylabel("length / oracle (+-2 SE)")
        ax_cov.set_title(label, fontsize=9)
        ax_len.set_title(label, fontsize=9)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=min(len(names), 6), fontsize=8)
    fig.suptitle(textwrap.fill(title or "zoo", 140), fontsize=9)
    fig.savefig(Path(out) / FIGURE, dpi=100)
    return [FIGURE]


__all__ = ["FIGURE", "ZOO_COLUMNS", "nominal_level", "render_zoo_markdown", "write_zoo_figure", "write_zoo_outputs",
           "zoo_rows"]
