"""``ldpsim fit``'s data: a CSV file read into columns, and the checks that refuse data no interval can describe.

:func:`read_table` reads a CSV file (UTF-8, with or without a byte-order
mark) and returns the response and covariate columns, with a one-line
:class:`~ldpsim.engine.errors.ConfigError` for a missing file or column, a
column named twice (in the header or in ``covariates``), a non-numeric,
empty or non-finite cell, a constant column, too few rows, or a logistic
response that is not 0/1. :func:`check_design` refuses exactly collinear
covariates (a coefficient that is not identified) and perfectly separated
logistic data (an MLE that does not exist), naming the columns.

These checks read the data and answer its owner, who runs the command; they
are not part of what a fit releases.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
from scipy import linalg, optimize

from ...engine.errors import ConfigError

#: Largest magnitude a column may hold when it is used unscaled: its squares (the gradient's norm) stay floats.
MAX_ABS = 1e150


def read_table(path: str | Path, response: str, covariates: list[str] | None, model: str):
    """``(names, X, y)`` from a CSV file, with the one-line errors of the module docstring."""
    path = Path(path)
    try:
        # utf-8-sig: a file saved with a byte-order mark (Excel does) reads its first column's name without it
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            rows = list(reader)
    except FileNotFoundError:
        raise ConfigError(f"data file {str(path)!r} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"data file {str(path)!r} is a directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"data file {str(path)!r} cannot be read: {exc}") from None
    except csv.Error as exc:
        raise ConfigError(f"data file {str(path)!r} is not valid CSV: {exc}") from None
    if not header:
        raise ConfigError(f"data file {str(path)!r} is empty")
    header = [h.strip() for h in header]
    seen = set()
    for name in header:
        if name in seen:
            raise ConfigError(f"{path.name} has two columns named {name!r}: rename one")
        seen.add(name)
    if response not in header:
        raise ConfigError(f"response = {response!r} is not a column of {path.name}; columns: {', '.join(header)}")
    if covariates is None:
        covariates = [h for h in header if h != response]
    listed = set()
    for name in covariates:
        if name not in header:
            raise ConfigError(f"covariate {name!r} is not a column of {path.name}; columns: {', '.join(header)}")
        if name in listed:
            raise ConfigError(f"covariate {name!r} is listed twice")
        listed.add(name)
    if response in covariates:
        raise ConfigError(f"response = {response!r} is also listed as a covariate")
    if not covariates:
        raise ConfigError(f"{path.name} has no covariate column besides the response {response!r}")
    wanted = [response] + list(covariates)
    index = [header.index(name) for name in wanted]
    data = np.empty((len(rows), len(wanted)))
    for r, row in enumerate(rows):
        if len(row) != len(header):
            raise ConfigError(f"row {r + 2} of {path.name} has {len(row)} fields, the header {len(header)}")
        for c, i in enumerate(index):
            cell = row[i].strip()
            try:
                value = float(cell)
            except ValueError:
                what = "an empty value" if not cell else f"a non-numeric value {cell!r}"
                raise ConfigError(f"column {wanted[c]!r} has {what} in row {r + 2} of {path.name}") from None
            if not math.isfinite(value):
                raise ConfigError(f"column {wanted[c]!r} has a non-finite value {cell!r} in row {r + 2} of {path.name}")
            data[r, c] = value
    d = len(covariates) + 1  # and the intercept
    need = max(10, 5 * (d + 1))
    if data.shape[0] < need:
        raise ConfigError(f"{path.name} has {data.shape[0]} rows; {d} coefficients need at least {need}")
    for c, name in enumerate(wanted):
        column = data[:, c]
        if np.all(column == column[0]):
            raise ConfigError(f"column {name!r} is constant ({column[0]:g} in every row): it carries no information")
    y = data[:, 0]
    if model == "logistic" and not np.all((y == 0) | (y == 1)):
        bad = int(np.flatnonzero((y != 0) & (y != 1))[0])
        raise ConfigError(f"response {response!r} must be 0 or 1 for the logistic model; row {bad + 2} has {y[bad]:g}")
    return list(covariates), data[:, 1:], y


def _standardised(X: np.ndarray) -> np.ndarray:
    """An intercept and the columns centred and scaled by their range (for numerically fair rank decisions)."""
    span = X.max(axis=0) - X.min(axis=0)
    return np.column_stack([np.ones(X.shape[0]), (X - X.mean(axis=0)) / span])


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


__all__ = ["MAX_ABS", "check_design", "read_table", "separated"]
