"""Long-format CSV tables: one row per setting x statistic, written as a pure function of the numbers."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from ..engine.errors import ConfigError
from ..engine.runs.outdir import temporary_beside


def write_csv(rows: list[dict], path: Path) -> None:
    """Write rows; floats as ``repr`` so the file is a pure function of the numbers.

    The file is written beside its final name and renamed over it: a run
    killed while writing never leaves half a table.
    """
    if not rows:
        raise ValueError("no rows to write")
    path = Path(path)
    columns = list(rows[0])
    fd, tmp = temporary_beside(path)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(columns)
            for row in rows:
                writer.writerow([repr(v) if isinstance(v, float) else v for v in (row[c] for c in columns)])
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def parse_cell(text: str):
    """A CSV cell back as an int, a float or the string itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


#: What a column of a table may hold (:attr:`ldpsim.studies.base.Study.table_columns`).
KINDS = {
    "text": ("text", lambda v: isinstance(v, str) and v != ""),
    "int": ("an integer", lambda v: isinstance(v, int)),
    "count": ("an integer >= 0", lambda v: isinstance(v, int) and v >= 0),
    "positive": ("an integer >= 1", lambda v: isinstance(v, int) and v >= 1),
    "number": ("a number", lambda v: isinstance(v, (int, float))),
    "number?": ("a number or blank", lambda v: isinstance(v, (int, float)) or v == ""),
}


def read_csv(path: Path, text_columns=("method", "estimator"), columns: dict[str, str] | None = None) -> list[dict]:
    """Read a table written by :func:`write_csv`, numbers parsed (``text_columns`` kept as strings).

    Parameters
    ----------
    path : Path
    text_columns : sequence of str
        Columns kept as text.
    columns : dict, optional
        Column -> kind (:data:`KINDS`) that the table must have.

    Raises
    ------
    ConfigError
        One line naming the file (and the line and column) if the file
        cannot be read, is empty, has rows of another length than its
        header, lacks a column of ``columns`` or holds a cell of another kind.
    """
    path = Path(path)
    where = repr(str(path))
    if path.is_dir():
        raise ConfigError(f"{where} is a directory, not a table")
    if path.exists() and not path.is_file():  # a link to /dev/zero would be read forever
        raise ConfigError(f"{where} is not a regular file")
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where} is not UTF-8 text") from None
    try:
        lines = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ConfigError(f"{where} is not a CSV table: {exc}") from None
    if not lines or not any(lines[0]):
        raise ConfigError(f"{where} is empty: no header")
    header = lines[0]
    if len(set(header)) != len(header) or "" in header:
        raise ConfigError(f"{where} has a blank or repeated column name in its header")
    rows = []
    for number, cells in enumerate(lines[1:], start=2):
        if not cells:
            continue
        if len(cells) != len(header):
            raise ConfigError(f"{where}, line {number}: {len(cells)} cells, but the header has {len(header)}")
        rows.append({k: (v if k in text_columns else parse_cell(v)) for k, v in zip(header, cells)})
    if not rows:
        raise ConfigError(f"{where} has a header but no rows")
    for column, kind in (columns or {}).items():
        if column not in header:
            raise ConfigError(f"{where} has no {column!r} column: not a table of this study")
        label, ok = KINDS[kind]
        for number, row in enumerate(rows, start=2):
            value = row[column]
            if column in text_columns and kind != "text":
                value = parse_cell(value)
            if not ok(value):
                raise ConfigError(f"{where}, line {number}: {column} = {value!r} is not {label}")
    return rows


def columns_before(rows: list[dict], first: str) -> list[str]:
    """The config-key columns of rows: every column before ``first`` (``method``, ``estimator``)."""
    columns = list(rows[0])
    return columns[: columns.index(first)]


__all__ = ["KINDS", "columns_before", "parse_cell", "read_csv", "write_csv"]
