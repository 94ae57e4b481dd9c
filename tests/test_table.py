"""``ldpsim table`` (and ``compare``) read a run's directory back: a damaged, foreign or odd one is one line.

Each ends with exit status 2 and ONE line ``ldpsim: error: ...`` naming the file and what is wrong with it, and
leaves the directory as it was.
"""

from __future__ import annotations

import pytest

import ldpsim
from ldpsim.studies import STUDIES

from run_helpers import TINY_STUDIES, api_run, checked_cli, cli, one_line_error, snapshot


# --- a run's own directory, damaged -------------------------------------------------------------------------


@pytest.mark.parametrize("name,text,fragment", [
    ("summary.csv", "", "summary.csv' is empty: no header"),
    ("summary.csv", "method,coord,n\nBB,0,5\n", "has no 'reps' column"),
    ("summary.csv", "method\n", "has a header but no rows"),
    ("summary.csv", None, "line 3: 12 cells, but the header has 13"),  # a short row
    ("summary.csv", "coverage=abc", "line 2: coverage = 'abc' is not a number"),
    ("summary.csv", "drop method", "has no 'method' column: not a table of this study"),
    ("summary.csv", b"\xff\xfe", "summary.csv' is not UTF-8 text"),
    ("summary.csv", "a\n" + "x" * 200_000 + "\n", "is not a CSV table: field larger than field limit"),
    ("meta.json", "{bad json", "meta.json' cannot be read: not valid JSON: Expecting property name"),
    ("meta.json", "[]", "meta.json' cannot be read: it does not hold a JSON object"),
    ("meta.json", '{"config": [1]}', "meta.json' has a config that is not a mapping"),
    ("meta.json", '{"config": {"study": "nope"}}', "study = 'nope' is not one of: coverage, trajectory"),
    ("meta.json", '{"config": {"study": "trajectory"}}', "summary.csv' has no 'estimator' column"),
])
@pytest.mark.parametrize("command", ["table", "compare"])
def test_table_and_compare_of_a_damaged_directory(earlier, capsys, name, text, fragment, command):
    out, _, _ = earlier
    path = out / name
    lines = path.read_text().splitlines(keepends=True)
    if text is None:
        path.write_text(lines[0] + lines[1] + lines[2].rsplit(",", 1)[0] + "\n")
    elif text == "coverage=abc":
        head = lines[0].strip().split(",")
        cells = lines[1].strip().split(",")
        cells[head.index("coverage")] = "abc"
        path.write_text(lines[0] + ",".join(cells) + "\n")
    elif text == "drop method":
        path.write_text("".join(line.replace("method,", "what,") for line in lines))
    elif isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    before = snapshot(out)
    if command == "compare" and "trajectory" in str(text):  # compare reads the study before the tables
        fragment = "holds a trajectory run: compare scores the coverage study's intervals"
    status, _, err = cli(capsys, command, out)
    one_line_error(status, err, fragment)
    assert snapshot(out) == before


# --- a directory that is not a run's ------------------------------------------------------------------------


def test_table_of_a_trace_directory_says_what_it_is(tmp_path, capsys):
    (tmp_path / "trace.csv").write_text("checkpoint\n10\n")
    status, _, err = cli(capsys, "table", tmp_path)
    one_line_error(status, err, "holds a trace (trace.csv, no summary.csv)")


def test_table_of_a_missing_or_odd_directory(tmp_path, capsys):
    status, _, err = cli(capsys, "table", tmp_path / "none")
    one_line_error(status, err, f"dir = '{tmp_path / 'none'}' not found")
    status, _, err = cli(capsys, "table", "")
    one_line_error(status, err, "dir = '' is empty")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "summary.csv").mkdir()
    status, _, err = cli(capsys, "table", tmp_path / "d")
    one_line_error(status, err, "has no summary.csv")


# --- the tables of the dpsgd and sagd studies ---------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A tiny finished run of each study, made once; tests damage copies."""
    root = tmp_path_factory.mktemp("studies")
    runs = {}
    for study, mapping in TINY_STUDIES.items():
        api_run(mapping, out=root / study)
        runs[study] = root / study
    return runs


def damages():
    for study in TINY_STUDIES:
        for table, columns in STUDIES[study].table_columns.items():
            number = next(c for c, kind in columns.items() if kind in ("number", "count", "positive"))
            for damage in ("empty", "short row", f"{number}=abc", "drop column"):
                yield study, table, damage


@pytest.mark.parametrize("study,table,damage", list(damages()))
def test_table_of_a_damaged_table_is_one_line(finished, tmp_path, capsys, study, table, damage):
    import shutil

    out = tmp_path / "o"
    shutil.copytree(finished[study], out)
    path = out / f"{table}.csv"
    lines = path.read_text().splitlines(keepends=True)
    head = lines[0].rstrip("\n").split(",")
    if damage == "empty":
        path.write_text("")
        fragment = "is empty: no header"
    elif damage == "short row":
        path.write_text(lines[0] + lines[1].rsplit(",", 1)[0] + "\n")
        fragment = f"line 2: {len(head) - 1} cells, but the header has {len(head)}"
    elif damage == "drop column":
        column = next(iter(STUDIES[study].table_columns[table]))
        path.write_text("".join(line.replace(f"{column},", "what,", 1) if i == 0 else line
                                for i, line in enumerate(lines)))
        fragment = f"has no {column!r} column: not a table of this study"
    else:
        column = damage.split("=")[0]
        cells = lines[1].rstrip("\n").split(",")
        cells[head.index(column)] = "abc"
        path.write_text(lines[0] + ",".join(cells) + "\n")
        fragment = f"line 2: {column} = 'abc' is not"
    status, _, err = checked_cli(capsys, "table", out)
    one_line_error(status, err, f"{table}.csv", fragment)


def test_every_declared_table_column_is_written(finished):
    """The declarations match what the studies write (a renamed column would make every table unreadable)."""
    for study, out in finished.items():
        result = ldpsim.open_result(out)
        for table, columns in STUDIES[study].table_columns.items():
            assert set(columns) <= set(result.tables[table][0]), (study, table)
