"""Long-format CSV tables: one row per setting x statistic, written as a pure function of the numbers."""

from __future__ import annotations

import csv
from pathlib import Path


def write_csv(rows: list[dict], path: Path) -> None:
    """Write rows; floats as ``repr`` so the file is a pure function of the numbers."""
    if not rows:
        raise ValueError("no rows to write")
    columns = list(rows[0])
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([repr(v) if isinstance(v, float) else v for v in (row[c] for c in columns)])


def parse_cell(text: str):
    """A CSV cell back as an int, a float or the string itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_csv(path: Path, text_columns=("method", "estimator")) -> list[dict]:
    """Read a table written by :func:`write_csv`, numbers parsed (``text_columns`` kept as strings)."""
    with open(path, newline="") as fh:
        return [{k: (v if k in text_columns else parse_cell(v)) for k, v in row.items()} for row in csv.DictReader(fh)]


def columns_before(rows: list[dict], first: str) -> list[str]:
    """The config-key columns of rows: every column before ``first`` (``method``, ``estimator``)."""
    columns = list(rows[0])
    return columns[: columns.index(first)]


__all__ = ["columns_before", "parse_cell", "read_csv", "write_csv"]
