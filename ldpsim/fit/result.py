"""Stage 5 of ``ldpsim fit``, result: what the release is, its guarantee in words, and :class:`FitResult`.

:func:`release` assembles the :class:`FitResult` from the stages' outputs:
the list of released quantities and their noise (what the accountant
composed), the guarantee lines (the epsilon of the whole release by the
accountant, the budget split, the CLT's figure as a comparison), and the notes
that say what is NOT private or was withheld. :meth:`FitResult.render` prints
it: what the guarantee does not cover first, then the coefficient table.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from tabulate import tabulate

from ..privacy import scaling as sc
from ..privacy.accountants import DESCRIPTION, IS_BOUND
from ..privacy.gdp import gdp_epsilon
from .calibrate import Plan
from .intervals import Intervals
from .options import FitOptions
from .path import Released
from .scale import Columns, Scaled


@dataclass
class FitResult:
    """What ``ldpsim fit`` releases and prints.

    ``releases`` lists every released quantity's mechanism and noise (what
    the accountant composed), so that the guarantee can be checked from the
    outside: ``{"what": "path", "sampling", "sigma", "steps", "n", "batch_size",
    "relation"}``, ``{"what": "moments", "mu"}``, ``{"what": "scaling", "mu",
    "columns", "histograms", "noise_sd"}``. ``seed`` is the seed the noise was
    drawn from (fresh entropy unless one was given): never print it next to a
    release.
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
    seed: int | None = field(default=None, repr=False)
    diagnostics: dict = field(default_factory=dict)

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
        # what the guarantee does not cover comes before anything it would seem to vouch for
        first = [line for line in self.guarantee if line.startswith("NOT private")]
        rest = [line for line in self.guarantee if not line.startswith("NOT private")]
        text = first + [f"DP-SGD {self.model} regression: " + ", ".join(f"{k} = {v}" for k, v in self.settings.items()),
                        tabulate(body, head, tablefmt="github", disable_numparse=True)]
        text += rest + self.notes
        return "\n".join(text)


def release(options: FitOptions, columns: Columns, plan: Plan, scaled: Scaled, released: Released,
            found: Intervals, epsilons: tuple[float, float, float], seed: int, tic: float) -> FitResult:
    """The :class:`FitResult` of a fit: ``epsilons`` are :func:`.calibrate.stated_epsilons`, ``tic`` its start."""
    alone, total, clt_total = epsilons
    private, given, scales, clip = columns.private, columns.given, scaled.scales, plan.clip
    releases = [{"what": "path", "sampling": plan.sampling, "sigma": plan.sigma, "steps": plan.steps, "n": plan.n,
                 "batch_size": plan.batch_size, "relation": "replace-one"},
                {"what": "moments", "mu": plan.mu_moments}]
    if private:
        releases.append({"what": "scaling", "mu": plan.mu_scaling, "columns": len(private),
                         "histograms": sc.HISTOGRAMS * len(private), "noise_sd": plan.hist_sd})
    guarantee = guarantee_lines(plan, columns, options, released.sigma1, alone, total, clt_total)
    show_nonprivate = options.report.show_nonprivate
    notes = [found.withheld] if found.withheld else []
    if show_nonprivate:  # the share clipped is a statistic of the data that no accountant above covers
        notes.append(f"Clipped per-example gradients along the path: {100 * released.clip_rate:.2g}% (clip = "
                     f"{clip:.4g} on the scaled data); NOT private: shown for diagnosis only.")
    if given:
        notes.append(f"Scaled by the public bounds given: {', '.join(given)} (values outside them clipped: the "
                     "coefficients are those of the clipped columns, so bounds that clip many values change them).")
    if given and show_nonprivate:  # the share outside the bounds is a statistic of the data, as the clip rate
        raw = columns.raw
        shares = [f"{name} {100 * np.mean((raw[name] < given[name][0]) | (raw[name] > given[name][1])):.2g}%"
                  for name in given]
        notes.append(f"Values outside the public bounds, clipped: {', '.join(shares)}; NOT private: shown for "
                     "diagnosis only.")
    if private:
        shown = "; ".join(f"{s.name}: centre {s.centre:.4g}, scale {s.scale:.4g}, range [{s.lo:.4g}, {s.hi:.4g}]"
                          for s in (scales[name] for name in private))
        notes.append(f"Private scaling (released; values outside each range clipped): {shown}.")
    if found.nonprivate is not None:
        notes.append("The full-sample fit (OLS / logistic MLE on the raw columns, intercept at the same centres) is "
                     "NOT private: shown for comparison only.")
    if options.seed is not None:
        notes.append("The noise was drawn from the seed given: the guarantee holds only while that seed is secret "
                     "(whoever has it can redraw the noise and subtract it).")
    elif options.report.show_seed:
        notes.append(f"Seed drawn: {seed} (keep it as secret as the data: with it the noise can be redrawn and "
                     "subtracted; never publish it with the release).")
    settings = {"n": plan.n, "T": f"{plan.steps:,}", "m": plan.batch_size, "sampling": plan.sampling,
                "c": options.descent.c, "gamma": options.descent.gamma, "clip": f"{clip:.4g}"}
    diagnostics = {"lowest_eigenvalue": found.lowest, "noise_sd": released.sd_a, "settle": found.settle,
                   "sigma1": released.sigma1}
    return FitResult(options.model, found.labels, found.estimate, found.intervals, options.report.level, guarantee,
                     settings, total, plan.delta, plan.accountant, options.scaling != "nonprivate", releases,
                     [scales[name] for name in columns.columns], found.nonprivate, time.perf_counter() - tic, notes,
                     seed, diagnostics)


