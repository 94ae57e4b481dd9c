"""The trajectory study's ``table.md``: rates next to theory, distances at each decade, bias, guarantees."""

from __future__ import annotations

import math

from tabulate import tabulate

from ...reporting.csvio import columns_before
from ...reporting.rates import format_rate

#: What each metric's distance is, in the tables' prose.
METRIC_TEXT = {"parameter": "E||. - theta*||^2", "loss": "E[F(.) - F(theta*)]"}


def _number(value, fmt: str = "g") -> str:
    return format(value, fmt) if isinstance(value, (int, float)) and math.isfinite(value) else "-"


def _cell(mean, se) -> str:
    if not (isinstance(mean, (int, float)) and math.isfinite(mean)):
        return "-"
    se_text = f"{se:.2g}" if isinstance(se, (int, float)) and math.isfinite(se) else "-"
    return f"{mean:.3g} ({se_text})"


def render_markdown(tables: dict[str, list[dict]], title: str | None = None) -> str:
    """Rates, distances, bias and guarantee tables as GitHub markdown."""
    rates, rows = tables["rates"], tables["summary"]
    keys = columns_before(rates, "estimator")
    metrics = list(dict.fromkeys(r.get("metric", "parameter") for r in rates))
    parts = [f"# {title}\n"] if title else []
    parts.append("Decay rates: least-squares slope of log distance against log k over the fit window, with a 95% "
                 "delta-method interval (Monte Carlo error of the mean distances, correlated across k); "
                 + ", ".join(f"{m}: {METRIC_TEXT.get(m, m)}" for m in metrics)
                 + ". theory: the exponent the config's `theory` names; linearized: the slope, over the same window, "
                 "of the exact mean squared error of the linearized recursion (G, S at theta*), transient included.\n")
    body = [[r[k] for k in keys] + [r["estimator"], r.get("metric", "parameter"), format_rate(r),
                                    _number(r["theory"]), _number(r.get("linearized_slope"), ".3f"),
                                    f"{r['k_from']:,} - {r['k_to']:,} ({r['points']})"] for r in rates]
    parts.append(tabulate(body, keys + ["estimator", "metric", "slope [95% CI]", "theory", "linearized",
                                        "fit window (points)"], tablefmt="github", disable_numparse=True) + "\n")

    # distances at the checkpoint nearest each power of ten
    groups: dict[tuple, dict[int, dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys) + (r["estimator"], r.get("metric", "parameter")), {})[r["k"]] = r
    ks = sorted({r["k"] for r in rows})
    powers = range(int(math.floor(math.log10(ks[0]))), int(math.floor(math.log10(ks[-1]))) + 1)
    nearest = {p: min(ks, key=lambda k: abs(math.log10(k) - p)) for p in powers}
    nearest = {p: k for p, k in nearest.items() if abs(math.log10(k) - p) < 0.15}
    if ks[-1] not in nearest.values():
        nearest[None] = ks[-1]
    body = []
    for ident, by_k in groups.items():
        body.append(list(ident) + [_cell(by_k[k]["distance"], by_k[k]["distance_se"]) if k in by_k else ""
                                   for k in nearest.values()])
    head = keys + ["estimator", "metric"] + [f"k = {k:,}" for k in nearest.values()]
    parts.append("Mean distance (standard error) at the checkpoint nearest each power of ten and at n; "
                 "every checkpoint is in summary.csv, with the linearized recursion's exact value (linearized) "
                 "and the noise-free path's distance, the decay of the initial error (transient).\n")
    parts.append(tabulate(body, head, tablefmt="github", disable_numparse=True) + "\n")
    failed = {r["n_failed"] for r in rows}
    if failed != {0}:
        parts.append(f"Failed (diverged) replications, excluded: {', '.join(str(f) for f in sorted(failed))}.\n")

    bias = tables.get("bias")
    if bias:
        bkeys = columns_before(bias, "estimator")
        parts.append("Bias at k = n: mean of theta_n - theta* (last) and theta_bar_n - theta* (average) per "
                     "coordinate (standard error), next to limit - theta*, where the recursion converges (0 unless "
                     "the gradient is clipped), and the transient: how far the noise-free (mean-field) path from "
                     "theta0 still is from that limit at n (blank where not computed); "
                     "z = (bias - limit bias - transient) / SE.\n")
        body = [[r[k] for k in bkeys] + [r["estimator"], r["coord"], _number(r["theta_star"], ".4g"),
                                         _cell(r["bias"], r["bias_se"]), _number(r["limit_bias"], ".4f"),
                                         _number(r.get("transient"), ".2e"), _number(r["z"], "+.2f")] for r in bias]
        parts.append(tabulate(body, bkeys + ["estimator", "coord", "theta*", "bias (SE)", "limit bias", "transient",
                                             "z"], tablefmt="github", disable_numparse=True) + "\n")

    guarantees = tables.get("guarantees")
    if guarantees:
        gkeys = columns_before(guarantees, "guarantee")
        parts.append("Privacy: the guarantee each user gets, the l2 sensitivity the noise is calibrated to, and "
                     "the noise variance per coordinate (mean over users).\n")
        body = [[r[k] for k in gkeys] + [r["guarantee"], _number(r["sensitivity"], ".4g"),
                                         _number(r["noise_variance"], ".4g")] for r in guarantees]
        parts.append(tabulate(body, gkeys + ["guarantee", "l2 sensitivity", "noise variance"], tablefmt="github",
                              disable_numparse=True) + "\n")
    return "\n".join(parts)


__all__ = ["METRIC_TEXT", "render_markdown"]
