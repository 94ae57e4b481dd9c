"""Stage 2 of ``ldpsim fit``, calibrate: the budget split in Gaussian DP, the steps, the clipping, the path's noise.

:func:`calibrate` decides everything the release's privacy depends on from
public quantities only (``n``, ``d``, the options), before any statistic of
the values is computed: the shares of ``mu^2`` for ``A~`` and ``S~``, for
the private scaling and for the histogram of how often the clip binds
(:data:`~.options.SHARE_CLIP`; exact Gaussian mechanisms), the steps
``T = min(n^kappa, max_steps)``, the clipping thresholds, and the path's noise
multiplier, solved so that the accountant's epsilon of the whole release is
within 1% below the target (:func:`ldpsim.privacy.accountants.calibrate_sigma`
for batches without replacement, :func:`ldpsim.privacy.poisson.poisson_calibrate`
for Poisson batches under replace-one neighbours). The public refusals of
:mod:`.refusals` are asked on the way. :func:`stated_epsilons` gives the
figures the guarantee states at that noise.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from ..engine.errors import ConfigError, ConfigWarning
from ..privacy import scaling as sc
from ..privacy.accountants import SIGMA_CAP, calibrate_sigma, epsilon_pair
from ..privacy.gdp import gdp_mu
from ..privacy.poisson import poisson_calibrate, poisson_epsilons
from . import refusals
from .options import SHARE_CLIP, FitOptions
from .scale import Columns


@dataclass(frozen=True)
class Plan:
    """The release's public settings: its budget and split, ``T`` steps of ``batch_size`` of ``n``, noise ``sigma``.

    ``mu_total`` is the target's GDP parameter, ``mu_moments``,
    ``mu_scaling`` and ``mu_clip`` those of ``A~`` and ``S~`` together, of the
    private scaling (0 without one) and of the clip histogram, ``extra`` theirs
    composed; ``hist_sd`` the noise SD per count of the scaling's histograms
    (nan without one), ``clip_sd`` that of the clip histogram.
    """

    target: float
    delta: float
    accountant: str
    sampling: str
    n: int
    steps: int
    batch_size: int
    clip: float
    clip_hessian: float
    mu_total: float
    mu_moments: float
    mu_scaling: float
    extra: float
    hist_sd: float
    sigma: float
    mu_clip: float = 0.0
    clip_sd: float = math.inf


def calibrate(columns: Columns, options: FitOptions, target: float, accountant: str) -> Plan:
    """The :class:`Plan` of the release, with the public refusals (one line each) and the delta warning."""
    budget, descent = options.budget, options.descent
    delta, sampling, batch_size, n = budget.delta, descent.sampling, descent.batch_size, columns.n
    private = columns.private
    mu_total = gdp_mu(target, delta)
    mu_moments = math.sqrt(budget.share_moments) * mu_total
    mu_scaling = math.sqrt(budget.share_scaling) * mu_total if private else 0.0
    # the histogram of the gradient norms over the clip at the estimate (one row moves one count down and one up:
    # l2 sensitivity sqrt(2), so noise SD sqrt(2) / mu_clip per count is mu_clip-GDP)
    mu_clip = math.sqrt(SHARE_CLIP) * mu_total
    clip_sd = math.sqrt(2.0) / mu_clip
    extra = math.sqrt(mu_moments ** 2 + mu_scaling ** 2 + mu_clip ** 2)
    d = len(columns.names) + 1
    steps = int(min(float(n) ** descent.kappa, descent.max_steps))
    refusals.check_steps(steps)
    clip = descent.clip if descent.clip is not None else (3.0 if options.model == "linear" else 1.5) * math.sqrt(d)
    clip_hessian = (descent.clip_hessian if descent.clip_hessian is not None else
                    (5.0 if options.model == "linear" else 1.25) * d)
    refusals.check_reach(descent.c, clip, steps, descent.gamma)
    hist_sd = sc.histogram_noise_sd(len(private), mu_scaling) if private else math.nan
    if private:
        refusals.check_rows_for_scaling(n, hist_sd, len(private), mu_scaling, mu_total, budget.share_moments)
    if delta >= 1.0 / n:
        # stacklevel 3: the line that called fit(), which calls this
        warnings.warn(f"delta = {delta:g} >= 1/n = {1.0 / n:.3g}: a release that publishes one random row outright "
                      "is (0, 1/n)-DP, so such a delta protects nobody; take delta well below 1/n", ConfigWarning,
                      stacklevel=3)
    if sampling == "swor":
        # RDP's conversion to (epsilon, delta) loses against the Gaussians' exact figure: ask it what the further
        # releases alone cost (beside a path of the largest noise it is asked at), so that a split it cannot
        # meet is named as such
        floor = epsilon_pair(accountant, sampling, SIGMA_CAP, steps, n, batch_size, delta, extra)[1]
        refusals.check_split(floor, target, accountant, delta, extra, bool(private), budget.share_moments,
                             budget.share_scaling)
    try:
        if sampling == "poisson":
            sigma = poisson_calibrate(target, delta, steps, n, batch_size, extra)
        else:
            sigma = calibrate_sigma(target, delta, accountant, sampling, steps, n, batch_size, extra_mu=extra,
                                    whole=True)
    except ValueError as exc:
        raise ConfigError(f"epsilon = {target:.4g} at delta = {delta:g} cannot be reached by the {accountant} "
                          f"accountant for T = {steps} steps of {batch_size} of n = {n}: {exc}") from None
    return Plan(target, delta, accountant, sampling, n, steps, batch_size, clip, clip_hessian, mu_total, mu_moments,
                mu_scaling, extra, hist_sd, sigma, mu_clip, clip_sd)


def stated_epsilons(plan: Plan) -> tuple[float, float, float]:
    """``(path alone, whole release, the CLT's whole release)`` at the plan's noise: what the guarantee states.

    The CLT's figure (a comparison, not a bound) is nan for Poisson batches:
    its Poisson form is for add/remove neighbours, not fit's replace-one.
    """
    args = (plan.sigma, plan.steps, plan.n, plan.batch_size, plan.delta, plan.extra)
    if plan.sampling == "poisson":
        return (*poisson_epsilons(*args), math.nan)
    alone, total = epsilon_pair(plan.accountant, plan.sampling, *args)
    return alone, total, epsilon_pair("clt", plan.sampling, *args)[1]


__all__ = ["Plan", "calibrate", "stated_epsilons"]
