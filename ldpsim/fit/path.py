"""Stage 3 of ``ldpsim fit``, path: DP-SGD on the scaled data, and the private ``A~`` and ``S~`` at its average.

:func:`run_path` runs the DP-SGD path of :mod:`ldpsim.studies.dpsgd.kernel`
(the study's kernel, on the user's rows instead of a drawn sample) with the
noise of the :class:`~.calibrate.Plan`, refuses a path that overflowed, and
releases the private ``A~`` and ``S~`` (:func:`ldpsim.studies.dpsgd.glm.private_moments`)
at its average: everything after the scaling that draws noise, in the order
the generator draws it.
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
    gradients (NOT private: shown for diagnosis only, on request).
    """

    theta_bar: np.ndarray
    a_t: np.ndarray
    s_t: np.ndarray
    sd_a: float
    sn_v: np.ndarray
    sigma1: float
    clip_rate: float


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
    return Released(theta_bar, a_t, s_t, sd_a, state.sn_v, sigma1, clip_rate)


__all__ = ["Released", "run_path"]
