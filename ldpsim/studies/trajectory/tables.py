"""The trajectory study's ``table.md``: fitted rates next to theory, and distances at each decade."""

from __future__ import annotations

import math

from tabulate import tabulate

from ...reporting.csvio import columns_before
from .summary import format_rate


def _theory(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and math.isfinite(value) else "-"


def _cell(mean, se) -> str:
    if not (isinstance(mean, (int, float)) and math.isfinite(mean)):
        return "-"
    se_text = f"{se:.2g}" if isinstance(se, (int, float)) and math.isfinite(se) else "-"
    return f"{mean:.3g} ({se_text})"


def render_markdown(tables: dict[str, list[dict]], title: str | None = None) -> str:
    """Rates table and distance table as GitHub markdown."""
    rates, rows = tables["rates"], tables["summary"]
    keys = columns_before(rates, "estimator")
    parts = [f"# {title}\n"] if title else []
    parts.append("Decay rates: least-squares slope of log E||. - theta*||^2 against log k over the fit window, "
                 "with a 95% delta-method interval (Monte Carlo error of the mean distances, correlated across k); "
                 "theory: -gamma for the last iterate, -1 for the average (strongly convex risk, 1/2 < gamma < 1).\n")
    body = [[r[k] for k in keys] + [r["estimator"], format_rate(r), _theory(r["theory"]),
                                    f"{r['k_from']:,} - {r['k_to']:,} ({r['points']})"] for r in rates]
    parts.append(tabulate(body, keys + ["estimator", "slope [95% CI]", "theory", "fit window (points)"],
                          tablefmt="github", disable_numparse=True) + "\n")

    # distances at the checkpoint nearest each power of ten
    groups: dict[tuple, dict[int, dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys) + (r["estimator"],), {})[r["k"]] = r
    ks = sorted({r["k"] for r in rows})
    powers = range(int(math.floor(math.log10(ks[0]))), int(math.floor(math.log10(ks[-1]))) + 1)
    nearest = {p: min(ks, key=lambda k: abs(math.log10(k) - p)) for p in powers}
    nearest = {p: k for p, k in nearest.items() if abs(math.log10(k) - p) < 0.15}
    body = []
    for ident, by_k in groups.items():
        body.append(list(ident) + [_cell(by_k[k]["distance"], by_k[k]["distance_se"]) if k in by_k else ""
                                   for k in nearest.values()])
    head = keys + ["estimator"] + [f"k = {k:,}" for k in nearest.values()]
    parts.append("Mean squared distance to theta* (standard error) at the checkpoint nearest each power of ten; "
                 "every checkpoint is in summary.csv.\n")
    parts.append(tabulate(body, head, tablefmt="github", disable_numparse=True) + "\n")
    failed = {r["n_failed"] for r in rows}
    if failed != {0}:
        parts.append(f"Failed (diverged) replications, excluded: {', '.join(str(f) for f in sorted(failed))}.\n")
    return "\n".join(parts)


__all__ = ["render_markdown"]
