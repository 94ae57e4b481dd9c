"""What the replications of one DP-SGD setting share: methods, output columns, steps and noise.

:func:`calibrate` turns a setting into ``T = floor(n^kappa)``, the sampling
rate ``q = m / n``, the noise multiplier ``sigma`` of the path
(:func:`path_sigma`: for the budget ``epsilon`` at ``delta``, or ``mu``-GDP
read at ``delta``, by the setting's accountant; ``mu`` with ``accountant =
clt`` is 002's calibration by the CLT), the step noise ``sigma_1`` (doubled
with ``calibration = printed``, 002's Corollary 3 as printed), the sampling
fraction ``f`` of the interval formulas, the stream layout of BB and BM, and
the design's Cholesky factor. The budgets of the further releases, ``A~`` and
``S~`` (``mu_var``-GDP, exactly: Gaussian mechanisms) and DP-GD
(:func:`dpgd_mu`), are Gaussian DP parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...inference import dpsgd as dpi
from ...inference.methods import names
from ...inference.streaming import StreamLayout, floor_power
from ...engine.runs.config import show
from ...privacy.accountants import SIGMA_CAP, Unresolved, calibrate_sigma, epsilon_pair
from ...privacy.clt import MAX_LOG_SIGMA, clt_mu, clt_sigma, step_noise_sd
from ...privacy.gdp import gdp_epsilon, gdp_mu
from . import glm

#: Interval methods, in table order (each declared in the registry, :mod:`ldpsim.inference.methods`).
METHODS = names("dpsgd")
#: Methods run when a config does not say (002's Figure 2, plus BB and BM on the same paths).
DEFAULT_METHODS = names("dpsgd", default=True)
#: Methods whose interval needs the private A~ and S~ (budget mu_var).
PRIVATE_MOMENT_METHODS = names("dpsgd", tag="private_moments")
#: Methods that analyse the DP-SGD path (their estimate is theta_bar_T).
PATH_METHODS = names("dpsgd", tag="path")
#: Per-example clipping threshold when a config does not give one, per model.
DEFAULT_CLIP = {"linear": 6.0, "logistic": 3.0}
#: Frobenius-norm clip of the per-example Hessians in A~ when a config does not give one, per model
#: (linear: ||x||^2 <= 16; logistic: s(1 - s) ||x||^2 <= 4, i.e. ||x||^2 <= 16 at s = 1/2).
DEFAULT_CLIP_HESSIAN = {"linear": 16.0, "logistic": 4.0}
#: Dimension of theta (002, Section 6.1: x in R^3, no intercept).
DIM = 3


#: Methods whose interval is a random-scaling pivot: undefined when the path is not random (:func:`undefined_methods`).
RANDOM_SCALING_METHODS = names("dpsgd", tag="random_scaling")


def undefined_methods(s, methods) -> tuple[str, ...]:
    """Methods of ``methods`` that have no interval for ``s``: random scaling on a deterministic path.

    Cyclic passes without noise (a non-private budget) make the path a
    function of the data alone: the random-scaling pivot has no law (its
    correction is 0 / 0), while the plug-in interval and the oracle remain.
    """
    if s.sampling == "cyclic" and math.isinf(path_target(s)):
        return tuple(m for m in methods if m in RANDOM_SCALING_METHODS)
    return ()


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


#: Budgets (epsilon at delta) a valid accountant is asked to calibrate to: above, dp-accounting's PLD grows
#: without bound in memory (epsilon 1e4 at T = 1e6 took 1.4 GB); below, no noise multiplier up to
#: :data:`~ldpsim.privacy.accountants.SIGMA_CAP` reaches it (the accountants' floors, about 0.002-0.02).
EPSILON_ACCOUNTED_MAX = 100.0


#: What a configured budget covers (key ``budget_of``): the whole release (as ``ldpsim fit``), or the path alone.
BUDGETS_OF = ("release", "path")
#: Under ``budget_of = release``, the share of the budget's mu^2 (GDP) that A~ and S~ get by default (fit's).
SHARE_MOMENTS = 0.1


def path_target(s) -> float:
    """The configured budget as epsilon at ``s.delta``: ``epsilon``, or what ``mu``-GDP gives at ``delta`` (inf: none).

    With ``budget_of = path`` (002's convention) the path's; with ``release`` the whole release's.
    """
    if s.epsilon is not None:
        return s.epsilon
    return math.inf if math.isinf(s.mu) else gdp_epsilon(s.mu, s.delta)


def budget_mu(s) -> float:
    """The configured budget in GDP: ``mu``, or the mu of ``(epsilon, delta)`` (inf: none)."""
    if s.epsilon is None:
        return s.mu
    return math.inf if math.isinf(s.epsilon) else gdp_mu(s.epsilon, s.delta)


def releases_moments(methods) -> bool:
    """Whether ``methods`` release A~ and S~ (``None``, methods unknown: assumed, the cautious side)."""
    return methods is None or any(m in PRIVATE_MOMENT_METHODS for m in methods)


def extra_mu(s, methods=None) -> float:
    """The GDP mu that the path's calibration must leave to A~ and S~: ``mu_var`` under ``budget_of = release``
    when the methods release them, else 0 (the path gets the whole budget)."""
    if s.budget_of == "release" and releases_moments(methods) and not math.isinf(s.mu_var):
        return s.mu_var
    return 0.0


def path_sigma(s, steps: int | None = None, methods=None) -> float:
    """Noise multiplier of the path of ``s`` (0: non-private).

    ``mu`` with the ``clt`` or ``gdp`` accountant: the CLT's (exact
    composition for cyclic passes) ``clt_sigma``, 002's calibration, of
    ``mu`` (``budget_of = path``) or of what the release leaves the path,
    ``sqrt(mu^2 - mu_var^2)`` (GDP composes exactly). Otherwise the budget
    (:func:`path_target`) by the accountant
    (:func:`ldpsim.privacy.accountants.calibrate_sigma`): of the path alone, or,
    under ``budget_of = release`` with ``methods`` that release A~ and S~, of
    the path composed with them (:func:`extra_mu`).

    Raises
    ------
    ValueError
        If the accountant cannot reach the budget (or A~ and S~ take all of it).
    """
    steps = floor_power(s.n, s.kappa) if steps is None else steps
    q = s.batch_size / s.n
    extra = extra_mu(s, methods)
    if s.epsilon is None and s.accountant in ("clt", "gdp"):
        if extra >= s.mu:
            raise ValueError(f"mu_var = {extra:.4g} takes the whole release's budget mu = {s.mu:.4g}")
        return clt_sigma(math.sqrt(s.mu * s.mu - extra * extra) if extra else s.mu, q, steps, s.sampling)
    return calibrate_sigma(path_target(s), s.delta, s.accountant, s.sampling, steps, s.n, s.batch_size,
                           extra_mu=extra, whole=extra > 0)


def dpgd_mu(s) -> float:
    """GDP budget of a DP-GD run's T2 full-batch Gaussian steps (they compose exactly).

    ``budget_of = path``: the budget (``mu``, or the ``epsilon``'s), its own A~
    and S~ on top; ``release``: what its A~ and S~ leave, ``sqrt(mu^2 - mu_var^2)``.
    """
    mu = budget_mu(s)
    if s.budget_of == "path" or math.isinf(mu) or math.isinf(s.mu_var):
        return mu
    return math.sqrt(mu * mu - s.mu_var * s.mu_var) if s.mu_var < mu else 0.0


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
    sigma = path_sigma(s, steps, methods)
    sigma1 = step_noise_sd(sigma, s.clip, s.batch_size, s.sampling) if sigma > 0 else 0.0
    if s.calibration == "printed":
        sigma1 *= 2.0
    layout = StreamLayout.build(steps, s.beta, s.gamma, blocks="BB" in methods, batches="BM" in methods)
    return Calibration(steps, q, sigma, sigma1, dpi.sampling_factor(s.sampling, s.n, s.batch_size), layout,
                       glm.design_cholesky(s.design, DIM))


def budget_problem(s, methods=None) -> str | None:
    """Why the path's budget cannot be calibrated by the setting's accountant (one line), or ``None``.

    A valid accountant (``epsilon`` given, or ``accountant`` pld or rdp) is
    asked for budgets up to :data:`EPSILON_ACCOUNTED_MAX`, and reaches down
    only to its epsilon at ``sigma =`` :data:`~ldpsim.privacy.accountants.SIGMA_CAP`.
    """
    target = path_target(s)
    if math.isinf(target):
        return None
    what = (f"epsilon = {show(s.epsilon)}" if s.epsilon is not None
            else f"mu = {show(s.mu)} (epsilon = {target:.4g} at delta = {show(s.delta)})")
    extra = extra_mu(s, methods)
    if extra and extra >= budget_mu(s):
        return (f"mu_var = {show(s.mu_var)} takes the whole budget of the release ({what}, mu = {budget_mu(s):.4g}) "
                "and leaves the path none: lower mu_var, or set budget_of = path (Xia et al.'s convention)")
    if s.epsilon is None and s.accountant in ("clt", "gdp"):
        return None
    if target > EPSILON_ACCOUNTED_MAX and s.accountant in ("pld", "rdp"):  # (clt and gdp are closed forms)
        other = "accountant = clt, an approximation" + (", or gdp, exact" if s.sampling == "cyclic" else "")
        return (f"{what} is above what the {s.accountant} accountant is asked to calibrate; allowed: epsilon <= "
                f"{EPSILON_ACCOUNTED_MAX:g} (or {other})")
    steps = floor_power(s.n, s.kappa)
    try:
        path_sigma(s, steps, methods)
    except Unresolved as exc:
        return f"{what}: {exc}; use accountant = rdp (a valid bound, looser) or a larger delta"
    except ValueError as exc:
        if s.accountant not in ("pld", "rdp"):
            return f"{what} cannot be calibrated by the {s.accountant} accountant for T = {steps} steps: {exc}"
        if extra:  # the release's floor: A~ and S~ alone, or the path at the cap with them
            return (f"{what} is below what the {s.accountant} accountant certifies for the release (the path of "
                    f"T = {steps} steps and A~, S~ at mu_var = {extra:.4g}): {exc}; lower mu_var, raise the budget, "
                    "or set budget_of = path")
        try:
            floor = epsilon_pair(s.accountant, s.sampling, SIGMA_CAP, steps, s.n, s.batch_size, s.delta)[0]
        except Unresolved as unresolved:
            return f"{what}: {unresolved}; use accountant = rdp (a valid bound, looser) or a larger delta"
        if not math.isfinite(floor):
            return (f"{what}: the {s.accountant} accountant certifies no finite epsilon at delta = {show(s.delta)} "
                    f"for T = {steps} steps even at a noise multiplier of {SIGMA_CAP:g}; raise delta")
        return (f"{what} is below what the {s.accountant} accountant certifies for T = {steps} steps even at a noise "
                f"multiplier of {SIGMA_CAP:g}; allowed here: epsilon >= {floor:.3g} at delta = {show(s.delta)}")
    return None


def noise_problem(s, options) -> str | None:
    """Why the noise of some quantity ``s`` releases is not a finite number, or ``None`` (one line).

    The path's budget (:func:`budget_problem`), its ``sigma`` and ``sigma_1``
    (``mu`` or ``epsilon``, ``clip``), the noise of ``A~`` and ``S~``
    (``mu_var``, ``clip_hessian``, ``clip``) and of DP-GD (its budget,
    ``gd_step``, ``clip``): a noise beyond the largest float makes every
    replication's numbers NaN, so such a setting is refused; the line says
    which key to change, and how far.
    """
    methods = options["methods"]
    steps = floor_power(s.n, s.kappa)
    q = s.batch_size / s.n
    problem = budget_problem(s, methods)
    if problem is not None:
        return problem
    if not math.isinf(path_target(s)):  # the path runs whatever the methods
        sens = step_noise_sd(1.0, s.clip, s.batch_size, s.sampling) * (2.0 if s.calibration == "printed" else 1.0)
        try:
            sigma = path_sigma(s, steps, methods)
        except ValueError:
            sigma = math.inf
        if not math.isfinite(sigma * sens):
            # the smallest mu whose sigma_1 = sigma x sens is a float (reached only by the CLT's mu: a valid
            # accountant's sigma stays below SIGMA_CAP)
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
            budget = "mu" if s.epsilon is None else "epsilon"
            return (f"{budget} = {show(getattr(s, budget))} with gd_step = {show(s.gd_step)}, clip = {show(s.clip)}: "
                    f"DP-GD's noise SD 2 gd_step clip sqrt(T2) / (n mu) at T2 = {worst} is beyond the largest float; "
                    f"raise {budget} or lower gd_step or clip")
    return None


def dpgd_noise_sd(s, steps: int) -> float:
    """Per-step SD of DP-GD's noise: ``2 step clip sqrt(T2) / (n mu)`` (each step mu / sqrt(T2)-GDP, :func:`dpgd_mu`)."""
    mu = dpgd_mu(s)
    if math.isinf(mu):
        return 0.0
    return 2.0 * s.gd_step * s.clip * math.sqrt(steps) / (s.n * mu)


__all__ = ["BUDGETS_OF", "RANDOM_SCALING_METHODS", "SHARE_MOMENTS", "budget_mu", "extra_mu", "releases_moments",
           "undefined_methods", "Calibration", "DEFAULT_CLIP", "DEFAULT_CLIP_HESSIAN", "DEFAULT_METHODS", "DIM", "EPSILON_ACCOUNTED_MAX",
           "METHODS", "PATH_METHODS", "PRIVATE_MOMENT_METHODS", "budget_problem", "calibrate", "dpgd_mu",
           "dpgd_noise_sd", "noise_problem", "output_columns", "path_sigma", "path_target"]
