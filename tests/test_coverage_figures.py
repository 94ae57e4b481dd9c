"""coverage.png of every coverage run: what it draws, where, and when it cannot."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import ldpsim
from ldpsim.api import open_result
from ldpsim.cli import main
from ldpsim.reporting.csvio import write_csv
from ldpsim.reporting.figures import figure_class
from ldpsim.studies.coverage import figures
from ldpsim.studies.coverage.figures import FIGURE, draw, write_coverage_figure

PNG = b"\x89PNG\r\n\x1a\n"
RESULTS = Path(__file__).resolve().parents[1] / "results"
METHODS = ("BB", "BM", "SN", "oracle")


def rows_of(taus=(0.5, 0.9), ns=(1000, 10000, 100000), methods=METHODS, coords=(0,), extra=None):
    """Synthetic summary rows: coverage and length differ by method, n and tau, so each point is identifiable."""
    rows = []
    for tau in taus:
        for j, method in enumerate(methods):
            for coord in coords:
                for k, n in enumerate(ns):
                    oracle = method == "oracle"
                    rows.append({**({"tau": tau} if len(taus) > 1 else {}), **(extra or {}), "method": method,
                                 "coord": coord, "n": n, "reps": 200, "n_failed": 0,
                                 "coverage": 0.80 + 0.02 * j + 0.01 * k + 0.1 * (tau - 0.5) + 0.001 * coord,
                                 "coverage_se": 0.01 + 0.001 * k,
                                 "length": (1.0 if oracle else 1.1 + 0.1 * j) / math.sqrt(n) * (1 + tau + coord),
                                 "length_se": 0.0 if oracle else 0.01 / math.sqrt(n),
                                 "theta_star": 0.0, "bias": 0.0, "sd": 1.0, "se_ratio": 1.0})
    return rows


def _series(fig):
    """``{(panel title, 'coverage' or 'length', method): (x, y, lower bar, upper bar)}`` read off the figure."""
    out = {}
    for sub in fig.subfigs:
        if not sub.texts:  # a grid cell left empty (a panel's only text is its label)
            continue
        panel = sub.texts[0].get_text()
        for ax, what in zip(sub.axes, ("coverage", "length")):
            for container in ax.containers:  # an ErrorbarContainer: (data line, caps, (vertical bars,))
                line, _caps, (bars,) = container
                x, y = (np.asarray(a, dtype=float) for a in line.get_data())
                segments = bars.get_segments()
                lo = np.array([seg[0][1] for seg in segments])
                hi = np.array([seg[1][1] for seg in segments])
                out[(panel, what, container.get_label())] = (x, y, y - lo, hi - y)
    return out


def test_coverage_and_length_ratio_are_the_rows_numbers():
    rows = rows_of()
    fig = draw(figure_class(), rows, "t", 0.9)
    series = _series(fig)
    assert {p for p, _, _ in series} == {"tau = 0.5", "tau = 0.9"}  # a panel per varied key value
    for tau in (0.5, 0.9):
        oracle = {r["n"]: r for r in rows if r["tau"] == tau and r["method"] == "oracle"}
        for method in METHODS:
            mine = sorted((r for r in rows if r["tau"] == tau and r["method"] == method), key=lambda r: r["n"])
            x, y, lo, hi = series[(f"tau = {tau}", "coverage", method)]
            np.testing.assert_allclose(y, [r["coverage"] for r in mine])
            np.testing.assert_allclose(lo, [2 * r["coverage_se"] for r in mine])  # +-2 MC SE
            np.testing.assert_allclose(hi, [2 * r["coverage_se"] for r in mine])
            # offset a little (at most 0.08 decades), never towards another n
            np.testing.assert_allclose(x, [r["n"] for r in mine], rtol=10**0.08 - 1)
            if method == "oracle":
                assert (f"tau = {tau}", "length", method) not in series
                continue
            x, y, lo, hi = series[(f"tau = {tau}", "length", method)]
            np.testing.assert_allclose(y, [r["length"] / oracle[r["n"]]["length"] for r in mine])
            np.testing.assert_allclose(hi, [2 * r["length_se"] / oracle[r["n"]]["length"] for r in mine])
    axes = fig.subfigs[0].axes
    assert axes[0].get_xscale() == "log" and axes[1].get_xscale() == "log"
    nominal = [line for line in axes[0].lines if line.get_linestyle() == "--"]
    assert [tuple(line.get_ydata()) for line in nominal] == [(0.9, 0.9)]  # the nominal level, drawn
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(METHODS)  # one legend, beside no data


def test_panels_per_coordinate_and_the_x_axis_when_n_is_fixed():
    # a multivariate model, n fixed and batch_size varied (the mini-batch run): x = batch_size, a panel per theta_j
    rows = [dict({"batch_size": b}, **{k: v for k, v in r.items()}) for b in (1, 5)
            for r in rows_of(taus=(0.5,), ns=(10**6,), coords=(0, 1, 2))]
    for r in rows:
        r["coverage"] += 0.01 * (r["batch_size"] == 5)
    fig = draw(figure_class(), rows, "", 0.9)
    series = _series(fig)
    assert sorted({p for p, _, _ in series}) == ["theta_0", "theta_1", "theta_2"]
    x, y, _, _ = series[("theta_1", "coverage", "BM")]
    np.testing.assert_allclose(x, [1, 5], atol=0.3 * 4 / 2)
    assert fig.subfigs[0].axes[0].get_xlabel() == "batch_size"
    assert any("n = 10^6" in t.get_text() for t in fig.texts)  # the figure's title


def test_a_level_axis_draws_the_diagonal():
    rows = [dict({"level": lv}, **r) for lv in (0.8, 0.9, 0.95) for r in rows_of(taus=(0.5,), ns=(1000,))]
    fig = draw(figure_class(), rows, "", None)
    ax = fig.subfigs[0].axes[0] if fig.subfigs else fig.axes[0]
    diagonal = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(diagonal) == 1 and tuple(diagonal[0].get_xdata()) == tuple(diagonal[0].get_ydata())


def test_without_the_oracle_the_mean_length_itself(tmp_path):
    rows = rows_of(methods=("BB", "SN"))
    fig = draw(figure_class(), rows, "", 0.9)
    ax = fig.subfigs[0].axes[1]
    assert ax.get_yscale() == "log" and ax.get_title() == "mean length"
    _, y, _, _ = _series(fig)[("tau = 0.5", "length", "SN")]
    np.testing.assert_allclose(y, [r["length"] for r in rows if r["tau"] == 0.5 and r["method"] == "SN"])
    assert write_coverage_figure(tmp_path, rows) == [FIGURE]


def test_failed_settings_and_huge_grids(tmp_path, capsys, monkeypatch):
    rows = rows_of()
    for r in rows:
        if r["tau"] == 0.9:  # every replication failed there
            r.update(coverage=math.nan, coverage_se=math.nan, length=math.nan, length_se=math.nan, reps=0)
    assert write_coverage_figure(tmp_path, rows, "t", 0.9) == [FIGURE]  # no warning (they are errors here)
    monkeypatch.setattr(figures, "MAX_PANELS", 3)  # as a grid of more than MAX_PANELS would, in less time
    many = rows_of(taus=(0.1, 0.2, 0.3, 0.4, 0.5), ns=(1000, 10000), methods=("BB",))
    assert write_coverage_figure(tmp_path, many, "t", 0.9) == [FIGURE]
    assert capsys.readouterr().err.strip().splitlines() == [
        f"ldpsim: {FIGURE} shows the first 3 of its 5 panels (every number is in summary.csv and table.md)"]
    assert (tmp_path / FIGURE).read_bytes()[:8] == PNG


def test_every_coverage_run_writes_it_and_table_redraws_it(tmp_path):
    result = ldpsim.run({"model": "quantile", "n": [600, 2000], "reps": 2}, n_jobs=1, progress=False,
                        out=tmp_path / "run")
    assert FIGURE in result.files and (tmp_path / "run" / FIGURE).read_bytes()[:8] == PNG
    assert FIGURE in result.figures()  # Result.figures lists it
    (tmp_path / "run" / FIGURE).unlink()
    assert main(["table", str(tmp_path / "run")]) == 0  # ldpsim table DIR redraws it from the CSV
    assert (tmp_path / "run" / FIGURE).read_bytes()[:8] == PNG


def test_missing_matplotlib_skips_it_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if not installed
    write_csv(rows_of(), tmp_path / "summary.csv")
    assert open_result(tmp_path).figures() == ["table.md", "table.tex"]
    assert capsys.readouterr().err.strip() == ("ldpsim: figure skipped: coverage.png needs matplotlib, which is not "
                                               "installed: pip install 'matplotlib>=3.7'")


def _coverage_runs():
    for meta in sorted(RESULTS.glob("*/meta.json")):
        m = json.loads(meta.read_text())
        study = (m.get("config") or {}).get("study") or m.get("study") or "coverage"
        if study == "coverage" and (meta.parent / "summary.csv").is_file():
            yield meta.parent.name


def test_the_committed_coverage_runs_are_found():
    assert {"quantile", "quantile_regression", "minibatch", "nonprivate", "sweep_gamma_beta"} <= set(_coverage_runs())


@pytest.mark.parametrize("run", list(_coverage_runs()))
def test_every_committed_coverage_run_has_its_figure(run):
    assert (RESULTS / run / FIGURE).read_bytes()[:8] == PNG


def test_every_point_is_inside_its_axes_and_other_taus_are_not_joined():
    # the quick look (quantile, --n 1e6): x = tau, the outer methods' offset points fell off the axes (2 of 8), and
    # a line joined tau = 0.5 to tau = 0.9 (issue 44, section 5)
    rows = rows_of(taus=(0.5, 0.9), ns=(10**6,))
    fig = draw(figure_class(), rows, "", 0.9)
    axes = fig.subfigs[0].axes if fig.subfigs else fig.axes
    assert axes[0].get_xlabel() == "tau"
    counted = 0
    for ax in axes:
        low, high = ax.get_xlim()
        for container in ax.containers:
            line = container.lines[0]
            x = np.asarray(line.get_xdata(), dtype=float)
            assert ((low < x) & (x < high)).all(), (ax.get_title(), x, (low, high))
            assert line.get_linestyle() == "None"  # points and bars, no line between two taus
            counted += len(x)
    assert counted == 2 * len(METHODS) + 2 * (len(METHODS) - 1)  # every coverage and length-ratio point
    fig = draw(figure_class(), rows_of(), "", 0.9)  # along n, a method's points stay joined
    assert all(c.lines[0].get_linestyle() == "-" for c in fig.subfigs[0].axes[0].containers)
