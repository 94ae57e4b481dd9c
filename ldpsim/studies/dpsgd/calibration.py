"""What the replications of one DP-SGD setting share: methods, output columns, steps and noise.

:func:`calibrate` turns a setting into ``T = floor(n^kappa)``, the sampling
rate ``q = m / n``, the noise multiplier ``sigma`` that makes the path
``mu``-GDP by the CLT (:func:`ldpsim.privacy.accounting.clt_sigma`), the step
noise ``sigma_1`` (doubled with ``calibration = printed``, 002's Corollary 3 as
printed), the sampling fraction ``f`` of the interval formulas, the stream
layout of BB and BM, and the design's Cholesky factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...inference import dpsgd as dpi
from ...inference.streaming import StreamLayout, floor_power
from ...privacy.accounting import clt_sigma, step_noise_sd
from . import glm

#: Interval methods, in table order.
METHODS = ("plugin", "plugin_raw", "RS", "RS_raw", "RS_paper", "oracle", "BB", "BM", "DPGD")
#: Methods run when a config does not say (002's Figure 2, plus BB and BM on the same paths).
DEFAULT_METHODS = ("plugin", "plugin_raw", "RS", "RS_raw", "oracle", "BB", "BM")
#: Methods whose interval needs the private A~ and S~ (budget mu_var).
PRIVATE_MOMENT_METHODS = ("plugin", "plugin_raw", "RS", "RS_paper", "DPGD")
#: Methods that analyse the DP-SGD path (their estimate is theta_bar_T).
PATH_METHODS = ("plugin", "plugin_raw", "RS", "RS_raw", "RS_paper", "BB", "BM")
#: Per-example clipping threshold when a config does not give one, per model.
DEFAULT_CLIP = {"linear": 6.0, "logistic": 3.0}
#: Frobenius-norm clip of the per-example Hessians in A~ when a config does not give one, per model
#: (linear: ||x||^2 <= 16; logistic: s(1 - s) ||x||^2 <= 4, i.e. ||x||^2 <= 16 at s = 1/2).
DEFAULT_CLIP_HESSIAN = {"linear": 16.0, "logistic": 4.0}
#: Dimension of theta (002, Section 6.1: x in R^3, no intercept).
DIM = 3


def output_columns(options) -> list[tuple[str, int | None]]:
    """``(method, T2)`` of each interval a replication computes (``T2`` only for DPGD)."""
    cols = []
    for method in options["methods"]:
        if method == "DPGD":
            every = options.get("T2_every", 1)
            cols += [("DPGD", t2) for t2 in range(every, options["T2_max"] + 1, every)]
        else:
            cols.append((method, None))
    return cols


@dataclass(frozen=True)
class Calibration:
    """What a setting's replications share: steps, noise, layout, design."""

    steps: int
    q: float
    sigma: float
    sigma1: float
    f: float
    layout: StreamLayout
    chol: np.ndarray


def calibrate(s, methods) -> Calibration:
    """Steps, noise multiplier, step noise SD, sampling factor, stream layout and Cholesky factor of ``s``."""
    steps = floor_power(s.n, s.kappa)
    q = s.batch_size / s.n
    sigma = clt_sigma(s.mu, q, steps, s.sampling)
    sigma1 = step_noise_sd(sigma, s.clip, s.batch_size, s.sampling) if sigma > 0 else 0.0
    if s.calibration == "printed":
        sigma1 *= 2.0
    layout = StreamLayout.build(steps, s.beta, s.gamma, blocks="BB" in methods, batches="BM" in methods)
    return Calibration(steps, q, sigma, sigma1, dpi.sampling_factor(s.sampling, s.n, s.batch_size), layout,
                       glm.design_cholesky(s.design, DIM))


def dpgd_noise_sd(s, steps: int) -> float:
    """Per-step SD of DP-GD's noise: ``2 step clip sqrt(T2) / (n mu)`` (each step mu / sqrt(T2)-GDP)."""
    if math.isinf(s.mu):
        return 0.0
    return 2.0 * s.gd_step * s.clip * math.sqrt(steps) / (s.n * s.mu)



__all__ = ["Calibration", "DEFAULT_CLIP", "DEFAULT_CLIP_HESSIAN", "DEFAULT_METHODS", "DIM", "METHODS", "PATH_METHODS",
           "PRIVATE_MOMENT_METHODS", "calibrate", "dpgd_noise_sd", "output_columns"]
