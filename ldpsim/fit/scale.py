"""Stage 1 of ``ldpsim fit``, read and scale: the columns of the file, how each is scaled, and the scaled design.

:func:`read_columns` reads the file (:func:`.read.read_table`), decides from
the options alone which columns are scaled by public ``bounds`` and which
privately, and runs the checks that read the raw data and answer its owner
(:func:`.read.check_design` and those of :mod:`.refusals`). Once the noise is
calibrated (:mod:`.calibrate`), :func:`scale_columns` scales them
(:mod:`ldpsim.privacy.scaling`), the private scaling with the first draws of
the generator, and builds the design with its intercept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..engine.errors import ConfigError
from ..privacy import scaling as sc
from ..privacy.gdp import gdp_epsilon
from . import refusals
from .options import FitOptions
from .read import check_design, parse_number, read_table


@dataclass(frozen=True)
class Columns:
    """The data as read, and which columns are scaled how (decided before any statistic of the values).

    ``given`` maps a column to its public bounds; ``private`` lists the
    columns scaled privately (none unless ``scaling = 'private'``).
    """

    model: str
    response: str
    names: list[str]  # the covariates
    raw_x: np.ndarray
    raw_y: np.ndarray
    scaling: str
    given: dict[str, tuple[float, float]]
    private: list[str]

    @property
    def n(self) -> int:
        return self.raw_x.shape[0]

    @property
    def columns(self) -> list[str]:
        """The columns that are scaled: the covariates, and the response of a linear model."""
        return columns_of(self.model, self.names, self.response)

    @property
    def raw(self) -> dict[str, np.ndarray]:
        """Each scaled column's raw values by name."""
        raw = {name: self.raw_x[:, j] for j, name in enumerate(self.names)}
        if self.model == "linear":
            raw[self.response] = self.raw_y
        return raw


@dataclass(frozen=True)
class Scaled:
    """The columns' scalings and the scaled design: ``X`` with its intercept, ``y``, and each row's norm."""

    scales: dict[str, sc.ColumnScale]
    X: np.ndarray
    y: np.ndarray
    xnorm: np.ndarray


def columns_of(model: str, names: list[str], response: str) -> list[str]:
    """The columns a fit scales: the covariates, and the response of a linear model (a logistic one is 0/1)."""
    return names + ([response] if model == "linear" else [])


def read_columns(path, options: FitOptions) -> Columns:
    """The file's columns and their scaling plan, with every check on the raw data (one-line errors)."""
    names, raw_x, raw_y = read_table(path, options.response, options.covariates, options.model,
                                     options.report.show_values)
    refusals.check_batch_size(options.descent.batch_size, raw_x.shape[0])
    columns = columns_of(options.model, names, options.response)
    given = parse_bounds(options.bounds, columns, options.response)
    private = [name for name in columns if name not in given] if options.scaling == "private" else []
    refusals.check_shares(private, options.budget.share_moments, options.budget.share_scaling)
    out = Columns(options.model, options.response, names, raw_x, raw_y, options.scaling, given, private)
    refusals.check_magnitudes(out.raw, columns, given, options.scaling)
    check_design(names, raw_x, raw_y, options.model)
    return out


def scale_columns(columns: Columns, hist_sd: float, mu_scaling: float, delta: float,
                  gen: np.random.Generator) -> Scaled:
    """Each column scaled (privately with noise SD ``hist_sd`` per count, drawn from ``gen``), and the design."""
    n, names, raw, given = columns.n, columns.names, columns.raw, columns.given
    scales = {}
    for name in columns.columns:
        if name in given:
            scales[name] = sc.bounds_scaling(name, *given[name])
        elif columns.scaling == "private":
            try:
                scales[name] = sc.private_scaling(name, raw[name], hist_sd, gen)
            except sc.ScalingFailed as exc:
                raise ConfigError(f"the private scaling of column {name!r} failed: {exc} (noise SD {hist_sd:.3g} "
                                  f"per count, n = {n}); give its public --bounds, more of the budget to the scaling "
                                  "(--share-scaling) or a larger budget. This refusal reads only the released "
                                  f"histograms: covered by the scaling's share, epsilon = "
                                  f"{gdp_epsilon(mu_scaling, delta):.3g} at delta = {delta:g}") from None
        elif columns.scaling == "none":
            scales[name] = sc.identity_scaling(name)
        else:
            scales[name] = sc.nonprivate_scaling(name, raw[name])
    X = np.column_stack([np.ones(n)] + [scales[name].apply(raw[name]) for name in names])
    X = np.ascontiguousarray(X)
    y = scales[columns.response].apply(columns.raw_y) if columns.model == "linear" else columns.raw_y.copy()
    return Scaled(scales, X, y, np.sqrt(np.einsum("ij,ij->i", X, X)))


def parse_bounds(bounds, names, response=None) -> dict[str, tuple[float, float]]:
    """``{"age": (18, 100)}`` from a mapping or ``["age=18:100", ...]``, for columns of the fit (each once)."""
    if not bounds:
        return {}
    if isinstance(bounds, str):
        bounds = [bounds]
    items = list(bounds.items()) if isinstance(bounds, dict) else []
    if not isinstance(bounds, dict):
        for text in bounds:
            # the last '=' splits: a column may be named "a=b"
            name, sep, rng = str(text).rpartition("=")
            lo, sep2, hi = rng.partition(":")
            try:
                if not (sep and sep2):
                    raise ValueError
                items.append((name.strip(), (parse_number(lo), parse_number(hi))))
            except ValueError:
                raise ConfigError(f"bounds {text!r} is not COLUMN=LOW:HIGH with decimal numbers (e.g. "
                                  "age=18:100)") from None
    out = {}
    for name, pair in items:
        if name == response and name not in names:
            raise ConfigError(f"bounds given for the response {name!r}, which the logistic model does not scale "
                              "(it is 0/1)")
        if name not in names:
            raise ConfigError(f"bounds given for {name!r}, which is not a column of the fit ({', '.join(names)})")
        if name in out:
            raise ConfigError(f"bounds given twice for {name!r} ({out[name][0]:g}:{out[name][1]:g} and "
                              f"{pair[0]:g}:{pair[1]:g}): give each column's once")
        lo, hi = pair
        if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and math.isfinite(lo)
                and math.isfinite(hi) and lo < hi):
            raise ConfigError(f"bounds of {name!r} = {lo}:{hi}: need finite LOW < HIGH")
        out[name] = (float(lo), float(hi))
    return out


__all__ = ["Columns", "Scaled", "columns_of", "parse_bounds", "read_columns", "scale_columns"]
