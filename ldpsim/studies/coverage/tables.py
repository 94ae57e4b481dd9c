"""Tables laid out like the paper's: rows per setting and method, one column per n.

Each method gets two lines, ``cover`` and ``length``, with standard errors
in brackets (000, Tables 1-2). A second table gives the diagnostics the
paper lacks: bias in units of the SD of ``theta_bar``, the SE ratio and the
number of failed (diverged or non-finite) replications.
"""

from __future__ import annotations

import math

from tabulate import tabulate

from ...inference.methods import names
from .summary import key_columns


def _n_label(n: int, tex: bool) -> str:
    k = round(math.log10(n)) if n > 0 else 0
    if 10**k == n:
        return f"$10^{{{k}}}$" if tex else f"10^{k}"
    return f"{n:,}"


def _se(x: float, tex: bool) -> str:
    if not math.isfinite(x):
        return "-"
    if x == 0.0:
        return "0"
    text = f"{x:#.2g}"  # two significant digits, trailing zeros kept
    if tex and "e" in text:
        mant, exp = text.split("e")
        return f"${mant} \\times 10^{{{int(exp)}}}$"
    return text


def _cell(value: float, se: float, fmt: str, tex: bool) -> str:
    if not math.isfinite(value):
        return "-"
    if abs(se) <= 1e-12 * abs(value):  # a constant (the oracle's length) up to rounding
        se = 0.0
    return f"{format(value, fmt)} ({_se(se, tex)})"


def _groups(rows):
    """Rows grouped by (config keys, method, coord), in first-seen order, with the n values."""
    keys = key_columns(rows)
    groups: dict[tuple, dict[int, dict]] = {}
    for row in rows:
        ident = tuple(row[k] for k in keys) + (row["method"], row["coord"])
        groups.setdefault(ident, {})[row["n"]] = row
    ns = sorted({row["n"] for row in rows})
    return keys, groups, ns


def _diagnostic_rows(rows):
    """Rows for the diagnostics table: one ``theta_bar`` row per setting, then the methods."""
    first = rows[0]["method"]
    return [{**r, "method": "theta_bar"} for r in rows if r["method"] == first] + rows


def _layout(rows, lines_of, tex: bool):
    """Header and body: for each group, the lines ``lines_of(method)`` (label, renderer)."""
    keys, groups, ns = _groups(rows)
    multi = any(row["coord"] for row in rows)
    head = keys + (["coord"] if multi else []) + ["method", ""] + [_n_label(n, tex) for n in ns]
    body, previous = [], None
    for ident, by_n in groups.items():
        lead = list(ident[:-2]) + ([ident[-1]] if multi else []) + [ident[-2]]
        # print repeated keys once, as the paper does
        shown = ["" if previous is not None and previous[: i + 1] == lead[: i + 1] else v for i, v in enumerate(lead)]
        previous = lead
        for j, (label, render) in enumerate(lines_of(ident[-2])):
            first = shown if j == 0 else [""] * len(lead)
            body.append(first + [label] + [render(by_n[n], tex) if n in by_n else "" for n in ns])
    return head, body


_MAIN = [
    ("cover", lambda r, tex: _cell(r["coverage"], r["coverage_se"], ".3f", tex)),
    ("length", lambda r, tex: _cell(r["length"], r["length_se"], "#.3g", tex)),
]
#: Diagnostics of theta_bar itself, shown once per setting (under method "theta_bar").
_ESTIMATE = [
    ("bias/SD", lambda r, tex: _ratio(r["bias"], r["sd"])),
    ("SD", lambda r, tex: f"{r['sd']:.3g}" if math.isfinite(r["sd"]) else "-"),
    ("failed", lambda r, tex: f"{r['n_failed']}/{r['reps'] + r['n_failed']}"),
]
_SE_RATIO = [("SE ratio", lambda r, tex: f"{r['se_ratio']:.3f}" if math.isfinite(r["se_ratio"]) else "-")]
#: Simultaneous coverage of all coordinates, shown on the first coordinate's row.
_JOINT = [("joint cover", lambda r, tex: _cell(r["joint_coverage"], r["joint_coverage_se"], ".3f", tex)
           if r["coord"] == 0 else "")]


#: Methods whose bias, SD and SE ratio are those of their own point estimate, not theta_bar's.
OWN_ESTIMATE = names(tag="own_estimate")
#: What the diagnostics table says of them (and README's summary.csv columns).
ZOO_ESTIMATES = ("HiGrad's and OB_split's SE ratio divides by the SD of their own estimate (the mean of HiGrad's "
                 "threads, OB_split's own path's average); HulC's interval is the range of its segment averages, "
                 "not an estimate +- z SE: it has no SE ratio.")


def _blank(value) -> bool:
    """A key the setting does not read: ``None`` in a run's rows, ``""`` in its CSV read back."""
    return value is None or value == ""


def _ratio(a: float, b: float) -> str:
    return f"{a / b:+.3f}" if math.isfinite(a) and math.isfinite(b) and b > 0 else "-"


def render_markdown(rows: list[dict], title: str | None = None, notes=()) -> str:
    """Coverage/length table and diagnostics table as GitHub markdown; ``notes``: paragraphs after them."""
    parts = [f"# {title}\n"] if title else []
    head, body = _layout(rows, lambda method: _MAIN, tex=False)
    parts.append("Coverage and mean length of the confidence intervals (standard errors in brackets).\n")
    parts.append(tabulate(body, head, tablefmt="github", disable_numparse=True) + "\n")
    # a key may be None in some rows (an online model's epsilon without privacy; blank in a summary.csv read
    # back, so that `table` orders them as the run did): those sort last
    diag = sorted(_diagnostic_rows(rows), key=lambda r: [(_blank(r[k]), 0 if _blank(r[k]) else r[k])
                                                         for k in key_columns(rows)])
    per_method = _SE_RATIO + (_JOINT if "joint_coverage" in rows[0] else [])
    head, body = _layout(diag, lambda method: _ESTIMATE if method == "theta_bar" else per_method, tex=False)
    parts.append(
        "Diagnostics: bias of theta_bar in units of its empirical SD, the SD, failed (diverged or "
        "non-finite) replications; per method, SE ratio = mean length / (2 z) / SD "
        "(1: as wide as the normal interval with the true SD)"
        + ("; joint cover = share of replications whose intervals cover all coordinates at once "
           "(BBjoint is built for it, the others are per coordinate).\n" if "joint_coverage" in rows[0] else ".\n")
    )
    if any(r["method"] in OWN_ESTIMATE for r in rows):
        parts[-1] = parts[-1].rstrip("\n") + " " + ZOO_ESTIMATES + "\n"
    parts.append(tabulate(body, head, tablefmt="github", disable_numparse=True) + "\n")
    parts += [f"{note}\n" for note in notes]
    return "\n".join(parts)


def render_latex(rows: list[dict]) -> str:
    """Coverage/length table as a LaTeX tabular (booktabs-free, raw math)."""
    head, body = _layout(rows, lambda method: _MAIN, tex=True)
    return tabulate(body, head, tablefmt="latex_raw", disable_numparse=True) + "\n"
