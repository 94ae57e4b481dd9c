"""The zoo's table and figure (``zoo.md``, ``zoo.png`` from ``zoo.csv``): what they draw, and ``table`` of a damaged
or foreign ``zoo.csv`` in one line."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import ldpsim
from ldpsim.cli import main

from run_helpers import ROOT


def _copy(name: str, tmp_path: Path) -> Path:
    """A committed run's directory, copied (``table`` rewrites its tables)."""
    out = tmp_path / name
    shutil.copytree(ROOT / "results" / name, out)
    return out


@pytest.mark.slow  # 16 s (a zoo kernel for a figure test): CI's slow tier
def test_a_zoo_run_with_a_level_grid_draws_a_nominal_line_per_level(tmp_path):
    # zoo_tables drew the nominal line with the list [0.8, 0.95]: matplotlib refused, the run ended in exit 70
    # one zoo method draws the zoo's figure (every method would compile a kernel of its own for minutes)
    result = ldpsim.run({"model": "quantile", "n": 2000, "reps": 4, "seed": 1, "level": [0.8, 0.95], "B": 60,
                         "methods": ["BB", "SN", "OBM"]}, out=tmp_path / "run", n_jobs=1, progress=False)
    assert result.meta["status"] == "complete"
    assert (tmp_path / "run" / "zoo.png").is_file()
    text = (tmp_path / "run" / "zoo.md").read_text()
    assert "## level = 0.8, n = 2000" in text and "## level = 0.95, n = 2000" in text
    assert "Nominal coverage: each table's level" in text


def test_the_zoo_figure_draws_each_panels_own_level(tmp_path, monkeypatch):
    from ldpsim.studies.coverage import zoo_tables

    drawn = []
    real = zoo_tables.figure_class

    def spy(name):
        Figure = real(name)

        class Spy(Figure):
            def subplots(self, *args, **kwargs):
                axes = super().subplots(*args, **kwargs)
                for ax in axes.flat:
                    original = ax.axhline
                    ax.axhline = lambda y, *a, _o=original, **k: (drawn.append(y), _o(y, *a, **k))[1]
                return axes
        return Spy

    monkeypatch.setattr(zoo_tables, "figure_class", spy)
    rows = [{"level": level, "epsilon": eps, "method": m, "n": 100, "reps": 4, "n_failed": 0, "coverage": 0.9,
             "coverage_se": 0.1, "length_ratio": 1.0, "length_ratio_se": 0.0, "privacy_cost": 1, "state_floats": 0,
             "seconds_per_rep": 0.1} for level in (0.8, 0.95) for eps in (1.0, math.inf) for m in ("SN", "HulC")]
    zoo_tables.write_zoo_figure(tmp_path, rows, "t", [0.8, 0.95])
    assert sorted(y for y in drawn if y != 1.0) == [0.8, 0.95]


def test_check_and_the_zoo_table_leave_out_the_mechanism_where_there_is_none(tmp_path, capsys):
    # `check` printed "mechanism = None" at epsilon = inf; `table` re-rendered the run's "mechanism = None" as
    # "mechanism = " (zoo.csv holds a blank)
    assert main(["check", str(ROOT / "configs" / "zoo_quantile.yaml")]) == 0
    out = capsys.readouterr().out
    assert "epsilon = inf (n = 1e5)" in out and "None" not in out
    out = _copy("zoo_quantile", tmp_path)
    from ldpsim.studies.coverage.zoo_tables import render_zoo_markdown

    run = render_zoo_markdown([{"epsilon": math.inf, "mechanism": None, "method": "SN", "n": 10, "reps": 1,
                                "n_failed": 0, "coverage": 1.0, "coverage_se": 0.0, "length_ratio": 1.0,
                                "length_ratio_se": 0.0, "privacy_cost": 1, "state_floats": 3,
                                "seconds_per_rep": 0.1}], "t", 0.9)
    assert "## epsilon = inf, n = 10" in run
    assert main(["table", str(out)]) == 0
    text = (out / "zoo.md").read_text()
    assert "## epsilon = inf, n = 100000" in text and "mechanism = ," not in text and "None" not in text


