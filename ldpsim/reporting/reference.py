"""The papers' published tables, and a comparison of a run against them.

Reference values live in ``ldpsim/reporting/data/paper_tables.yaml``; each table
names its source (``000``: Dette & Graw, Section 4). A coverage agrees when
it is within a given number of *combined* standard errors,
``sqrt(se_run^2 + se_paper^2)``; lengths are compared as ratios.
"""

from __future__ import annotations

import math
from importlib import resources

import yaml
from tabulate import tabulate


#: The published table of each model, for ``ldpsim compare``.
DEFAULT_TABLES = {"quantile": "table1_quantile", "quantile_regression": "table2_quantile_regression"}



def paper_tables() -> dict:
    """All reference tables, keyed by name (``table1_quantile``, ...)."""
    text = resources.files("ldpsim.reporting").joinpath("data/paper_tables.yaml").read_text()
    return yaml.safe_load(text)


def compare(rows: list[dict], table: str = "table1_quantile", fixed: dict | None = None) -> list[dict]:
    """Match summary rows with a published table: only rows of the paper's setting.

    A row is scored against a paper row only if the paper row's method,
    ``tau`` (or ``coef``) and ``n`` and *every* key of the table's
    ``setting`` (epsilon, gamma, c, beta, B, level, ...) match it: a run with
    gamma = 0.7 is never scored against the paper's gamma = 0.51
    (:func:`mismatch` says why a row is left out).

    Parameters
    ----------
    rows : list of dict
        Summary rows (``summary.csv``).
    table : str
        Name of the reference table.
    fixed : dict, optional
        Config values shared by all rows (the run's resolved config, as
        ``meta.json`` records it): a key that was not varied has no column in
        the summary. A key found in neither does not match.

    Returns
    -------
    list of dict
        One entry per (paper row, n) present in ``rows``: both coverages with
        their SEs, ``z`` = difference over the combined SE, both lengths and
        their ratio.
    """
    ref = paper_tables()[table]
    columns = [int(n) for n in ref["columns"]]
    out = []
    for prow in ref["rows"]:
        for j, n in enumerate(columns):
            match = [r for r in rows if r["method"] == prow["method"] and r["n"] == n
                     and _same_case(r, prow, fixed or {}) and mismatch(r, ref, fixed) is None]
            if len(match) != 1:
                continue
            r = match[0]
            combined = math.hypot(r["coverage_se"], prow["cover_se"][j])
            case = {k: prow[k] for k in ("tau", "coef") if k in prow}
            out.append({
                **case,
                "method": prow["method"],
                "n": n,
                "coverage": r["coverage"],
                "coverage_se": r["coverage_se"],
                "paper_coverage": prow["cover"][j],
                "paper_coverage_se": prow["cover_se"][j],
                "z": (r["coverage"] - prow["cover"][j]) / combined,
                "length": r["length"],
                "paper_length": prow["length"][j],
                "length_ratio": r["length"] / prow["length"][j],
                "length_z": (r["length"] - prow["length"][j]) / math.hypot(r["length_se"], prow["length_se"][j]),
            })
    return out


def _same(value, want) -> bool:
    if isinstance(want, bool) or isinstance(value, bool):
        return value is want
    if isinstance(want, (int, float)):
        return isinstance(value, (int, float)) and math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-12)
    return value == want


def mismatch(row: dict, ref: dict, fixed: dict | None = None) -> str | None:
    """The first key of the table's setting that ``row`` does not match (``"gamma = 0.7, not 0.51"``), or None."""
    fixed = fixed or {}
    if not (isinstance(row.get("reps"), int) and row["reps"] > 0):
        return "no usable replications (all failed)"
    for key, want in ref.get("setting", {}).items():
        value = row[key] if key in row else fixed.get(key, _MISSING)
        if value is _MISSING:
            return f"{key} not recorded, the paper's is {want}"
        if not _same(value, want):
            return f"{key} = {'blank' if value in (None, '') else value}, the paper's is {want}"
    return None


_MISSING = object()


def setting_text(table: str) -> str:
    """The paper's setting of ``table`` in one line: ``model = quantile, epsilon = 1.0, ...``."""
    return ", ".join(f"{k} = {v}" for k, v in paper_tables()[table].get("setting", {}).items())


def _same_case(row: dict, prow: dict, fixed: dict) -> bool:
    if "tau" in prow:
        tau = row.get("tau", fixed.get("tau"))
        if not isinstance(tau, (int, float)) or not math.isclose(tau, prow["tau"]):
            return False
    if "coef" in prow and row["coord"] != prow["coef"]:
        return False
    return True


def render_comparison(entries: list[dict]) -> str:
    """Markdown table of a comparison, with the worst |z| and length deviation.

    ``z`` is the coverage difference in combined SEs; ``z (length)`` the
    length difference in combined SEs of the two mean lengths.
    """
    if not entries:
        return "No rows of this run match the published table.\n"
    head = [k for k in ("tau", "coef") if k in entries[0]] + [
        "method", "n", "coverage (SE)", "paper (SE)", "z", "length", "paper", "ratio", "z (length)"]
    body = [
        [e[k] for k in ("tau", "coef") if k in e]
        + [e["method"], f"{e['n']:.0e}", f"{e['coverage']:.3f} ({e['coverage_se']:.3f})",
           f"{e['paper_coverage']:.3f} ({e['paper_coverage_se']:.3f})", f"{e['z']:+.2f}",
           f"{e['length']:.4g}", f"{e['paper_length']}", f"{e['length_ratio']:.3f}", f"{e['length_z']:+.2f}"]
        for e in entries
    ]
    worst_z = max(abs(e["z"]) for e in entries)
    worst_len = max(abs(e["length_ratio"] - 1.0) for e in entries)
    return (
        tabulate(body, head, tablefmt="github", disable_numparse=True)
        + f"\n\nLargest |z| (coverage difference in combined SEs): {worst_z:.2f}. "
        + f"Largest length deviation: {100 * worst_len:.1f}%. The paper rounds lengths to one or "
        + "two significant digits (0.0027: up to 1.9%; 0.07: up to 7%), which z (length) does not account for.\n"
    )
