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
from ...engine.config import show
from ...privacy.accounting import MAX_LOG_SIGMA, clt_mu, clt_sigma, step_noise_sd
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


def noise_problem(s, options) -> str | None:
    """Why the noise of some quantity ``s`` releases is not a finite number, or ``None`` (one line).

    The path's ``sigma`` and ``sigma_1`` (``mu``, ``clip``), the noise of
    ``A~`` and ``S~`` (``mu_var``, ``clip_hessian``, ``clip``) and of DP-GD
    (``mu``, ``gd_step``, ``clip``): a noise beyond the largest float makes
    every replication's numbers NaN, so such a setting is refused; the line
    says which key to change, and how far.
    """
    methods = options["methods"]
    steps = floor_power(s.n, s.kappa)
    q = s.batch_size / s.n
    if not math.isinf(s.mu):  # the path runs whatever the methods
        sens = step_noise_sd(1.0, s.clip, s.batch_size, s.sampling) * (2.0 if s.calibration == "printed" else 1.0)
        try:
            sigma = clt_sigma(s.mu, q, steps, s.sampling)
        except ValueError:
            sigma = math.inf
        if not math.isfinite(sigma * sens):
            # the smallest mu whose sigma_1 = sigma x sens is a float
            top = min(math.exp(MAX_LOG_SIGMA), 1.7e308 / sens)
            smallest = clt_mu(top, q, steps, s.sampling)
            return (f"mu = {show(s.mu)} needs step noise sigma_1 = sigma x {sens:.3g} beyond the largest float "
                    f"(clip = {show(s.clip)}, T = {steps}); allowed here: mu >= {smallest:.3g}")
    if not math.isinf(s.mu_var) and any(m in PRIVATE_MOMENT_METHODS for m in methods):
        for key, bound, text in (("clip_hessian", s.clip_hessian, "clip_hessian"), ("clip", s.clip * s.clip, "clip^2")):
            if not math.isfinite(glm.matrix_noise_sd(bound, s.n, s.mu_var)):
                largest = "A~" if key == "clip_hessian" else "S~"
                return (f"mu_var = {show(s.mu_var)} with {key} = {show(getattr(s, key))}: the noise SD of {largest}, "
                        f"2 {text} / (n mu_var), is beyond the largest float; raise mu_var or lower {key}")
    if "DPGD" in methods:
        worst = max(t2 for method, t2 in output_columns(options) if method == "DPGD")
        if not math.isfinite(dpgd_noise_sd(s, worst)):
            return (f"mu = {show(s.mu)} with gd_step = {show(s.gd_step)}, clip = {show(s.clip)}: DP-GD's noise SD "
                    f"2 gd_step clip sqrt(T2) / (n mu) at T2 = {worst} is beyond the largest float; raise mu or "
                    "lower gd_step or clip")
    return None


def dpgd_noise_sd(s, steps: int) -> float:
    """Per-step SD of DP-GD's noise: ``2 step clip sqrt(T2) / (n mu)`` (each step mu / sqrt(T2)-GDP)."""
    if math.isinf(s.mu):
        return 0.0
    return 2.0 * s.gd_step * s.clip * math.sqrt(steps) / (s.n * s.mu)



__all__ = ["Calibration", "DEFAULT_CLIP", "DEFAULT_CLIP_HESSIAN", "DEFAULT_METHODS", "DIM", "METHODS", "PATH_METHODS",
           "PRIVATE_MOMENT_METHODS", "calibrate", "dpgd_noise_sd", "noise_problem", "output_columns"]
