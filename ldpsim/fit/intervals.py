"""Stage 4 of ``ldpsim fit``, intervals: the plug-in and random-scaling intervals, on the columns' original scale.

:func:`build_intervals` reads only what the path released (:class:`~.path.Released`):
it asks the refusals on ``A~`` (:func:`.refusals.check_moments`), builds the
sandwich and the path's settle ratio (:func:`.refusals.check_settled`), the
corrected plug-in and random-scaling intervals of
:mod:`ldpsim.inference.dpsgd`, withholds the plug-in one with a note when the
path fluctuates beyond settled paths (:data:`.refusals.PLUGIN_SETTLE`), and
maps everything back to the original scale (slopes over the covariate's scale,
times the response's for linear; the intercept at the scaling centres). On
request it adds the full-sample fit, which is NOT private.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..inference import dpsgd as dpi
from ..inference.intervals import normal_quantile
from ..studies.dpsgd import glm
from . import refusals
from .calibrate import Plan
from .options import FitOptions
from .path import Released
from .refusals import PLUGIN_SETTLE
from .scale import Columns, Scaled


@dataclass(frozen=True)
class Intervals:
    """The estimates and intervals on the original scale, and what was decided on the way.

    ``intervals`` maps a method to its ``(p, 2)`` bounds; ``withheld`` is the
    note that replaces the plug-in interval (or ``None``); ``settle`` the
    largest settle ratio and ``lowest`` ``A~``'s smallest eigenvalue;
    ``nonprivate`` the full-sample fit ``(estimate, (p, 2) bounds)``, NOT
    private, if asked for.
    """

    labels: list[str]
    estimate: np.ndarray
    intervals: dict[str, np.ndarray]
    withheld: str | None
    settle: float
    lowest: float
    nonprivate: tuple | None


def build_intervals(columns: Columns, scaled: Scaled, plan: Plan, released: Released,
                    options: FitOptions) -> Intervals:
    """The intervals from the private release, with the refusals that read it (one line each)."""
    names, n, batch_size, steps, level = columns.names, columns.n, plan.batch_size, plan.steps, options.report.level
    theta_bar, a_t, s_t, sd_a, sigma1 = released.theta_bar, released.a_t, released.s_t, released.sd_a, released.sigma1
    whole = refusals.covered(plan.target, plan.delta)
    lowest = refusals.check_moments(a_t, sd_a, names, columns.given, n, steps, options.descent.c,
                                    options.descent.gamma, whole)
    v_t, a_inv2 = dpi.sandwich(a_t, s_t, floor=sd_a)
    v_d, a_d = np.diag(v_t), np.diag(a_inv2)
    f = dpi.sampling_factor(plan.sampling, n, batch_size)
    common = dict(sigma1=sigma1, k=steps / n, m=batch_size, f=f)
    v_hat = dpi.random_scaling_variance(released.sn_v, batch_size)
    # the path's own fluctuation against what A~ and S~ say it should be: 6 V^ / (f V + m sigma_1^2 A^-2) is
    # 6 int (W - rW(1))^2 in the limit (mean 1); far beyond, the average still carries its transient
    with np.errstate(divide="ignore", invalid="ignore"):
        settle = 6.0 * v_hat / (f * v_d + batch_size * sigma1 * sigma1 * a_d)
    worst = refusals.check_settled(settle, names, whole)
    intervals = {
        "plug-in": np.column_stack(dpi.plugin(theta_bar, v_d, a_d, n=n, level=level, corrected=True, **common)),
        "random scaling": np.column_stack(dpi.random_scaling(
            theta_bar, v_hat, n=n, level=level, factor=dpi.random_scaling_factor(v_d, a_d, **common))),
    }
    withheld = None
    if worst > PLUGIN_SETTLE:
        del intervals["plug-in"]
        j = int(np.argmax(settle))
        withheld = (f"The plug-in interval is not shown: the path fluctuates {worst:.3g} times as much as the private "
                    f"A~ and S~ predict for {(['the intercept'] + names)[j]} (at most {PLUGIN_SETTLE:g} in 99% of "
                    "settled paths), so its variance would be too small (clipping along a noisy path flattens the "
                    "loss the path sees); the random-scaling interval reads the variance off the path. More rows, "
                    "budget or a lower --kappa (fewer, less noisy steps) bring it back.")
    # back to the original scale: slope_j = theta_j s_y / s_j; the intercept at the scaling centres
    scales, linear = scaled.scales, columns.model == "linear"
    s_y = scales[columns.response].scale if linear else 1.0
    c_y = scales[columns.response].centre if linear else 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.array([s_y] + [s_y / scales[name].scale for name in names])
        shift = np.zeros(len(names) + 1)
        shift[0] = c_y
        estimate = theta_bar * scale + shift
        intervals = {m: b * scale[:, None] + shift[:, None] for m, b in intervals.items()}
    refusals.check_original_scale(estimate, intervals)
    labels = ["const (at the scaling centres)"] + names
    nonprivate = _nonprivate_fit(columns.model, columns.raw_x, columns.raw_y, [scales[name].centre for name in names],
                                 level) if options.report.show_nonprivate else None
    return Intervals(labels, estimate, intervals, withheld, worst, lowest, nonprivate)


def _magnitude(columns):
    """Each column's largest absolute value (1 for a column of zeros): a scale whose use squares nothing."""
    top = np.max(np.abs(columns), axis=0)
    return np.where((top > 0) & np.isfinite(top), top, 1.0)


def _nonprivate_fit(model, raw_x, raw_y, centres, level):
    """The full-sample fit with an intercept on the raw columns, the intercept read at ``centres``: NOT private."""
    n = raw_x.shape[0]
    # fitted on columns divided by their largest magnitude and centred at c, so that no square overflows (data
    # near 1e300); the intercept is then the one at the centres, and the scales are undone on the estimates
    with np.errstate(over="ignore", invalid="ignore"):
        x_scale = _magnitude(raw_x)
        y_scale = _magnitude(raw_y[:, None])[0] if model == "linear" else 1.0
        X = np.column_stack([np.ones(n), raw_x / x_scale - np.asarray(centres, dtype=float) / x_scale])
        est, cov, _ = glm.full_sample_fit(model, X, raw_y / y_scale)
        unscale = y_scale / np.concatenate([[1.0], x_scale])
        est = est * unscale
        half = normal_quantile(level) * np.sqrt(np.diag(cov) / n) * unscale
    return est, np.column_stack([est - half, est + half])


__all__ = ["Intervals", "build_intervals"]
