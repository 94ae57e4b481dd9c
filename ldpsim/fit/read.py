"""``ldpsim fit``'s data: a CSV file read into columns, and the checks that refuse data no interval can describe.

:func:`read_table` reads a CSV file (UTF-8, with or without a byte-order
mark; blank lines skipped) and returns the response and covariate columns,
with a one-line :class:`~ldpsim.engine.errors.ConfigError` for a missing
file or column, a column named twice (in the header or in ``covariates``)
or not named, a header that is a row of numbers (a file without one), a
file separated by something other than commas, a row with another number of
fields, a cell that is not a number (:func:`parse_number`: one rule for
every number fit reads), empty or non-finite, a constant column, too few
rows, or a logistic response that is not 0/1. :func:`check_design` refuses
exactly collinear covariates (a coefficient that is not identified) and
perfectly separated logistic data (an MLE that does not exist), naming the
columns.

**What the messages reveal.** These checks read the raw data and answer its
owner, who runs the command; they are not part of what a fit releases, and
the guarantee covers a run on data that passes them. A message can still
carry data into a log: a cell's value and its row, a constant column's
value, the first data row of a file without a header (read as the column
names). By default (``show_values=False``) the messages name the column and
what is wrong, and leave out every value and row number; ``show_values=True``
(``ldpsim fit --show-values``) puts them back, for the owner's terminal only.
Column names and the number of rows (public under replace-one neighbours)
are always shown.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
from scipy import linalg, optimize

from ..engine.errors import ConfigError

#: Largest magnitude a column may hold when it is used unscaled: its squares (the gradient's norm) stay floats.
MAX_ABS = 1e150
#: A decimal number: sign, digits with at most one point, an optional exponent (what spreadsheets write).
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: Spellings of non-finite values (refused as such, not as text).
NON_FINITE = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
#: The rule, as messages state it.
NUMBER_RULE = "a decimal number (digits, at most one '.', an optional exponent such as e-3; no '_', ',' or hex)"
#: Field separators a CSV file written elsewhere may use instead of commas.
OTHER_SEPARATORS = {";": "';'", "\t": "tabs", "|": "'|'"}


def parse_number(text: str) -> float:
    """The float of ``text`` under :data:`NUMBER` (surrounding blanks allowed); ``ValueError`` otherwise.

    ``float`` alone reads ``1_000`` as 1000 and ``infinity`` as inf but refuses
    ``0x1p3``; every number ``fit`` reads (cells, ``--bounds``) follows this
    one rule instead. Non-finite spellings and overflowing exponents
    (``1e999``) return ``inf`` or ``nan`` for the caller to refuse.
    """
    text = text.strip()
    if NUMBER.fullmatch(text) or NON_FINITE.fullmatch(text):
        return float(text)
    raise ValueError(f"{text!r} is not {NUMBER_RULE}")


def _number_like(text: str) -> bool:
    try:
        parse_number(text)
    except ValueError:
        return False
    return True


def _where(show_values: bool, row: int, value: str | None = None) -> str:
    """`` in row 7`` and the value when shown; nothing otherwise."""
    if not show_values:
        return ""
    return f" {value!r} in row {row}" if value is not None else f" in row {row}"


def read_table(path: str | Path, response: str, covariates: list[str] | None, model: str,
               show_values: bool = False):
    """``(names, X, y)`` from a CSV file, with the one-line errors of the module docstring.

    ``show_values`` adds the offending value and row to the messages (module
    docstring: not for logs).
    """
    path = Path(path)
    hidden = "" if show_values else " (--show-values shows where)"
    try:
        # utf-8-sig: a file saved with a byte-order mark (Excel does) reads its first column's name without it
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            # blank lines (a trailing newline too many) are no rows
            rows = [(reader.line_num, row) for row in reader if row and any(cell.strip() for cell in row)]
    except FileNotFoundError:
        raise ConfigError(f"data file {str(path)!r} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"data file {str(path)!r} is a directory") from None
    except UnicodeDecodeError:  # its message quotes the byte and where it is
        raise ConfigError(f"data file {str(path)!r} is not UTF-8 text (save it as CSV UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"data file {str(path)!r} cannot be read: {exc.strerror or type(exc).__name__}") from None
    except csv.Error as exc:
        raise ConfigError(f"data file {str(path)!r} is not valid CSV: {str(exc).split(':')[0]}") from None
    if not header or not any(h.strip() for h in header):
        raise ConfigError(f"data file {str(path)!r} is empty" if not rows and not header else
                          f"the first line of {path.name} is blank: it must be the header (the column names)")
    header = [h.strip() for h in header]
    if len(header) == 1:
        for sep, name in OTHER_SEPARATORS.items():
            if sep in header[0]:
                raise ConfigError(f"{path.name} seems separated by {name}, not commas: fit reads comma-separated "
                                  "files (save it as CSV)")
    seen = set()
    for j, name in enumerate(header):
        if not name:
            raise ConfigError(f"column {j + 1} of {path.name} has no name in the header: name it")
        if name in seen:
            raise ConfigError(f"{path.name} has two columns named {name!r}: rename one")
        seen.add(name)
    numeric = [h for h in header if _number_like(h)]
    if response not in header:
        if len(numeric) == len(header):  # a file without a header: its first row would be echoed as names
            shown = f" ({', '.join(header)})" if show_values else ""
            raise ConfigError(f"the first row of {path.name} holds only numbers{shown}: it must be the header (the "
                              "column names); add one")
        if numeric and not show_values:
            raise ConfigError(f"response = {response!r} is not a column of {path.name}, whose header has "
                              f"{len(numeric)} number-like names (is the header missing? --show-values lists them)")
        raise ConfigError(f"response = {response!r} is not a column of {path.name}; columns: {', '.join(header)}")
    if covariates is None:
        covariates = [h for h in header if h != response]
    listed = set()
    for name in covariates:
        if name not in header:
            shown = f"; columns: {', '.join(header)}" if show_values or not numeric else \
                f" (--show-values lists its columns, {len(numeric)} of them number-like)"
            raise ConfigError(f"covariate {name!r} is not a column of {path.name}{shown}")
        if name in listed:
            raise ConfigError(f"covariate {name!r} is listed twice")
        listed.add(name)
    if response in covariates:
        raise ConfigError(f"response = {response!r} is also listed as a covariate")
    if not covariates:
        raise ConfigError(f"{path.name} has no covariate column besides the response {response!r}")
    wanted = [response] + list(covariates)
    index = [header.index(name) for name in wanted]
    for line, row in rows:
        if len(row) != len(header):
            where = f"row {line} of {path.name} has {len(row)} fields" if show_values else \
                f"a row of {path.name} has {len(row)} fields"
            raise ConfigError(f"{where}, the header {len(header)} (a comma inside an unquoted value?){hidden}")
    data = np.empty((len(rows), len(wanted)))
    for c, i in enumerate(index):
        cells = [row[i] for _, row in rows]
        # float() in C over the column: on ASCII text without '_' it accepts exactly NUMBER and the non-finite
        # spellings (refused just below), so the rule costs two string scans; cell by cell only to name the
        # first bad cell (a regex over 3.7 million cells doubled the time to read them)
        joined = "\n".join(cells)
        if joined.isascii() and "_" not in joined:
            try:
                data[:, c] = np.fromiter(map(float, cells), float, len(cells))
            except ValueError:
                pass
            else:
                if np.isfinite(data[:, c]).all():
                    continue
        for (line, _), cell in zip(rows, (cell.strip() for cell in cells)):
            try:
                value = parse_number(cell)
            except ValueError:
                what = "an empty value" if not cell else "a value that is not " + NUMBER_RULE
                shown = _where(show_values, line, cell if cell else None)
                raise ConfigError(f"column {wanted[c]!r} of {path.name} has {what}{shown}{hidden}") from None
            if not math.isfinite(value):
                raise ConfigError(f"column {wanted[c]!r} of {path.name} has a non-finite value"
                                  f"{_where(show_values, line, cell)}{hidden}")
    d = len(covariates) + 1  # and the intercept
    need = max(10, 5 * (d + 1))
    if data.shape[0] < need:
        raise ConfigError(f"{path.name} has {data.shape[0]} rows; {d} coefficients need at least {need}")
    for c, name in enumerate(wanted):
        column = data[:, c]
        if np.all(column == column[0]):
            shown = f" ({column[0]:g} in every row)" if show_values else " (one value in every row)"
            raise ConfigError(f"column {name!r} is constant{shown}: it carries no information")
    y = data[:, 0]
    if model == "logistic" and not np.all((y == 0) | (y == 1)):
        bad = int(np.flatnonzero((y != 0) & (y != 1))[0])
        shown = f"; row {rows[bad][0]} has {y[bad]:g}" if show_values else \
            f"; {int(np.sum((y != 0) & (y != 1)))} rows are not (--show-values shows the first)"
        raise ConfigError(f"response {response!r} must be 0 or 1 for the logistic model{shown}")
    return list(covariates), data[:, 1:], y


def _standardised(X: np.ndarray) -> np.ndarray:
    """An intercept and the columns centred and scaled by their range (for numerically fair rank decisions)."""
    # halves first: the range of a column near the largest double overflows
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = hi / 2.0 - lo / 2.0
    return np.column_stack([np.ones(X.shape[0]), (X / 2.0 - (lo / 2.0 + span / 2.0)) / span])


def check_design(names: list[str], X: np.ndarray, y: np.ndarray, model: str) -> None:
    """Refuse exactly collinear covariates and, for the logistic model, separated data (one line each)."""
    Z = _standardised(X)
    # QR with column pivoting: the columns past the numerical rank are combinations of those before them
    _, r, perm = linalg.qr(Z, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > diag[0] * Z.shape[1] * 1e-10))
    if rank < Z.shape[1]:
        labels = ["the intercept"] + list(names)
        dependent = [labels[j] for j in perm[rank:]]
        basis = [labels[j] for j in perm[:rank]]
        raise ConfigError(f"the covariates are exactly collinear: {', '.join(dependent)} "
                          f"{'is a linear combination' if len(dependent) == 1 else 'are linear combinations'} of "
                          f"{', '.join(basis)}; drop {'it' if len(dependent) == 1 else 'them'}")
    if model == "logistic":
        if separated(Z, y):
            raise ConfigError("the logistic MLE does not exist: the covariates separate the response (a direction "
                              "of them puts every 1 on one side and every 0 on the other, ties allowed); no "
                              "interval can cover a parameter that does not exist: drop or merge the separating "
                              "covariates")


def separated(Z: np.ndarray, y: np.ndarray) -> bool:
    """Whether some ``w`` separates the 0s from the 1s, completely or quasi-completely (then no MLE exists).

    Linear programme (Albert & Anderson 1984): maximise ``sum_i s_i`` over
    ``|w_j| <= 1`` with ``s_i = (2 y_i - 1) z_i'w >= 0``; a positive optimum
    is a separating direction.
    """
    sign = 2.0 * y - 1.0
    A = Z * sign[:, None]
    d = Z.shape[1]
    # maximise 1'A w  s.t.  A w >= 0, -1 <= w <= 1
    res = optimize.linprog(-A.sum(axis=0), A_ub=-A, b_ub=np.zeros(A.shape[0]), bounds=[(-1.0, 1.0)] * d,
                           method="highs")
    return bool(res.status == 0 and -res.fun > 1e-7 * A.shape[0])


__all__ = ["MAX_ABS", "NUMBER_RULE", "check_design", "parse_number", "read_table", "separated"]
