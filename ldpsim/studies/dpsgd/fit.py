"""``ldpsim fit``: DP-SGD and its private intervals on a user's CSV file (002's estimator on real data).

Reads a CSV (header row, numeric columns), builds a linear or logistic model
of ``response`` on ``covariates`` (default: every other column), and releases

* ``theta_bar_T`` of DP-SGD (sampling without replacement, per-example
  clipping, ``T = min(n^kappa, max_steps)`` steps, noise calibrated by the CLT
  to ``mu``-GDP),
* the private ``A~``, ``S~`` (budget ``mu_var``, default ``mu``) and from them the
  corrected plug-in and random-scaling intervals (:mod:`ldpsim.inference.dpsgd`),

then prints a regression-style table with the privacy guarantee. The
non-private full-sample fit is printed only with ``show_nonprivate=True``
(it is not private). Standardisation (on by default) centres and scales the
covariates (linear: also the response) by their sample means and SDs, which
the guarantee does NOT cover: pass ``standardize=False`` with covariates
already on a public scale for a guarantee that covers the whole release.
Estimates and intervals are reported on the original scale (slopes divided
by the covariate's SD, times the response's SD for linear); the logistic
intercept is reported at the covariate means.

Bad input raises :class:`~ldpsim.engine.errors.ConfigError` with one line:
a missing file or column, a non-numeric or empty cell, a constant column, too
few rows, a response that is not 0/1 for the logistic model.
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tabulate import tabulate

from ...engine.config import show
from ...engine.errors import ConfigError
from ...engine.rng import as_generator
from ...inference import dpsgd as dpi
from ...inference.intervals import normal_quantile
from ...inference.streaming import StreamLayout
from ...privacy.accounting import clt_sigma, dp_accounting_epsilons, mu_from_epsilon_delta, step_noise_sd
from ...privacy.gdp import compose, gdp_epsilon
from . import glm
from .kernel import run_dpsgd

#: Default cap on the number of DP-SGD steps (``T = n^2`` for a large ``n`` would take long).
MAX_STEPS = 100_000_000


def read_table(path: str | Path, response: str, covariates: list[str] | None, model: str):
    """``(names, X, y)`` from a CSV file, with the one-line errors of the module docstring."""
    path = Path(path)
    try:
        with open(path, newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            rows = list(reader)
    except FileNotFoundError:
        raise ConfigError(f"data file {str(path)!r} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"data file {str(path)!r} cannot be read: {exc}") from None
    except csv.Error as exc:
        raise ConfigError(f"data file {str(path)!r} is not valid CSV: {exc}") from None
    if not header:
        raise ConfigError(f"data file {str(path)!r} is empty")
    header = [h.strip() for h in header]
    if response not in header:
        raise ConfigError(f"response = {response!r} is not a column of {path.name}; columns: {', '.join(header)}")
    if covariates is None:
        covariates = [h for h in header if h != response]
    for name in covariates:
        if name not in header:
            raise ConfigError(f"covariate {name!r} is not a column of {path.name}; columns: {', '.join(header)}")
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
    d = len(covariates) + (1 if model == "logistic" else 0)
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


@dataclass
class FitResult:
    """What ``ldpsim fit`` releases and prints."""

    model: str
    names: list[str]
    estimate: np.ndarray
    intervals: dict[str, np.ndarray]  # method -> (p, 2), original scale
    level: float
    guarantee: list[str]
    settings: dict
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


def fit(path, model: str = "linear", response: str = "y", covariates: list[str] | None = None, *,
        mu: float | None = None, epsilon: float | None = None, delta: float = 1e-5, mu_var: float | None = None,
        clip: float | None = None, clip_hessian: float | None = None, kappa: float = 2.0,
        max_steps: int = MAX_STEPS, batch_size: int = 1, c: float = 0.2, gamma: float = 0.501, level: float = 0.95,
        standardize: bool = True, seed=None, show_nonprivate: bool = False) -> FitResult:
    """Fit ``model`` by DP-SGD on the CSV file ``path``; see the module docstring.

    The budget is ``mu`` (GDP) or ``(epsilon, delta)`` converted through GDP
    (the mu whose guarantee implies it); the path and the private ``A~``,
    ``S~`` get it each (``mu_var`` defaults to the path's), so the whole
    release is ``sqrt(mu^2 + mu_var^2)``-GDP. ``seed = None`` draws fresh
    entropy: a fixed seed makes the noise reproducible, which no private
    release should be.
    """
    if model not in ("linear", "logistic"):
        raise ConfigError(f"model = {show(model)} is not one of: linear, logistic")
    if (mu is None) == (epsilon is None):
        if mu is None:
            mu = 2.0
        else:
            raise ConfigError("give the budget as mu or as epsilon (with delta), not both")
    if epsilon is not None:
        if not (epsilon > 0 and 0 < delta < 1):
            raise ConfigError(f"epsilon = {epsilon}, delta = {delta}: need epsilon > 0 and 0 < delta < 1")
        mu = mu_from_epsilon_delta(epsilon, delta)
    if not mu > 0:
        raise ConfigError(f"mu = {mu} is outside (0, inf]")
    mu_var = mu if mu_var is None else mu_var
    if not 0 < level < 1:
        raise ConfigError(f"level = {level} is outside (0, 1)")
    tic = time.perf_counter()
    names, raw_x, raw_y = read_table(path, response, covariates, model)
    n, p = raw_x.shape
    if standardize:
        x_mean, x_sd = raw_x.mean(axis=0), raw_x.std(axis=0, ddof=1)
        X = (raw_x - x_mean) / x_sd
    else:
        x_mean, x_sd = np.zeros(p), np.ones(p)
        X = raw_x.copy()
    y_mean, y_sd = 0.0, 1.0
    if model == "linear" and standardize:
        y_mean, y_sd = float(raw_y.mean()), float(raw_y.std(ddof=1))
    y = (raw_y - y_mean) / y_sd
    if model == "logistic":
        X = np.column_stack([np.ones(n), X])
    X = np.ascontiguousarray(X)
    d = X.shape[1]
    if batch_size < 1 or batch_size > n:
        raise ConfigError(f"batch_size = {batch_size} is outside [1, n] = [1, {n}]")
    clip = clip if clip is not None else (3.0 if model == "linear" else 1.5) * math.sqrt(d)
    clip_hessian = clip_hessian if clip_hessian is not None else (5.0 if model == "linear" else 1.25) * d
    steps = int(min(float(n) ** kappa, max_steps))
    q = batch_size / n
    sigma = clt_sigma(mu, q, steps, "swor")
    sigma1 = step_noise_sd(sigma, clip, batch_size, "swor") if sigma > 0 else 0.0
    gen = as_generator(seed)
    xnorm = np.sqrt(np.einsum("ij,ij->i", X, X))
    layout = StreamLayout.build(steps, 0.75, gamma, blocks=False, batches=False)
    state, clip_rate = run_dpsgd(gen, X, y, xnorm, model, "swor", steps, batch_size, c, gamma, clip, sigma1, 0.0,
                                 layout)
    if not state.finite(steps):
        raise ConfigError("DP-SGD diverged on these data: lower c, or standardise the covariates")
    theta_bar = state.theta_bar
    a_t, s_t, sd_a = glm.private_moments(gen, model, X, y, xnorm, theta_bar, clip, clip_hessian, mu_var)
    v_t, a_inv2 = dpi.sandwich(a_t, s_t, floor=sd_a)
    v_d, a_d = np.diag(v_t), np.diag(a_inv2)
    f = dpi.sampling_factor("swor", n, batch_size)
    k = steps / n
    common = dict(sigma1=sigma1, k=k, m=batch_size, f=f)
    intervals = {
        "plug-in": np.column_stack(dpi.plugin(theta_bar, v_d, a_d, n=n, level=level, corrected=True, **common)),
        "random scaling": np.column_stack(dpi.random_scaling(
            theta_bar, dpi.random_scaling_variance(state.sn_v, batch_size), n=n, level=level,
            factor=dpi.random_scaling_factor(v_d, a_d, **common))),
    }
    scale = np.full(d, y_sd)
    slopes = slice(1, d) if model == "logistic" else slice(0, d)
    scale[slopes] = y_sd / x_sd
    labels = (["const (at the covariate means)"] if model == "logistic" else []) + names
    estimate = theta_bar * scale
    intervals = {m: b * scale[:, None] for m, b in intervals.items()}
    nonprivate = None
    if show_nonprivate:
        est, cov, _ = glm.full_sample_fit(model, X, y)
        half = normal_quantile(level) * np.sqrt(np.diag(cov) / n)
        nonprivate = (est * scale, np.column_stack([est - half, est + half]) * scale[:, None])
    total = compose(mu, mu_var)
    guarantee = [
        f"Privacy: the DP-SGD path is mu = {mu:.4g} GDP (CLT of Bu et al. for T = {steps:,} steps, batches of "
        f"{batch_size} of n = {n} without replacement, replace-one neighbours; noise multiplier sigma = {sigma:.4g}, "
        f"step noise sigma_1 = {sigma1:.4g} on the mean gradient clipped at {clip:.4g}); the private A~, S~ behind the "
        f"intervals are mu_var = {mu_var:.4g} GDP; the release is {total:.4g}-GDP, i.e. "
        f"(epsilon, delta) = ({gdp_epsilon(total, delta):.4g}, {delta:g})-DP." if not math.isinf(total) else
        "Privacy: none (mu = inf).",
    ]
    if not math.isinf(mu):
        exact = dp_accounting_epsilons(sigma, q, steps, "swor", delta, n=n, batch_size=batch_size)
        if exact is None:
            guarantee.append("(dp-accounting comparison skipped: pip install 'ldpsim[accounting]')")
        elif "rdp" in exact:
            guarantee.append(f"Path alone: epsilon at delta = {delta:g} is {gdp_epsilon(mu, delta):.4g} by the CLT, "
                             f"{exact['rdp']:.4g} by dp-accounting's RDP accountant (an upper bound).")
    notes = [f"Clipped per-example gradients along the path: {100 * clip_rate:.2g}%."]
    if standardize:
        notes.append("Standardisation used the sample means and SDs of the covariates"
                     + (" and the response" if model == "linear" else "")
                     + ": not covered by the guarantee (use --no-standardize with public scales).")
    settings = {"n": n, "T": f"{steps:,}", "m": batch_size, "c": c, "gamma": gamma, "clip": round(clip, 4)}
    return FitResult(model, labels, estimate, intervals, level, guarantee, settings, nonprivate,
                     time.perf_counter() - tic, notes)


__all__ = ["FitResult", "MAX_STEPS", "fit", "read_table"]
