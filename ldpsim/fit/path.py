"""Stage 3 of ``ldpsim fit``, path: DP-SGD on the scaled data, and the private ``A~`` and ``S~`` at its average.

:func:`run_path` runs the DP-SGD path of :mod:`ldpsim.studies.dpsgd.kernel`
(the study's kernel, on the user's rows instead of a drawn sample) with the
noise of the :class:`~.calibrate.Plan`, refuses a path that overflowed, and
releases the private ``A~`` and ``S~`` (:func:`ldpsim.studies.dpsgd.glm.private_moments`)
at its average and the private histogram of the per-example gradient norms
there over the clip (:func:`clip_histogram`): everything after the scaling that
draws noise, in the order the generator draws it.

**Why the clip histogram.** Clipping changes the target: the path's average
is consistent for the minimiser of the clipped (Huber-like) loss, whose
gradients are ``clip(g_i)``, and its intervals cover that, not OLS or the
logistic MLE, unless the clipped gradients balance. On skewed data they do
not (statsmodels' engel: 4% clipped moved the slope from OLS's 0.485 to 0.545,
and the plug-in interval covered OLS in 1 of 10 fits). The histogram's first
count says, privately, how many rows the clip binds on at the estimate, and
its tail how far it would have to be raised to bind rarely.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..inference.streaming import StreamLayout
from ..privacy.clt import step_noise_sd
from ..studies.dpsgd import glm
from ..studies.dpsgd.kernel import run_dpsgd
from . import refusals
from .calibrate import Plan
from .options import FitOptions
from .scale import Scaled


@dataclass(frozen=True)
class Released:
    """What the path releases: its average ``theta_bar``, the private ``A~`` and ``S~`` (noise SD ``sd_a`` per entry).

    ``sn_v`` is the path's random-scaling sum, ``sigma1`` the noise SD per
    coordinate of a step, ``clip_rate`` the share of clipped per-example
    gradients along the path (NOT private: shown for diagnosis only, on
    request), ``clip_counts`` the private histogram of :func:`clip_histogram`.
    """

    theta_bar: np.ndarray
    a_t: np.ndarray
    s_t: np.ndarray
    sd_a: float
    sn_v: np.ndarray
    sigma1: float
    clip_rate: float
    clip_counts: np.ndarray | None = None


#: The clip histogram's bins, of ``||g_i|| / clip``: ``[0, 1]``, then ``(2^(k-1), 2^k]`` for k = 1..CLIP_OCTAVES,
#: and above ``2^CLIP_OCTAVES``.
CLIP_OCTAVES = 10


def clip_edges() -> np.ndarray:
    """The upper edges of the clip histogram's bins in units of the clip: 1, 2, 4, ..., 2^CLIP_OCTAVES (then inf)."""
    return np.concatenate([2.0 ** np.arange(CLIP_OCTAVES + 1), [np.inf]])


def clip_histogram(gen: np.random.Generator, model: str, X, y, xnorm, theta, clip: float, sd: float) -> np.ndarray:
    """The counts of ``||grad l_i(theta)|| / clip`` in the bins of :func:`clip_edges`, plus ``N(0, sd^2)`` each.

    Replacing one row moves one count down by 1 and another up by 1 (l2
    sensitivity ``sqrt(2)``): the histogram is ``sqrt(2) / sd``-GDP, composed
    into the release's guarantee by :mod:`.calibrate`. Count 0 is the rows the
    clip leaves alone, so ``n`` minus it, ``n`` public, is the number clipped
    with noise SD ``sd``.
    """
    r, _ = glm.residuals(model, X, y, theta)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ratio = np.abs(r) * xnorm / clip
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    edges = clip_edges()
    counts = np.bincount(np.searchsorted(edges, ratio, side="left"), minlength=edges.size)[:edges.size]
    return counts.astype(float) + sd * gen.standard_normal(edges.size)


def run_path(scaled: Scaled, plan: Plan, options: FitOptions, gen: np.random.Generator) -> Released:
    """DP-SGD on ``scaled`` with the plan's noise drawn from ``gen``, then ``A~`` and ``S~`` at its average."""
    c, gamma = options.descent.c, options.descent.gamma
    sigma1 = step_noise_sd(plan.sigma, plan.clip, plan.batch_size, plan.sampling) if plan.sigma > 0 else 0.0
    layout = StreamLayout.build(plan.steps, 0.75, gamma, blocks=False, batches=False)
    with np.errstate(over="ignore", invalid="ignore"):
        state, clip_rate = run_dpsgd(gen, scaled.X, scaled.y, scaled.xnorm, options.model, plan.sampling, plan.steps,
                                     plan.batch_size, c, gamma, plan.clip, sigma1, 0.0, layout)
    refusals.check_path(state.finite(plan.steps), c, plan.clip, sigma1)
    theta_bar = state.theta_bar
    a_t, s_t, sd_a = glm.private_moments(gen, options.model, scaled.X, scaled.y, scaled.xnorm, theta_bar, plan.clip,
                                         plan.clip_hessian, plan.mu_moments)
    counts = clip_histogram(gen, options.model, scaled.X, scaled.y, scaled.xnorm, theta_bar, plan.clip, plan.clip_sd)
    return Released(theta_bar, a_t, s_t, sd_a, state.sn_v, sigma1, clip_rate, counts)


__all__ = ["Released", "run_path"]
