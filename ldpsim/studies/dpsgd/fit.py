"""``ldpsim fit``: DP-SGD and its private intervals on a user's CSV file, private as a whole by default.

Reads a CSV file (:mod:`.fitdata`), scales the columns (:mod:`ldpsim.privacy.scaling`),
fits a linear or logistic model with an intercept by DP-SGD (002's
Algorithm 1 with per-example clipping), and releases

* the scaling of every column that is not given public bounds: a private
  centre and scale from Gaussian histograms (default), the public bounds of
  ``bounds``, the columns as they are (``scaling = 'none'``: the user states
  they are on a public scale), or, only when asked (``scaling =
  'nonprivate'``), the sample means and SDs, which the guarantee then does
  NOT cover;
* ``theta_bar_T`` of DP-SGD (``T = min(n^kappa, max_steps)`` steps, batches of
  ``m`` by ``sampling``);
* the private ``A~``, ``S~`` and from them the corrected plug-in and
  random-scaling intervals (:mod:`ldpsim.inference.dpsgd`), mapped back to
  the original scale (slopes over the covariate's scale, times the
  response's for linear; the intercept at the scaling centres).

**The budget is the whole release's.** ``epsilon`` at ``delta`` (or ``mu``-GDP,
read at ``delta``) is split over the parts in the Gaussian-DP scale, where
composition adds ``mu^2``: with ``mu_T`` the GDP parameter of ``(epsilon,
delta)`` on its own, ``A~`` and ``S~`` together get ``mu = sqrt(share_moments)
mu_T``, the scaling histograms ``sqrt(share_scaling) mu_T`` (exact Gaussian
mechanisms), and the path the rest: its noise is solved so that the
accountant's epsilon of everything is within 1% of the target
(:func:`ldpsim.privacy.accountants.calibrate_sigma` with ``whole=True``).
The printed guarantee is ``(epsilon, delta)``-DP by that accountant (RDP
for batches without replacement, PLD for Poisson), with the CLT's figure for
the same noise beside it as a comparison (an approximation, not a bound).

Bad input raises :class:`~ldpsim.engine.errors.ConfigError` with one line,
before any work on the data where it can: the options, the file
(:func:`.fitdata.read_table`), collinear covariates or separated logistic
data (:func:`.fitdata.check_design`), a path that did not settle.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from tabulate import tabulate

from ...engine.config import show
from ...engine.errors import ConfigError
from ...engine.rng import as_generator
from ...inference import dpsgd as dpi
from ...inference.intervals import normal_quantile
from ...inference.streaming import StreamLayout
from ...privacy import scaling as sc
from ...privacy.accountants import (DEFAULT_ACCOUNTANT, DESCRIPTION, IS_BOUND, calibrate_sigma, check_supported,
                                    epsilon_pair)
from ...privacy.accounting import NEIGHBOURS, step_noise_sd
from ...privacy.gdp import gdp_epsilon, gdp_mu
from . import glm
from .fitdata import MAX_ABS, check_design, read_table
from .kernel import run_dpsgd

#: Default cap on the number of DP-SGD steps (``T = n^2`` for a large ``n`` would take long).
MAX_STEPS = 100_000_000
#: Smallest number of steps (the random-scaling interval needs a path).
MIN_STEPS = 100
#: Default shares of the GDP budget ``mu^2`` for ``A~`` and ``S~`` together, and for the private scaling.
SHARE_MOMENTS, SHARE_SCALING = 0.1, 0.1
#: Budgets (epsilon at delta) the accountants are asked to calibrate to (as the dpsgd study's).
EPSILON_RANGE = (1e-3, 100.0)
#: Confidence levels the random-scaling critical values cover.
LEVEL_RANGE = (0.05, 0.9999)
SCALINGS = ("private", "none", "nonprivate")


@dataclass
class FitResult:
    """What ``ldpsim fit`` releases and prints.

    ``releases`` lists every released quantity's mechanism and noise (what
    the accountant composed), so that the guarantee can be checked from the
    outside: ``{"what": "path", "sampling", "sigma", "steps", "n", "batch_size"}``,
    ``{"what": "moments", "mu"}``, ``{"what": "scaling", "mu", "columns", "noise_sd"}``.
    """

    model: str
    names: list[str]
    estimate: np.ndarray
    intervals: dict[str, np.ndarray]  # method -> (p, 2), original scale
    level: float
    guarantee: list[str]
    settings: dict
    epsilon: float = math.nan
    delta: float = math.nan
    accountant: str = ""
    private: bool = True
    releases: list[dict] = field(default_factory=list)
    scales: list = field(default_factory=list)
    nonprivate: tuple | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[dict]:
        out = []
        for j, name in enumerate(self.names):
            row = {"coefficient": name, "estimate": float(self.estimate[j])}
            for method, bounds in self.intervals.items():
                row[f"{method}_lower"], row[f"{method}_upper"] = float(bounds[j, 0]), float(bounds[j, 1])
            if self.nonprivate is not None:
                row["full_sample"] = float(self.nonprivate[0][j])
                row["full_sample_lower"], row["full_sample_upper"] = (float(self.nonprivate[1][j, 0]),
                                                                      float(self.nonprivate[1][j, 1]))
            out.append(row)
        return out

    def render(self) -> str:
        pct = f"{100 * self.level:g}%"
        head = ["coefficient", "estimate"] + [f"{m} {pct} interval" for m in self.intervals]
        body = []
        for j, name in enumerate(self.names):
            line = [name, f"{self.estimate[j]:.4g}"]
            line += [f"[{b[j, 0]:.4g}, {b[j, 1]:.4g}]" for b in self.intervals.values()]
            body.append(line)
        if self.nonprivate is not None:
            head += ["full sample (NOT private)", f"its {pct} interval"]
            for j, line in enumerate(body):
                line += [f"{self.nonprivate[0][j]:.4g}",
                         f"[{self.nonprivate[1][j, 0]:.4g}, {self.nonprivate[1][j, 1]:.4g}]"]
        text = [f"DP-SGD {self.model} regression: " + ", ".join(f"{k} = {v}" for k, v in self.settings.items()),
                tabulate(body, head, tablefmt="github", disable_numparse=True)]
        text += self.guarantee + self.notes
        return "\n".join(text)


def _check_options(model, epsilon, mu, delta, accountant, sampling, share_moments, share_scaling, scaling, clip,
                   clip_hessian, kappa, max_steps, batch_size, c, gamma, level, seed) -> tuple[float, str]:
    """One-line errors for the options, before the data are read; returns the target epsilon and the accountant."""
    if model not in ("linear", "logistic"):
        raise ConfigError(f"model = {show(model)} is not one of: linear, logistic")
    if epsilon is None and mu is None:
        raise ConfigError("give the privacy budget of the whole release: --epsilon E (with --delta) or --mu MU (GDP)")
    if epsilon is not None and mu is not None:
        raise ConfigError("give the budget as --epsilon (with --delta) or as --mu, not both")
    if not 0.0 < delta < 1.0:
        raise ConfigError(f"delta = {show(delta)} is outside (0, 1)")
    if mu is not None:
        if not (mu > 0 and math.isfinite(mu)):
            raise ConfigError(f"mu = {show(mu)} is outside (0, inf): fit always releases privately")
        epsilon = gdp_epsilon(mu, delta)
        what = f"mu = {show(mu)} (epsilon = {epsilon:.4g} at delta = {delta:g})"
    else:
        what = f"epsilon = {show(epsilon)}"
    low, high = EPSILON_RANGE
    if not (isinstance(epsilon, (int, float)) and low <= epsilon <= high):
        raise ConfigError(f"{what} is outside [{low:g}, {high:g}], the budgets fit calibrates")
    if sampling not in ("swor", "poisson", "cyclic"):
        raise ConfigError(f"sampling = {show(sampling)} is not one of: swor, poisson, cyclic")
    accountant = DEFAULT_ACCOUNTANT[sampling] if accountant is None else accountant
    problem = check_supported(accountant, sampling)
    if problem:
        raise ConfigError(problem)
    if scaling not in SCALINGS:
        raise ConfigError(f"scaling = {show(scaling)} is not one of: {', '.join(SCALINGS)}")
    for name, value in (("share_moments", share_moments), ("share_scaling", share_scaling)):
        if not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
            raise ConfigError(f"{name} = {show(value)} is outside (0, 1)")
    if share_moments + share_scaling > 0.9:
        raise ConfigError(f"share_moments + share_scaling = {share_moments + share_scaling:g} leaves the path less "
                          "than 0.1 of the budget; allowed: a sum of at most 0.9")
    for name, value in (("clip", clip), ("clip_hessian", clip_hessian)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ConfigError(f"{name} = {show(value)} is outside (0, inf): the noise is calibrated to a finite "
                              "clipping threshold")
    if not (isinstance(kappa, (int, float)) and 1.0 <= kappa <= 3.0):
        raise ConfigError(f"kappa = {show(kappa)} is outside [1, 3] (T = n^kappa steps: at least one pass)")
    if isinstance(max_steps, bool) or not (isinstance(max_steps, (int, np.integer)) and
                                           MIN_STEPS <= max_steps <= 2**53):
        raise ConfigError(f"max_steps = {show(max_steps)} is outside [{MIN_STEPS}, 2^53] (an integer)")
    if isinstance(batch_size, bool) or not (isinstance(batch_size, (int, np.integer)) and batch_size >= 1):
        raise ConfigError(f"batch_size = {show(batch_size)} is not an integer >= 1")
    if not (c > 0 and math.isfinite(c)):
        raise ConfigError(f"c = {show(c)} is outside (0, inf): the step size eta_t = c t^-gamma")
    if not 0.5 < gamma <= 1.0:
        raise ConfigError(f"gamma = {show(gamma)} is outside (0.5, 1]: the average needs 1/2 < gamma < 1 (002)")
    if not LEVEL_RANGE[0] <= level <= LEVEL_RANGE[1]:
        raise ConfigError(f"level = {show(level)} is outside [{LEVEL_RANGE[0]:g}, {LEVEL_RANGE[1]:g}] (the "
                          "random-scaling critical values)")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ConfigError(f"seed = {show(seed)} is not an integer >= 0")
    return float(epsilon), accountant


def _parse_bounds(bounds, names) -> dict[str, tuple[float, float]]:
    """``{"age": (18, 100)}`` from a mapping or ``["age=18:100", ...]``, for columns of the fit."""
    if not bounds:
        return {}
    items = bounds.items() if isinstance(bounds, dict) else []
    if not isinstance(bounds, dict):
        parsed = []
        for text in bounds:
            name, sep, rng = str(text).partition("=")
            lo, sep2, hi = rng.partition(":")
            try:
                if not (sep and sep2):
                    raise ValueError
                parsed.append((name.strip(), (float(lo), float(hi))))
            except ValueError:
                raise ConfigError(f"bounds {text!r} is not COLUMN=LOW:HIGH (e.g. age=18:100)") from None
        items = parsed
    out = {}
    for name, (lo, hi) in items:
        if name not in names:
            raise ConfigError(f"bounds given for {name!r}, which is not a column of the fit ({', '.join(names)})")
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ConfigError(f"bounds of {name!r} = {lo:g}:{hi:g}: need finite LOW < HIGH")
        out[name] = (float(lo), float(hi))
    return out


def fit(path, model: str = "linear", response: str = "y", covariates: list[str] | None = None, *,
        epsilon: float | None = None, delta: float = 1e-5, mu: float | None = None, accountant: str | None = None,
        sampling: str = "swor", share_moments: float = SHARE_MOMENTS, share_scaling: float = SHARE_SCALING,
        scaling: str = "private", bounds=None, clip: float | None = None, clip_hessian: float | None = None,
        kappa: float = 2.0, max_steps: int = MAX_STEPS, batch_size: int = 1, c: float = 0.2, gamma: float = 0.501,
        level: float = 0.95, seed=None, show_nonprivate: bool = False) -> FitResult:
    """Fit ``model`` by DP-SGD on the CSV file ``path``; see the module docstring.

    Parameters
    ----------
    epsilon, delta, mu
        The whole release's budget: ``(epsilon, delta)``, or ``mu``-GDP read at
        ``delta``; one of ``epsilon`` and ``mu`` is required.
    accountant : {'rdp', 'pld', 'gdp', 'clt'}, optional
        Default: the valid one for ``sampling`` (rdp for swor, pld for poisson,
        gdp for cyclic); ``clt`` calibrates by 002's approximation, and the
        guarantee line then says it is not a bound.
    share_moments, share_scaling : float
        Shares of the GDP budget ``mu^2`` for ``A~`` and ``S~``, and for the
        private scaling (used only if some column is scaled privately).
    scaling : {'private', 'none', 'nonprivate'}
        How columns without ``bounds`` are scaled (module docstring).
    bounds : dict or list of str, optional
        Public bounds per column, ``{"age": (18, 100)}`` or ``["age=18:100"]``
        (the response too, for linear).
    seed : int, optional
        ``None`` draws fresh entropy: a fixed seed makes the noise
        reproducible, which no private release should be.
    """
    target, accountant = _check_options(model, epsilon, mu, delta, accountant, sampling, share_moments,
                                        share_scaling, scaling, clip, clip_hessian, kappa, max_steps, batch_size, c,
                                        gamma, level, seed)
    tic = time.perf_counter()
    names, raw_x, raw_y = read_table(path, response, covariates, model)
    n, p = raw_x.shape
    if batch_size > n:
        raise ConfigError(f"batch_size = {batch_size} is outside [1, n] = [1, {n}]")
    columns = names + ([response] if model == "linear" else [])
    given = _parse_bounds(bounds, columns)
    raw = {name: raw_x[:, j] for j, name in enumerate(names)}
    if model == "linear":
        raw[response] = raw_y
    if scaling in ("none", "nonprivate"):
        too_big = [name for name in columns if name not in given and np.max(np.abs(raw[name])) > MAX_ABS]
        if too_big:
            raise ConfigError(f"column {too_big[0]!r} holds values beyond {MAX_ABS:g}, whose squares overflow; "
                              "scale it privately (the default) or give its --bounds")
    check_design(names, raw_x, raw_y, model)

    # --- the budget split (module docstring)
    private_columns = [name for name in columns if name not in given] if scaling == "private" else []
    mu_total = gdp_mu(target, delta)
    mu_moments = math.sqrt(share_moments) * mu_total
    mu_scaling = math.sqrt(share_scaling) * mu_total if private_columns else 0.0
    extra = math.hypot(mu_moments, mu_scaling)
    d = p + 1
    steps = int(min(float(n) ** kappa, max_steps))
    if steps < MIN_STEPS:
        raise ConfigError(f"T = min(n^kappa, max_steps) = {steps} steps is below {MIN_STEPS}: raise kappa or "
                          "max_steps")
    try:
        sigma = calibrate_sigma(target, delta, accountant, sampling, steps, n, batch_size, extra_mu=extra, whole=True)
    except ValueError as exc:
        raise ConfigError(f"epsilon = {target:.4g} at delta = {delta:g} cannot be reached by the {accountant} "
                          f"accountant for T = {steps} steps of {batch_size} of n = {n}: {exc}") from None

    # --- scaling, with the first draws of the generator
    gen = as_generator(seed)
    hist_sd = sc.histogram_noise_sd(len(private_columns), mu_scaling) if private_columns else math.nan
    scales = {}
    for name in columns:
        if name in given:
            scales[name] = sc.bounds_scaling(name, *given[name])
        elif scaling == "private":
            scales[name] = sc.private_scaling(name, raw[name], hist_sd, gen)
        elif scaling == "none":
            scales[name] = sc.identity_scaling(name)
        else:
            scales[name] = sc.nonprivate_scaling(name, raw[name])
    X = np.column_stack([np.ones(n)] + [scales[name].apply(raw[name]) for name in names])
    X = np.ascontiguousarray(X)
    y = scales[response].apply(raw_y) if model == "linear" else raw_y.copy()
    xnorm = np.sqrt(np.einsum("ij,ij->i", X, X))

    # --- the path, A~ and S~, the intervals
    clip = clip if clip is not None else (3.0 if model == "linear" else 1.5) * math.sqrt(d)
    clip_hessian = clip_hessian if clip_hessian is not None else (5.0 if model == "linear" else 1.25) * d
    sigma1 = step_noise_sd(sigma, clip, batch_size, sampling) if sigma > 0 else 0.0
    layout = StreamLayout.build(steps, 0.75, gamma, blocks=False, batches=False)
    state, clip_rate = run_dpsgd(gen, X, y, xnorm, model, sampling, steps, batch_size, c, gamma, clip, sigma1, 0.0,
                                 layout)
    if not state.finite(steps):
        raise ConfigError(f"DP-SGD diverged on these data (c = {show(c)}): lower c")
    theta_bar = state.theta_bar
    a_t, s_t, sd_a = glm.private_moments(gen, model, X, y, xnorm, theta_bar, clip, clip_hessian, mu_moments)
    # a path whose last steps are longer than 2 / curvature oscillates instead of settling (read off the
    # private A~, so the check releases nothing more)
    last_step = c * steps ** -gamma
    curvature = float(np.max(np.linalg.eigvalsh(a_t)))
    if last_step * curvature > 2.0:
        raise ConfigError(f"c = {show(c)} is too large: the last step c T^-gamma = {last_step:.3g} times the "
                          f"loss's curvature (largest eigenvalue of the private A~, {curvature:.3g}) exceeds 2, so "
                          "DP-SGD oscillates instead of converging; lower c")
    v_t, a_inv2 = dpi.sandwich(a_t, s_t, floor=sd_a)
    v_d, a_d = np.diag(v_t), np.diag(a_inv2)
    f = dpi.sampling_factor(sampling, n, batch_size)
    common = dict(sigma1=sigma1, k=steps / n, m=batch_size, f=f)
    intervals = {
        "plug-in": np.column_stack(dpi.plugin(theta_bar, v_d, a_d, n=n, level=level, corrected=True, **common)),
        "random scaling": np.column_stack(dpi.random_scaling(
            theta_bar, dpi.random_scaling_variance(state.sn_v, batch_size), n=n, level=level,
            factor=dpi.random_scaling_factor(v_d, a_d, **common))),
    }
    # back to the original scale: slope_j = theta_j s_y / s_j; the intercept at the scaling centres
    s_y = scales[response].scale if model == "linear" else 1.0
    c_y = scales[response].centre if model == "linear" else 0.0
    scale = np.array([s_y] + [s_y / scales[name].scale for name in names])
    shift = np.zeros(d)
    shift[0] = c_y
    estimate = theta_bar * scale + shift
    intervals = {m: b * scale[:, None] + shift[:, None] for m, b in intervals.items()}
    labels = ["const (at the scaling centres)"] + names
    nonprivate = _nonprivate_fit(model, raw_x, raw_y, [scales[name].centre for name in names], level) \
        if show_nonprivate else None

    # --- what the release is, and its guarantee
    alone, total = epsilon_pair(accountant, sampling, sigma, steps, n, batch_size, delta, extra)
    clt_total = epsilon_pair("clt", sampling, sigma, steps, n, batch_size, delta, extra)[1]
    releases = [{"what": "path", "sampling": sampling, "sigma": sigma, "steps": steps, "n": n,
                 "batch_size": batch_size},
                {"what": "moments", "mu": mu_moments}]
    if private_columns:
        releases.append({"what": "scaling", "mu": mu_scaling, "columns": len(private_columns), "noise_sd": hist_sd})
    guarantee = _guarantee_lines(accountant, sampling, total, delta, target, steps, batch_size, n, sigma, sigma1,
                                 clip, alone, mu_moments, mu_scaling, private_columns, share_moments, share_scaling,
                                 clt_total, scaling, given)
    notes = []
    if show_nonprivate:  # the share clipped is a statistic of the data that no accountant above covers
        notes.append(f"Clipped per-example gradients along the path: {100 * clip_rate:.2g}% (clip = {clip:.4g} on "
                     "the scaled data); NOT private: shown for diagnosis only.")
    if given:
        notes.append(f"Scaled by the public bounds given: {', '.join(given)} (values outside them clipped).")
    if private_columns:
        shown = "; ".join(f"{s.name}: centre {s.centre:.4g}, scale {s.scale:.4g}, range [{s.lo:.4g}, {s.hi:.4g}]"
                          for s in (scales[name] for name in private_columns))
        notes.append(f"Private scaling (released; values outside each range clipped): {shown}.")
    if nonprivate is not None:
        notes.append("The full-sample fit (OLS / logistic MLE on the raw columns, intercept at the same centres) is "
                     "NOT private: shown for comparison only.")
    settings = {"n": n, "T": f"{steps:,}", "m": batch_size, "sampling": sampling, "c": c, "gamma": gamma,
                "clip": round(clip, 4)}
    return FitResult(model, labels, estimate, intervals, level, guarantee, settings, total, delta, accountant,
                     scaling != "nonprivate", releases, [scales[name] for name in columns], nonprivate,
                     time.perf_counter() - tic, notes)


def _guarantee_lines(accountant, sampling, total, delta, target, steps, m, n, sigma, sigma1, clip, alone, mu_moments,
                     mu_scaling, private_columns, share_moments, share_scaling, clt_total, scaling, given):
    parts = [f"the DP-SGD path ({steps:,} steps, batches of {m} of n = {n} by {sampling}, noise multiplier "
             f"{sigma:.4g}: N(0, {sigma1:.4g}^2) per coordinate on the mean gradient clipped at {clip:.4g})",
             "the private A~ and S~ behind the intervals"]
    if private_columns:
        parts.append(f"the private scaling of {len(private_columns)} column{'s' if len(private_columns) > 1 else ''}")
    kind = "a valid upper bound" if IS_BOUND[accountant] else "an APPROXIMATION, NOT a privacy guarantee"
    lines = []
    if scaling == "nonprivate":
        lines.append("NOT private: the columns were scaled by their sample means and SDs (scaling = nonprivate), "
                     "which no guarantee covers. The figures below cover only the other parts of the release.")
    lines.append(f"Privacy: ({total:.4g}, {delta:g})-DP by {DESCRIPTION[accountant].split(':')[0]} ({kind}; "
                 f"{NEIGHBOURS[sampling]} neighbours: data sets differing in one row), for the whole release: "
                 + ", ".join(parts[:-1]) + " and " + parts[-1] + f". Target: epsilon = {target:.4g}.")
    split = (f"Budget split in Gaussian DP (mu^2 adds under composition; mu = {gdp_mu(target, delta):.4g} for the "
             f"target): A~ and S~ {share_moments:g} of mu^2 (mu = {mu_moments:.4g}, exact Gaussian mechanisms)")
    if private_columns:
        split += f", scaling {share_scaling:g} (mu = {mu_scaling:.4g})"
    split += (f", the path the rest, solved by the accountant: the path alone is epsilon = {alone:.4g}, A~ and S~ "
              f"alone {gdp_epsilon(mu_moments, delta):.4g}")
    if private_columns:
        split += f", the scaling alone {gdp_epsilon(mu_scaling, delta):.4g}"
    lines.append(split + " (composition is not a sum).")
    if accountant != "clt":
        lines.append(f"For comparison, the CLT of Bu et al. (002's calibration, an approximation, not a bound) puts "
                     f"the same release at epsilon = {clt_total:.4g}.")
    if scaling == "none":
        unscaled = "all columns" if not given else "the columns without bounds"
        lines.append(f"Scaling: none ({unscaled} used as they are; their scale is taken as public).")
    return lines


def _nonprivate_fit(model, raw_x, raw_y, centres, level):
    """The full-sample fit with an intercept on the raw columns, the intercept read at ``centres``: NOT private."""
    n = raw_x.shape[0]
    X = np.column_stack([np.ones(n), raw_x])
    est, cov, _ = glm.full_sample_fit(model, X, raw_y)
    # the intercept at the centres c: a + b'c, with variance [1, c'] Cov [1, c']'
    at = np.concatenate([[1.0], centres])
    est = est.copy()
    est[0] = float(at @ est)
    var = np.diag(cov).copy()
    var[0] = float(at @ cov @ at)
    half = normal_quantile(level) * np.sqrt(var / n)
    return est, np.column_stack([est - half, est + half])


__all__ = ["FitResult", "MAX_STEPS", "MIN_STEPS", "SHARE_MOMENTS", "SHARE_SCALING", "fit", "read_table"]