def guarantee_lines(plan: Plan, columns: Columns, options: FitOptions, sigma1: float, alone: float, total: float,
                    clt_total: float) -> list[str]:
    """The guarantee in words: the whole release's epsilon by the accountant, the budget split, the CLT's figure."""
    accountant, sampling, delta, target = plan.accountant, plan.sampling, plan.delta, plan.target
    private = columns.private
    parts = [f"the DP-SGD path ({plan.steps:,} steps, batches of {plan.batch_size} of n = {plan.n} by {sampling}, "
             f"noise multiplier {plan.sigma:.4g}: N(0, {sigma1:.4g}^2) per coordinate on the mean gradient clipped at "
             f"{plan.clip:.4g})",
             "the private A~ and S~ behind the intervals"]
    if private:
        parts.append(f"the private scaling of {len(private)} column{'s' if len(private) > 1 else ''}")
    kind = "a valid upper bound" if IS_BOUND[accountant] else "an APPROXIMATION, NOT a privacy guarantee"
    lines = []
    if options.scaling == "nonprivate":
        lines.append("NOT private: the columns were scaled by their sample means and SDs (scaling = nonprivate), "
                     "which no guarantee covers. The figures below cover only the other parts of the release.")
    who = ("replace-one neighbours: data sets of the same size n differing in one row; n, T and the rate m/n are "
           "public" if sampling == "poisson" else "replace-one neighbours: data sets differing in one row")
    name = DESCRIPTION[accountant].split(':')[0]
    if sampling == "poisson":
        name += " with replace-one neighbours"
    lines.append(f"Privacy: ({total:.4g}, {delta:g})-DP by {name} ({kind}; {who}), for the whole release: "
                 + ", ".join(parts[:-1]) + " and " + parts[-1] + f". Target: epsilon = {target:.4g}.")
    split = (f"Budget split in Gaussian DP (mu^2 adds under composition; mu = {plan.mu_total:.4g} for the "
             f"target): A~ and S~ {options.budget.share_moments:g} of mu^2 (mu = {plan.mu_moments:.4g}, exact "
             "Gaussian mechanisms)")
    if private:
        split += f", scaling {options.budget.share_scaling:g} (mu = {plan.mu_scaling:.4g})"
    split += (f", the path the rest, solved by the accountant: the path alone is epsilon = {alone:.4g}, A~ and S~ "
              f"alone {gdp_epsilon(plan.mu_moments, delta):.4g}")
    if private:
        split += f", the scaling alone {gdp_epsilon(plan.mu_scaling, delta):.4g}"
    lines.append(split + " (composition is not a sum).")
    if accountant != "clt" and math.isfinite(clt_total):
        lines.append(f"For comparison, the CLT of Bu et al. (Xia et al.'s calibration, an approximation, not a "
                     f"bound) puts the same release at epsilon = {clt_total:.4g}.")
    if options.scaling == "none":
        unscaled = "all columns" if not columns.given else "the columns without bounds"
        lines.append(f"Scaling: none ({unscaled} used as they are; their scale is taken as public).")
    return lines


__all__ = ["FitResult", "guarantee_lines", "release"]
