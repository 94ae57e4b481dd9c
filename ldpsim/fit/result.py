"""Stage 5 of ``ldpsim fit``, result: what the release is, its guarantee in words, and :class:`FitResult`.

:func:`release` assembles the :class:`FitResult` from the stages' outputs:
the list of released quantities and their noise (what the accountant
composed), the guarantee lines (the epsilon of the whole release by the
accountant, the budget split, the CLT's figure as a comparison), what the
private clip histogram says about the target (:func:`clip_lines`), and the
notes that say what is NOT private or was withheld. :meth:`FitResult.render`
prints it: what the guarantee does not cover first, then, where the clip
binds, that the coefficients are those of the clipped loss, then the
coefficient table.
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
from .options import SHARE_CLIP, FitOptions
from .path import Released, clip_edges
from .scale import Columns, Scaled


@dataclass
class FitResult:
    """What ``ldpsim fit`` releases and prints.

    ``releases`` lists every released quantity's mechanism and noise (what
    the accountant composed), so that the guarantee can be checked from the
    outside: ``{"what": "path", "sampling", "sigma", "steps", "n", "batch_size",
    "relation"}``, ``{"what": "moments", "mu"}``, ``{"what": "scaling", "mu",
    "columns", "histograms", "noise_sd"}``, ``{"what": "clipping", "mu", "bins",
    "noise_sd"}``. ``seed`` is the seed the noise was drawn from (fresh entropy
    unless one was given): never print it next to a release. ``clipping`` is
    what the private clip histogram says (:func:`clip_summary`); ``target``
    the lines that open the output when the clip binds.
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
    clipping: dict = field(default_factory=dict)
    target: list[str] = field(default_factory=list)

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
        settings = ", ".join(f"{k} = {v}" for k, v in self.settings.items())
        text = first + self.target + [f"DP-SGD {self.model} regression: {settings}",
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
    releases.append({"what": "clipping", "mu": plan.mu_clip, "bins": len(clip_edges()), "noise_sd": plan.clip_sd})
    clipping = clip_summary(released.clip_counts, plan.n, plan.clip_sd, clip)
    target, clip_note = clip_lines(clipping, options.model)
    guarantee = guarantee_lines(plan, columns, options, released.sigma1, alone, total, clt_total)
    show_nonprivate = options.report.show_nonprivate
    notes = ([found.withheld] if found.withheld else []) + ([clip_note] if clip_note else [])
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
                     seed, diagnostics, clipping, target)


#: The clip is said to bind, in the output's first lines, when the private count of clipped rows exceeds
#: CLIP_Z noise SDs and CLIP_NOTICE of n.
CLIP_Z = 3.0
CLIP_NOTICE = 0.001
#: A clip binds rarely when the private histogram puts at most this share of rows above it (within 2 noise SDs).
CLIP_RARE = 0.001


def clip_summary(counts: np.ndarray, n: int, sd: float, clip: float) -> dict:
    """What the private clip histogram (:func:`.path.clip_histogram`) says: post-processing of it alone.

    ``clipped`` is ``n`` minus the noisy count of rows the clip leaves alone
    (noise SD ``sd``), ``share`` that over ``n`` in [0, 1], ``binds`` whether
    it exceeds :data:`CLIP_Z` SDs and :data:`CLIP_NOTICE` of ``n``;
    ``suggested`` the smallest ``2^k clip`` (k >= 1) whose noisy tail count
    is within 2 SDs of :data:`CLIP_RARE` of ``n`` or below (inf if none is),
    ``above`` that tail's share.
    """
    clipped = float(n - counts[0])
    binds = clipped > CLIP_Z * sd and clipped > CLIP_NOTICE * n
    edges = clip_edges()
    suggested, above = math.inf, math.nan
    for k in range(1, len(edges) - 1):
        tail = float(np.sum(counts[k + 1:]))
        if tail <= CLIP_RARE * n + 2.0 * sd * math.sqrt(len(edges) - 1 - k):
            suggested, above = float(edges[k]) * clip, min(max(tail / n, 0.0), 1.0)
            break
    return {"clipped": clipped, "sd": sd, "share": min(max(clipped / n, 0.0), 1.0), "share_se": sd / n,
            "binds": bool(binds), "clip": clip, "suggested": suggested, "above": above,
            "largest": float(edges[-2]) * clip}


def clip_lines(summary: dict, model: str) -> tuple[list[str], str | None]:
    """``(lines that open the output, note)``: where the clip binds, that the target is the clipped loss's."""
    pct, se, clip = 100 * summary["share"], 100 * summary["share_se"], summary["clip"]
    full = "OLS coefficients" if model == "linear" else "logistic MLE"
    share = (f"{pct:.2g}% of the per-example gradients at the estimate exceed the clip {clip:.4g} (on the scaled "
             f"data; private, from a noisy histogram of their norms, SE {se:.2g}%)")
    if not summary["binds"]:
        return [], (f"Clipping: {share}, not distinguishable from none or below {100 * CLIP_NOTICE:g}%. Where the "
                    f"clip binds, the coefficients are those of the clipped (Huber-like) loss, not the {full}.")
    if math.isfinite(summary["suggested"]):
        raise_to = (f"a larger --clip, e.g. {summary['suggested']:.4g} (the same histogram puts "
                    f"{100 * summary['above']:.2g}% of them above it at this estimate)")
    else:
        raise_to = (f"a --clip above {summary['largest']:.4g} (the same histogram puts more than "
                    f"{100 * CLIP_RARE:g}% of them above every clip up to that)")
    return [f"TARGET: the clip binds. {share[0].upper()}{share[1:]}. The coefficients therefore estimate the "
            f"minimiser of the clipped (Huber-like) loss, not the {full}, and the intervals cover that target: the "
            f"two differ where the clipped gradients do not balance (skewed or heavy-tailed residuals or "
            f"covariates). To target the {full}, fit again with {raise_to}; the estimate moves as the clip is "
            "raised, so repeat until these lines are gone. The noise grows with the clip (wider intervals), and "
            "each fit is a release of its own: the budgets of all fits published or acted on add up."], None


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
    parts.append("the private histogram of the gradient norms over the clip")
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
    split += f", the clip histogram {SHARE_CLIP:g} (mu = {plan.mu_clip:.4g})"
    split += (f", the path the rest, solved by the accountant: the path alone is epsilon = {alone:.4g}, A~ and S~ "
              f"alone {gdp_epsilon(plan.mu_moments, delta):.4g}")
    if private:
        split += f", the scaling alone {gdp_epsilon(plan.mu_scaling, delta):.4g}"
    split += f", the clip histogram alone {gdp_epsilon(plan.mu_clip, delta):.4g}"
    lines.append(split + " (composition is not a sum).")
    if accountant != "clt" and math.isfinite(clt_total):
        lines.append(f"For comparison, the CLT of Bu et al. (Xia et al.'s calibration, an approximation, not a "
                     f"bound) puts the same release at epsilon = {clt_total:.4g}.")
    if options.scaling == "none":
        unscaled = "all columns" if not columns.given else "the columns without bounds"
        lines.append(f"Scaling: none ({unscaled} used as they are; their scale is taken as public).")
    return lines


__all__ = ["CLIP_NOTICE", "CLIP_RARE", "CLIP_Z", "FitResult", "clip_lines", "clip_summary", "guarantee_lines",
           "release"]