def test_the_oracles_length_has_no_standard_error(tmp_path):
    # the oracle's length 2 z sqrt(Sigma / n) is a number: its spread over replications is the rounding of the ends
    from ldpsim.studies.coverage.zoo_tables import _rounding_only

    est = np.random.default_rng(0).normal(size=(50, 2)) * 1e3
    half = np.array([0.25, 3.0])
    assert _rounding_only(est - half, est + half)
    wider = half * (1.0 + 1e-9 * np.arange(50)[:, None])  # lengths that differ by 1e-9 relative: not rounding
    assert not _rounding_only(est - wider, est + wider)
    # (a run's zoo table: tests/test_zoo_study.py, test_zoo_methods_leave_the_main_path_and_the_classic_intervals_alone,
    # whose kernels this test compiled again, for minutes of the fast tier)
    # a zoo.csv of an earlier run holds the rounding (4.8e-18); its table shows 0
    out = _copy("zoo_quantile", tmp_path)
    assert main(["table", str(out)]) == 0
    rows = [line for line in (out / "zoo.md").read_text().splitlines() if line.startswith("| oracle ")]
    assert len(rows) == 4 and all(re.search(r"\| 1\.000 \+- 0 +\|", line) for line in rows), rows


def test_one_replication_has_no_standard_error_and_a_method_that_always_failed_no_number(tmp_path):
    # with reps = 1 the zoo table gave every SE as 0 (the SD of one value), where summary.csv says NaN
    # a method that failed in every replication was rendered " +- " in zoo.md
    from ldpsim.studies.coverage.zoo_tables import render_zoo_markdown

    result = ldpsim.run({"model": "quantile", "n": 2000, "reps": 1, "seed": 1, "B": 60,
                         "methods": ["BB", "SN", "OBM"]}, n_jobs=1, progress=False)
    for row in result.tables["zoo"]:
        assert math.isnan(row["coverage_se"]) and math.isnan(row["length_ratio_se"]), row
    assert all(math.isnan(r["length_se"]) for r in result.rows)
    row = dict(result.tables["zoo"][0], coverage=math.nan, coverage_se=math.nan, length_ratio=math.nan,
               length_ratio_se=math.nan, reps=0, n_failed=1)
    text = render_zoo_markdown([row], "t", 0.9)
    cells = [c.strip() for c in text.splitlines()[-1].split("|")]
    assert cells[2:4] == ["-", "-"], cells
    one = render_zoo_markdown(result.tables["zoo"][:1], "t", 0.9)
    assert " +- " not in one.splitlines()[-1]


def test_table_refuses_a_zoo_directory_without_its_zoo_csv(tmp_path, capsys):
    # zoo.md and zoo.png were left as they were, silently stale
    out = _copy("zoo_quantile", tmp_path)
    (out / "zoo.csv").unlink()
    before = (out / "zoo.md").read_text()
    assert main(["table", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"ldpsim: error: dir = {str(out)!r} has no zoo.csv, which a run with the zoo's methods writes"
    assert (out / "zoo.md").read_text() == before


@pytest.mark.parametrize("damage, message", [
    (lambda lines: [",".join(line.split(",")[:12]) for line in lines], r"zoo\.csv' has no 'seconds_per_rep' column"),
    (lambda lines: lines[:1] + [lines[1].replace(",1,17,", ",one,17,")] + lines[2:],
     r"zoo\.csv', line 2: privacy_cost = 'one' is not a number"),
    (lambda lines: lines[:1] + [lines[1].replace(",BB,", ",,")] + lines[2:], r"zoo\.csv', line 2: method = ''"),
])
def test_table_blames_a_damaged_zoo_csv_not_summary_csv(tmp_path, capsys, damage, message):
    out = _copy("zoo_quantile", tmp_path)
    lines = (out / "zoo.csv").read_text().splitlines()
    (out / "zoo.csv").write_text("\n".join(damage(lines)) + "\n")
    assert main(["table", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "summary.csv" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("change, message", [
    (lambda lines: [",".join(line.split(",")[1:]) for line in lines],  # the epsilon column dropped
     r"zoo\.csv has the key columns \['mechanism'\], summary\.csv \['epsilon', 'mechanism'\]: they are not from one run"),
    (lambda lines: [line for line in lines if ",HulC," not in line],
     r"^ldpsim: error: zoo\.csv has the methods BB, BM, HiGrad, OB, OBM, OB_split, SN, oracle, plugin_oracle, "
     r"summary\.csv BB, BM, HiGrad, HulC, OB"),
])
def test_table_refuses_a_zoo_csv_of_another_run(tmp_path, capsys, change, message):
    # a zoo.csv with other key columns or methods than summary.csv was drawn without a word (its four epsilons
    # in one table, or methods missing)
    out = _copy("zoo_quantile", tmp_path)
    lines = (out / "zoo.csv").read_text().splitlines()
    (out / "zoo.csv").write_text("\n".join(change(lines)) + "\n")
    assert main(["table", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and len(err.strip().splitlines()) == 1, err
