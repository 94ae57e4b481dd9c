"""The DP-SGD study's ``table.md`` and ``table.tex``: privacy calibration, intervals, accuracy."""

from __future__ import annotations

import math

from tabulate import tabulate

from ...reporting.csvio import columns_before


def _num(x, digits=3) -> str:
    if isinstance(x, str) or x is None:
        return "" if x is None else x
    if not math.isfinite(x):
        return "-" if math.isnan(x) else str(x)
    return f"{x:.{digits}g}"


def _cell(mean, se, digits=3) -> str:
    if not (isinstance(mean, (int, float)) and math.isfinite(mean)):
        return "-"
    return f"{mean:.{digits}g} ({_num(se, 2)})"


def _groups(rows, keys):
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    return groups


def privacy_lines(privacy: list[dict]) -> list[str]:
    """The guarantee of every setting by its accountant, and every accountant's epsilon for the same noise."""
    if not privacy:
        return []
    keys = columns_before(privacy, "n")
    head = keys + ["n", "T", "sampling", "sigma", "sigma_1", "delta", "accountant", "epsilon (claimed)", "path alone",
                   "eps CLT", "eps RDP", "eps PLD", "eps GDP", "clipped: path", "at theta*"]
    body = [[r[k] for k in keys] + [r["n"], f"{r['T']:,}", r["sampling"], _num(r["sigma"], 4), _num(r["sigma1"], 4),
                                    _num(r["delta"], 2), r["accountant"] + ("" if r["bound"] == "upper bound" else " *"),
                                    _num(r["epsilon"]), _num(r["epsilon_path"]), _num(r["eps_total_clt"]),
                                    _num(r["eps_total_rdp"]), _num(r["eps_total_pld"]), _num(r["eps_total_gdp"]),
                                    _num(r["clip_rate_path"]), _num(r["clip_rate_star"])]
            for r in privacy]
    approximate = any(r["bound"] != "upper bound" for r in privacy)
    lines = ["Privacy of each setting: one step adds N(0, sigma_1^2 I) to the averaged clipped gradient "
             "(sigma_1 = sigma x sensitivity). `epsilon (claimed)` is the guarantee at `delta` of everything one "
             "analysis releases (the path, and the private A~, S~ of the plug-in and corrected RS when they are run) "
             "by the setting's accountant; `path alone` the path's. The next four columns give the whole release's "
             "epsilon for the same noise by each accountant: RDP and PLD (dp-accounting) and GDP (exact composition, "
             "cyclic passes only) are valid upper bounds; the CLT of Bu et al. (Xia et al.'s calibration) is an "
             "approximation, NOT a bound; blank: the accountant does not apply (dp-accounting's PLD has no "
             "event for fixed-size batches without replacement). Last: the share of clipped per-example gradients "
             "along the path and at theta*."]
    kinds = {r.get("budget_of") or "path" for r in privacy}  # (a privacy.csv from before the key: 002's convention)
    said = {"release": "with budget_of = release the configured budget (`epsilon` or `mu`) is the whole "
                       "release's: the claimed epsilon is at most it",
            "path": "with budget_of = path (Xia et al.'s convention) it is the path's alone: A~ and S~ come on top, "
                    "and the claimed epsilon of the whole release exceeds it"}
    if kinds == {"path"}:
        said["path"] = said["path"].replace("it is the path's alone", "the configured budget (`epsilon` or `mu`) is "
                                            "the path's alone")
    lines.append(" Budget: " + "; ".join(said[k] for k in sorted(kinds, key=("release", "path").index)) + ".")
    if approximate:
        lines.append(" * marks settings whose claimed epsilon is the CLT's approximation (accountant = clt), as in "
                     "Xia et al.: not a privacy guarantee.")
    return ["".join(lines) + "\n", tabulate(body, head, tablefmt="github", disable_numparse=True) + "\n"]


def interval_body(rows: list[dict]):
    """``(head, body)`` of the intervals table: one line per group x method (x T) x statistic, a column per n."""
    keys = columns_before(rows, "method")
    ns = sorted({r["n"] for r in rows})
    body = []
    for ident, group in _groups(rows, keys).items():
        by_method: dict[tuple, dict[int, list[dict]]] = {}
        for r in group:
            label = r["method"] if r["method"] != "DPGD" else f"DPGD (T2 = {r['T']})"
            by_method.setdefault((label,), {}).setdefault(r["n"], []).append(r)
        for (label,), by_n in by_method.items():
            for stat in ("coverage", "length"):
                cells = []
                for n in ns:
                    rs = by_n.get(n, [])
                    cells.append("; ".join(_cell(r[stat], r[f"{stat}_se"]) for r in sorted(rs, key=lambda r: r["coord"])))
                body.append(list(ident) + [label, "cover" if stat == "coverage" else "length"] + cells)
    head = keys + ["method", ""] + [f"n = {n}" for n in ns]
    return head, body


def accuracy_lines(accuracy: list[dict]) -> list[str]:
    if not accuracy:
        return []
    keys = columns_before(accuracy, "estimator")
    head = keys + ["estimator", "T", "MSE (SE)", "RMSE", "MSE / oracle's (SE)"]
    body = [[r[k] for k in keys] + [r["estimator"], f"{r['T']:,}" if r["T"] else "-", _cell(r["mse"], r["mse_se"]),
                                    _num(r["rmse"]), _cell(r["mse_ratio"], r["mse_ratio_se"])] for r in accuracy]
    return ["Accuracy: E||estimate - theta*||^2 over replications (theta_bar_T for DP-SGD, the full-sample fit for the "
            "oracle), and its ratio to the oracle's on the same samples (delta-method SE).\n",
            tabulate(body, head, tablefmt="github", disable_numparse=True) + "\n"]


def render_markdown(tables: dict[str, list[dict]], title: str | None = None) -> str:
    """Privacy, intervals (coverage and mean length per coordinate, SEs in brackets) and accuracy."""
    parts = [f"# {title}\n"] if title else []
    parts += privacy_lines(tables.get("privacy", []))
    rows = tables["summary"]
    head, body = interval_body(rows)
    level = ""
    parts.append("Intervals: coverage and mean length with Monte Carlo SEs, one entry per coordinate (theta_1; "
                 f"theta_2; theta_3){level}; T = iterations (DP-GD: T2).\n")
    parts.append(tabulate(body, head, tablefmt="github", disable_numparse=True) + "\n")
    parts += accuracy_lines(tables.get("accuracy", []))
    failed = {r["n_failed"] for r in rows}
    if failed != {0}:
        parts.append(f"Failed replications (diverged, non-finite, or no logistic MLE), excluded: "
                     f"{', '.join(str(f) for f in sorted(failed))}.\n")
    return "\n".join(parts)


def render_latex(tables: dict[str, list[dict]]) -> str:
    """The intervals table in LaTeX."""
    head, body = interval_body(tables["summary"])
    return tabulate(body, head, tablefmt="latex_booktabs", disable_numparse=True) + "\n"


__all__ = ["render_latex", "render_markdown"]
