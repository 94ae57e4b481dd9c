"""``ldpsim fit``'s entry point: :func:`fit` takes the keywords, groups them, and calls the stages in order."""

from __future__ import annotations

import time

import numpy as np

from ..engine.dialect.rng import as_generator
from .calibrate import calibrate, stated_epsilons
from .intervals import build_intervals
from .options import Budget, Descent, FitOptions, Report
from .path import run_path
from .refusals import check_options
from .result import FitResult, release
from .scale import read_columns, scale_columns


def fit(path, model: str = FitOptions.model, response: str = FitOptions.response,
        covariates: list[str] | None = None, *, epsilon: float | None = None, delta: float = Budget.delta,
        mu: float | None = None, accountant: str | None = None, sampling: str = Descent.sampling,
        share_moments: float = Budget.share_moments, share_scaling: float = Budget.share_scaling,
        scaling: str = FitOptions.scaling, bounds=None, clip: float | None = None, clip_hessian: float | None = None,
        kappa: float = Descent.kappa, max_steps: int = Descent.max_steps, batch_size: int = Descent.batch_size,
        c: float = Descent.c, gamma: float = Descent.gamma, level: float = Report.level, seed=None,
        show_nonprivate: bool = False, show_values: bool = False, show_seed: bool = False) -> FitResult:
    """Fit ``model`` by DP-SGD on the CSV file ``path``; see :mod:`ldpsim.fit`.

    The keywords are grouped into a :class:`~ldpsim.fit.options.FitOptions`
    (:class:`~ldpsim.fit.options.Budget`, :class:`~ldpsim.fit.options.Descent`,
    :class:`~ldpsim.fit.options.Report`), which the stages read.

    Parameters
    ----------
    path : str or pathlib.Path
        The CSV file (:func:`ldpsim.fit.read.read_table`).
    model : {'linear', 'logistic'}
    response : str
        The response column (0/1 for logistic).
    covariates : list of str, optional
        Default: every other column.
    epsilon, delta, mu
        The whole release's budget: ``(epsilon, delta)``, or ``mu``-GDP read at
        ``delta``; one of ``epsilon`` and ``mu`` is required.
    accountant : {'rdp', 'pld', 'clt'}, optional
        Default: the valid one for ``sampling`` (rdp for swor, pld for
        poisson); ``clt`` (swor only) calibrates by 002's approximation, and
        the guarantee line then says it is not a bound.
    sampling : {'swor', 'poisson'}
        ``cyclic`` is refused (:mod:`ldpsim.fit`).
    share_moments, share_scaling : float
        Shares of the GDP budget ``mu^2`` for ``A~`` and ``S~``, and for the
        private scaling (used, and checked, only if some column is scaled
        privately); together at most 0.9.
    scaling : {'private', 'none', 'nonprivate'}
        How columns without ``bounds`` are scaled (:mod:`ldpsim.fit`).
    bounds : dict or list of str, optional
        Public bounds per column, ``{"age": (18, 100)}`` or ``["age=18:100"]``
        (the response too, for linear), each column once.
    clip, clip_hessian : float, optional
        Clipping of the per-example gradients and Hessians; default
        ``3 sqrt(d)`` and ``5 d`` (linear), ``1.5 sqrt(d)`` and ``1.25 d``
        (logistic).
    kappa, max_steps, batch_size, c, gamma
        ``T = min(n^kappa, max_steps)`` steps of batches of ``batch_size``,
        step size ``c t^-gamma``.
    level : float
        Confidence level of the intervals.
    seed : int, optional
        ``None`` (default) draws fresh entropy. A fixed seed makes the noise
        reproducible: the guarantee then holds only while the seed is secret
        (whoever has it can redraw the noise and subtract it).
    show_nonprivate : bool
        Also compute the full-sample fit and the share of clipped gradients
        along the path (NOT private, labelled so). The share clipped at the
        estimate is always given, privately (:func:`ldpsim.fit.path.clip_histogram`).
    show_values : bool
        Put data values and row numbers into the error messages (not for logs:
        :mod:`ldpsim.fit.read`).
    show_seed : bool
        Add the seed drawn to the notes (so the owner can reproduce the run;
        it must stay as secret as the data).

    Returns
    -------
    FitResult

    Raises
    ------
    ldpsim.ConfigError
        One line, where the input is bad or the release would be unreliable
        (:mod:`ldpsim.fit.refusals`).
    """
    options = FitOptions(model, response, covariates, scaling, bounds, seed,
                         Budget(epsilon, delta, mu, accountant, share_moments, share_scaling),
                         Descent(sampling, kappa, max_steps, batch_size, c, gamma, clip, clip_hessian),
                         Report(level, show_nonprivate, show_values, show_seed))
    target, accountant = check_options(options)
    tic = time.perf_counter()
    columns = read_columns(path, options)
    plan = calibrate(columns, options, target, accountant)  # (warns about delta at the caller's line)
    # the noise: the scaling's draws first, then the path's and A~'s, S~'s
    seed = int(options.seed) if options.seed is not None else int(np.random.SeedSequence().entropy)
    gen = as_generator(seed)
    scaled = scale_columns(columns, plan.hist_sd, plan.mu_scaling, plan.delta, gen)
    released = run_path(scaled, plan, options, gen)
    found = build_intervals(columns, scaled, plan, released, options)
    return release(options, columns, plan, scaled, released, found, stated_epsilons(plan), seed, tic)


__all__ = ["fit"]
