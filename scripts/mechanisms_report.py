"""A reading of the mechanism runs: tables, the length-ratio figure, the winners and the PM / Duchi crossing.

Reads ``results/mechanisms`` (the mean model, X ~ U(0, 1), configs/mechanisms.yaml),
``results/mechanisms_beta`` (X ~ Beta(2, 5)), ``results/mechanisms_linear``
(linear regression, d = 4, configs/mechanisms_linear.yaml), ``results/mechanisms_linear_d5``
(d = 5) and ``results/mechanisms_crossing`` / ``results/mechanisms_crossing_beta`` (configs/mechanisms_crossing*.yaml) and
writes, into ``results/mechanisms/``:

* ``report.md``: coverage (Monte Carlo SE) and mean length over the Laplace
  oracle's, per mechanism, epsilon and method; at each epsilon the mechanism
  with the shortest interval among those that cover (coverage not below the
  level by more than 3 Monte Carlo SEs), against the one the worst-case
  variance ordering and the data-averaged variance (the oracle's) predict;
  and the epsilon where PM's intervals become shorter than Duchi's;
* ``length_ratio.png``: length over the Laplace oracle's against epsilon, a
  line per mechanism, beside the worst-case standard deviation ratios.

    python scripts/mechanisms_report.py
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import optimize  # noqa: E402
from tabulate import tabulate  # noqa: E402

from ldpsim.models import MODELS  # noqa: E402
from ldpsim.privacy.mechanisms.duchi import duchi_variance  # noqa: E402
from ldpsim.privacy.mechanisms.hybrid import hybrid_variance  # noqa: E402
from ldpsim.privacy.mechanisms.piecewise import piecewise_variance  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LEVEL = 0.9
METHODS = ("BB", "BM", "SN", "HulC", "oracle")
#: A method "covers" where its coverage is not below the level by more than this many Monte Carlo SEs.
SLACK_SE = 3.0


def read(path: Path) -> list[dict]:
    import csv

    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for key in ("epsilon", "n", "coverage", "coverage_se", "length", "length_se"):
            r[key] = float(r[key])
        r["coord"] = int(r.get("coord") or 0)
    return rows


def cells(rows: list[dict]) -> dict:
    """``{(n, mechanism, epsilon, method): (coverage, se, length, length_se)}``, averaged over coordinates."""
    out: dict = {}
    for r in rows:
        out.setdefault((r["n"], r["mechanism"], r["epsilon"], r["method"]), []).append(r)
    merged = {}
    for key, group in out.items():
        cov = np.mean([g["coverage"] for g in group])
        se = math.sqrt(np.mean([g["coverage_se"] ** 2 for g in group]))  # coordinates are not independent: indicative
        merged[key] = (cov, se, np.array([g["length"] for g in group]), np.array([g["length_se"] for g in group]))
    return merged


#: The runs read: results folder, model, the model's keys there.
RUNS = (("mechanisms", "mean", {}), ("mechanisms_beta", "mean", {"law": "beta(2, 5)"}),
        ("mechanisms_linear", "linear", {}), ("mechanisms_linear_d5", "linear", {"dim": 4}))


def _title(model: str, keys: dict) -> str:
    if model == "mean":
        return "mean, X ~ " + ("Beta(2, 5)" if keys.get("law", "uniform") != "uniform" else "U(0, 1)")
    return f"linear, d = {keys.get('dim', 3) + 1}"


def worst_sd(mechanism: str, model: str, epsilon: float, keys: dict) -> float:
    """The worst-case SD of one released coordinate of ``mechanism`` in ``model`` (gradient scale)."""
    m = MODELS[model](epsilon=epsilon, mechanism=mechanism, **keys)
    mech = m.mechanism
    if mechanism == "laplace":
        return math.sqrt(mech.variance)
    half = 0.5 if model == "mean" else 1.0  # the mean's gradient spans 1 (half-width 1/2); linear's |g_j| <= 1
    return half * math.sqrt(mech.variance)


def oracle_length(model: str, mechanism: str, epsilon: float, coords: int) -> np.ndarray:
    return np.sqrt(np.diag(MODELS[model](epsilon=epsilon, mechanism=mechanism).sigma()))[:coords]


def table(merged: dict, n: float, mechanisms, epsilons) -> tuple[str, dict]:
    """The markdown table of one model and n, and the winners per (epsilon, method)."""
    head = ["mechanism", "epsilon"] + [f"{m} cover" for m in METHODS] + [f"{m} length" for m in METHODS]
    body, winners = [], {}
    for eps in epsilons:
        base = merged.get((n, "laplace", eps, "oracle"))
        if base is None:
            continue
        for mech in mechanisms:
            row = [mech, f"{eps:g}"]
            lengths = []
            for method in METHODS:
                c = merged.get((n, mech, eps, method))
                row.append("" if c is None else f"{c[0]:.3f} ({c[1]:.3f})")
                lengths.append(None if c is None else float(np.mean(c[2] / base[2])))
            row += ["" if v is None else f"{v:.3f}" for v in lengths]
            body.append(row)
        for method in METHODS:
            if not any((n, mech, eps, method) in merged for mech in mechanisms):
                continue  # not run
            covering = []
            for mech in mechanisms:
                c = merged.get((n, mech, eps, method))
                if c is None or c[0] < LEVEL - SLACK_SE * c[1]:
                    continue
                ratio = float(np.mean(c[2] / base[2]))
                rel_se = float(np.mean(c[3] / c[2]))  # the relative SE of its mean length (0 for the oracle)
                covering.append((ratio, mech, rel_se))
            if not covering:
                winners[eps, method] = None
                continue
            covering.sort()
            best, name, se = covering[0]
            # mechanisms not told apart from the shortest: within 2 combined SEs (the oracle's: equal to 1e-6)
            ties = [m for r, m, e in covering[1:] if r - best <= max(2.0 * best * math.hypot(se, e), 1e-6 * best)]
            winners[eps, method] = (name, best, ties)
    return tabulate(body, head, tablefmt="github", disable_numparse=True), winners


def _winner(winners: dict, eps: float, method: str) -> str:
    if (eps, method) not in winners:
        return ""  # not run
    found = winners[eps, method]
    if found is None:
        return "none covers"
    name, ratio, ties = found
    return f"{name} ({ratio:.3f})" + (f"; not told apart: {', '.join(ties)}" if ties else "")


def _least(values: dict) -> str:
    """The key of the least value, with those equal to it (to 1e-9) joined by '='."""
    low = min(values.values())
    return " = ".join(k for k, v in values.items() if v <= low * (1.0 + 1e-9))


def predictions(model: str, mechanisms, eps: float, keys: dict) -> tuple[str, str]:
    """The mechanism of least worst-case variance, and of least oracle variance (the data-averaged one)."""
    worst = _least({m: worst_sd(m, model, eps, keys) for m in mechanisms})
    averaged = _least({m: float(np.mean(np.diag(MODELS[model](epsilon=eps, mechanism=m, **keys).sigma())))
                       for m in mechanisms})
    return worst, averaged


def averaged_crossing(keys: dict) -> float:
    """The epsilon where PM's and Duchi's oracle variances of the mean model are equal (a root in [0.3, 3])."""
    def gap(eps):
        return float(MODELS["mean"](epsilon=eps, mechanism="piecewise", **keys).sigma()[0, 0]
                     - MODELS["mean"](epsilon=eps, mechanism="duchi", **keys).sigma()[0, 0])

    return float(optimize.brentq(gap, 0.3, 3.0, xtol=1e-12))


def crossing(merged: dict, n: float) -> list[list[str]]:
    """Per method: the epsilon where PM's mean length falls below Duchi's.

    The log of the length ratio is nearly linear in epsilon over the grid
    (the oracle's to 0.4%): a weighted least-squares line through the nine
    points (weights 1 / SE^2 of the log ratio, the two mechanisms' lengths
    independent: their streams differ) and its root, with a delta-method SE.
    The oracle's lengths are exact (SE 0): its root is the line's through
    exact points, beside the exact crossing of the averaged variances.
    """
    rows = []
    epsilons = np.array(sorted({k[2] for k in merged if k[1] == "piecewise"}))
    for method in METHODS:
        ratios, ses = [], []
        for eps in epsilons:
            p, d = merged[n, "piecewise", eps, method], merged[n, "duchi", eps, method]
            r = float(p[2][0] / d[2][0])
            ratios.append(r)
            ses.append(r * math.hypot(p[3][0] / p[2][0], d[3][0] / d[2][0]))
        ratios, ses = np.array(ratios), np.array(ses)
        y, s = np.log(ratios), np.maximum(ses / ratios, 1e-12)
        X = np.column_stack([np.ones_like(epsilons), epsilons])
        W = 1.0 / s**2
        cov = np.linalg.inv(X.T @ (W[:, None] * X))
        a, b = cov @ X.T @ (W * y)
        root = -a / b
        grad = np.array([-1.0 / b, a / b**2])
        se = math.sqrt(float(grad @ cov @ grad)) if method != "oracle" else 0.0
        found = f"{root:.3f}" + (f" ({se:.3f})" if method != "oracle" else "")
        rows.append([method, found] + [f"{r:.3f} ({e:.3f})" for r, e in zip(ratios, ses)])
    return rows, list(epsilons)


def _epsilon_axis(ax, ticks) -> None:
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.set_xticks(list(ticks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())


def figure(panels, path: Path) -> None:
    cols = 3
    rows = -(-(len(panels) + 1) // cols)
    fig, grid_axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), squeeze=False)
    axes = list(grid_axes.ravel())
    for ax in axes[len(panels) + 1:]:
        ax.set_axis_off()
    axes = axes[:len(panels) + 1]
    for ax, (title, merged, n, mechanisms, epsilons, method) in zip(axes, panels):
        for mech in mechanisms:
            lines = {}
            for which in (method, "oracle"):
                ys = []
                for eps in epsilons:
                    c, base = merged.get((n, mech, eps, which)), merged.get((n, "laplace", eps, "oracle"))
                    ys.append(np.nan if c is None or base is None else float(np.mean(c[2] / base[2])))
                lines[which] = ys
            drawn = ax.plot(epsilons, lines[method], marker="o", label=mech)
            ax.plot(epsilons, lines["oracle"], ls="--", lw=0.9, color=drawn[0].get_color())
        _epsilon_axis(ax, epsilons)
        ax.axhline(1.0, color="grey", lw=0.6)
        ax.set_xlabel("epsilon")
        ax.set_ylabel(f"{method} length / Laplace oracle length")
        ax.set_title(title + " (dashed: the oracle, the averaged variance's prediction)", fontsize=8)
    ax = axes[-1]
    grid = np.geomspace(0.3, 10.0, 200)
    for name, sd in (("Laplace (sensitivity 1)", lambda e: math.sqrt(2.0) * 2.0 / e),
                     ("Duchi, worst case t = 0", lambda e: math.sqrt(duchi_variance(e, 0.0))),
                     ("PM, worst case |t| = 1", lambda e: math.sqrt(piecewise_variance(e, 1.0))),
                     ("HM (any t)", lambda e: math.sqrt(float(hybrid_variance(e, 0.0))))):
        # on the scale of t in [-1, 1]: Laplace at sensitivity 2 has scale 2 / epsilon
        ax.plot(grid, [sd(e) / (math.sqrt(2.0) * 2.0 / e) for e in grid], label=name)
    ax.axvline(1.29, color="grey", ls=":", lw=0.8)
    _epsilon_axis(ax, [0.3, 0.5, 1, 2, 4, 8])
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("worst-case SD / Laplace SD (one coordinate)")
    ax.set_title("the worst-case variance ordering (PM = Duchi at 1.29)", fontsize=9)
    for a in axes:
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(ROOT / "results"))
    args = parser.parse_args(argv)
    res = Path(args.results)
    lines = ["# The LDP mechanisms: coverage and length (written by scripts/mechanisms_report.py)", ""]
    panels = []
    for folder, model, keys in RUNS:
        path = res / folder / "summary.csv"
        if not path.is_file():
            lines.append(f"({folder}: not run)")
            continue
        rows = read(path)
        merged = cells(rows)
        mechanisms = list(dict.fromkeys(r["mechanism"] for r in rows))
        epsilons = sorted({r["epsilon"] for r in rows})
        coords = max(r["coord"] for r in rows) + 1
        for n in sorted({r["n"] for r in rows}):
            text, winners = table(merged, n, mechanisms, epsilons)
            lines += [f"## {_title(model, keys)}, n = {n:.0e} ({folder})", "",
                      "Coverage (Monte Carlo SE) of the 90% intervals, and their mean length over the Laplace "
                      "oracle's" + (f" (averaged over the {coords} coordinates)" if coords > 1 else "") + ".", "",
                      text, "", "Shortest interval that covers (coverage >= 0.9 - 3 SE), per method, and the "
                      "mechanisms the variances predict (least worst-case variance; least oracle variance, i.e. "
                      "the variance averaged over the data):", ""]
            head = ["epsilon"] + list(METHODS) + ["worst-case prediction", "averaged prediction"]
            body = []
            for eps in epsilons:
                worst, averaged = predictions(model, [m for m in mechanisms], eps, keys)
                body.append([f"{eps:g}"] + [_winner(winners, eps, m) for m in METHODS] + [worst, averaged])
            lines += [tabulate(body, head, tablefmt="github", disable_numparse=True), ""]
        n = max(r["n"] for r in rows)  # the figure: each run at its largest n
        panels.append((f"{_title(model, keys)}, n = {n:.0e}, BB", merged, n, mechanisms, epsilons, "BB"))
    for folder, keys in (("mechanisms_crossing", {}), ("mechanisms_crossing_beta", {"law": "beta(2, 5)"})):
        path = res / folder / "summary.csv"
        if not path.is_file():
            lines.append(f"({folder}: not run)")
            continue
        merged = cells(read(path))
        n = sorted({k[0] for k in merged})[0]
        rows, epsilons = crossing(merged, n)
        law = "Beta(2, 5)" if keys else "U(0, 1)"
        lines += [f"## Where PM's intervals become shorter than Duchi's (mean model, X ~ {law}, n = {n:.0e}; {folder})",
                  "", "Length of PM over Duchi's (its SE), and the epsilon where it crosses 1 (root of a weighted "
                  "least-squares line through log ratio against epsilon; its delta-method SE). The worst-case "
                  "variances cross at 1.290, the variances averaged over this data (t = 1 - 2X, X ~ "
                  f"{law}) at {averaged_crossing(keys):.3f}:",
                  "", tabulate(rows, ["method", "crossing"] + [f"eps {e:g}" for e in epsilons], tablefmt="github",
                               disable_numparse=True), ""]
    out = res / "mechanisms"
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text("\n".join(lines) + "\n")
    if panels:
        figure(panels, out / "length_ratio.png")
    print("\n".join(lines))
    print(f"wrote {out / 'report.md'} and {out / 'length_ratio.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
