"""Confidence intervals from a path's streamed state: BB, BM, SN, the oracle and asymptotic confidence sequences.

One function per method, each returning ``(lower, upper)`` arrays of shape
``(d,)``. They run once per replication (and per look, :mod:`ldpsim.studies.coverage.looks`)
after the kernel; their cost is ``O(B m d)`` at most, negligible next to the ``O(n)`` path.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .critical_values import random_scaling_critical_value
from .streaming import PathState, StreamLayout

#: Pointwise methods, in table order: a ``level`` interval at the end of the path. ``BBjoint`` is the
#: simultaneous block-bootstrap interval for all coordinates (max statistic); it shares BB's draws.
POINTWISE_METHODS = ("BB", "BBjoint", "BM", "SN", "oracle")
#: Asymptotic confidence sequences (:func:`asymptotic_cs`): ``level`` at every step at once, asymptotically;
#: ``AsympCS`` estimates the variance by batch means, ``AsympCS_oracle`` knows it.
CS_METHODS = ("AsympCS", "AsympCS_oracle")
#: Method names, in table order.
METHODS = POINTWISE_METHODS + CS_METHODS
#: Methods that need the block sums (and the bootstrap draws).
BLOCK_METHODS = ("BB", "BBjoint")
#: Methods that read the batch-means batches (AsympCS: its variance).
BATCH_METHODS = ("BM", "AsympCS")

#: An interval is usable only if its length is this many units in the last place of its ends:
#: then the ends resolve it to one part in a million. A path started far from theta* (theta0 = 1e20)
#: whose steps are below the spacing of its iterates gives intervals of length 0 or of rounding noise.
RESOLVED_ULPS = 2.0 ** 20


def resolved(bounds: np.ndarray) -> bool:
    """Whether every interval in ``bounds`` (``(..., 2)``) is longer than :data:`RESOLVED_ULPS` of its ends."""
    lo, hi = bounds[..., 0], bounds[..., 1]
    return bool(((hi - lo) > RESOLVED_ULPS * np.spacing(np.maximum(np.abs(lo), np.abs(hi)))).all())


def uses_blocks(methods) -> bool:
    """Whether any of ``methods`` is a block-bootstrap method."""
    return any(m in BLOCK_METHODS for m in methods)


def uses_batches(methods) -> bool:
    """Whether any of ``methods`` reads the batch-means batches (:data:`BATCH_METHODS`)."""
    return any(m in BATCH_METHODS for m in methods)


def unavailable(methods, layout: StreamLayout) -> list[str]:
    """The ``methods`` with no interval on ``layout``: fewer than two blocks, or fewer than two batches."""
    return [m for m in methods if (m in BLOCK_METHODS and not layout.enough_blocks)
            or (m in BATCH_METHODS and not layout.enough_batches)]


#: Methods run when a config does not say.
DEFAULT_METHODS = ("BB", "BM", "SN", "oracle")

#: Fewest bootstrap draws: the quantiles of fewer draws are too coarse to call an interval.
MIN_BOOTSTRAP_DRAWS = 50


def min_bootstrap_draws(level: float) -> int:
    """Fewest draws whose empirical ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles are not the extremes.

    ``B (1 - level) / 2 >= 1``, i.e. ``B >= 2 / (1 - level)``, and at least
    :data:`MIN_BOOTSTRAP_DRAWS` (50 at level 0.9, 200 at 0.99, 20000 at 0.9999).
    """
    return max(MIN_BOOTSTRAP_DRAWS, math.ceil(2.0 / (1.0 - level) * (1.0 - 1e-9)))  # 1 - 0.99 is not 0.01


#: Bootstrap multiplier laws: mean 0, variance 1.
MULTIPLIERS = ("uniform", "rademacher", "gaussian", "mammen")

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)
_MAMMEN_LOW = (1.0 - _SQRT5) / 2.0
_MAMMEN_HIGH = (1.0 + _SQRT5) / 2.0
_MAMMEN_P_LOW = (_SQRT5 + 1.0) / (2.0 * _SQRT5)


@lru_cache(maxsize=256)
def normal_quantile(level: float) -> float:
    """``z`` with ``P(|Z| <= z) = level`` for standard normal ``Z`` (cached: scipy takes 0.2 ms a call)."""
    from scipy import special  # scipy.stats.norm.ppf's own function, without scipy.stats' import (0.4 s)

    return float(special.ndtri(0.5 + level / 2.0))


def draw_multipliers(gen: np.random.Generator, law: str, size) -> np.ndarray:
    """Draw i.i.d. bootstrap multipliers with mean 0 and variance 1.

    Parameters
    ----------
    gen : numpy.random.Generator
        Source of randomness.
    law : {'uniform', 'rademacher', 'gaussian', 'mammen'}
        ``uniform`` is U(-sqrt 3, sqrt 3) (the paper's choice); ``mammen`` is
        Mammen's two-point law ``(1 -+ sqrt 5) / 2``.
    size : int or tuple of int
        Output shape.

    Returns
    -------
    numpy.ndarray
    """
    if law == "uniform":
        # numpy's uniform(low, high) is low + (high - low) * random(), element by element: the same
        # numbers, from the faster random(), in place (a bootstrap draws B x m of them per
        # replication, and every temporary of that size is a fresh mapping the kernel must fault in)
        eps = gen.random(size)
        eps *= _SQRT3 - -_SQRT3
        eps += -_SQRT3
        return eps
    if law == "rademacher":
        return np.where(gen.random(size) < 0.5, -1.0, 1.0)
    if law == "gaussian":
        return gen.standard_normal(size)
    if law == "mammen":
        return np.where(gen.random(size) < _MAMMEN_P_LOW, _MAMMEN_LOW, _MAMMEN_HIGH)
    raise ValueError(f"multiplier = {law!r} is not one of {', '.join(MULTIPLIERS)}")


def block_bootstrap_draws(state: PathState, layout: StreamLayout, gen: np.random.Generator,
                          n_boot: int, law: str) -> np.ndarray:
    """``B`` draws of the multiplier block bootstrap statistic (000, eq. 11).

    ``theta* = (1 / (m l)) sum_j eps_j sum_{b in block j} (theta_b - theta_bar)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(B, d)``.
    """
    m, l = layout.n_blocks, layout.block_len
    deviations = state.blocks - l * state.theta_bar  # (m, d)
    eps = draw_multipliers(gen, law, (n_boot, m))
    # an elementwise product and a numpy sum, not a BLAS matmul, so that the
    # result cannot depend on BLAS threading (n_jobs must not change results)
    if deviations.shape[1] == 1:  # the same products and the same pairwise sums, without a (B, m, 1) temporary
        np.multiply(eps, deviations[:, 0], out=eps)
        return eps.sum(axis=1)[:, None] / (m * l)
    return (eps[:, :, None] * deviations[None, :, :]).sum(axis=1) / (m * l)


def block_bootstrap(state: PathState, draws: np.ndarray, *, level: float):
    """Block-bootstrap interval, 000 eq. (12) as written, per coordinate.

    ``[theta_bar + q_alpha, theta_bar + q_(1-alpha)]``, ``alpha = (1 - level) / 2``,
    with ``q`` the empirical quantiles (numpy's default, R's type 7) of the
    bootstrap draws (:func:`block_bootstrap_draws`). With symmetric
    multipliers this has the law of the basic bootstrap interval
    (docs/corrections.md, item 2).
    """
    alpha = (1.0 - level) / 2.0
    q = np.quantile(draws, [alpha, 1.0 - alpha], axis=0)
    return state.theta_bar + q[0], state.theta_bar + q[1]


def block_bootstrap_joint(state: PathState, draws: np.ndarray, *, level: float):
    """Simultaneous block-bootstrap intervals for all coordinates (max statistic).

    With ``s_j`` the bootstrap SD of coordinate ``j`` and ``c`` the ``level``
    quantile of ``max_j |theta*_j| / s_j`` over the draws, the box
    ``theta_bar_j +- c s_j``, ``j = 1..d``, covers the whole parameter with
    probability ``level`` asymptotically: the bootstrap mimics the joint law
    of ``theta_bar - theta*``, dependence between coordinates included
    (Chernozhukov, Chetverikov & Kato 2013 for the max statistic). For
    ``d = 1`` it is the symmetric percentile-t-free bootstrap interval.
    """
    sd = draws.std(axis=0, ddof=1)
    crit = np.quantile(np.max(np.abs(draws) / sd, axis=1), level)
    return state.theta_bar - crit * sd, state.theta_bar + crit * sd


def batch_means_variance(state: PathState, layout: StreamLayout) -> np.ndarray:
    """Batch-means estimate of the asymptotic variance (Chen et al. 2020).

    ``(1/M) sum_{k=1..M} n_k (xbar_k - xbar)^2`` with batch 0 (burn-in)
    dropped and ``xbar`` the mean of the retained iterates.

    Returns
    -------
    numpy.ndarray
        Diagonal of the estimate, shape ``(d,)``.
    """
    sizes = layout.batch_sizes[1:].astype(float)[:, None]
    sums = state.batches[1:]
    means = sums / sizes
    grand = sums.sum(axis=0) / sizes.sum()
    return (sizes * (means - grand) ** 2).sum(axis=0) / sums.shape[0]


def batch_means(state: PathState, layout: StreamLayout, *, level: float):
    """Batch-means interval ``theta_bar +- z sqrt(Sigma_hat / n)``."""
    half = normal_quantile(level) * np.sqrt(batch_means_variance(state, layout) / layout.n)
    return state.theta_bar - half, state.theta_bar + half


def random_scaling(state: PathState, layout: StreamLayout, *, level: float):
    """Random-scaling (self-normalised) interval ``theta_bar +- cv sqrt(V_n / n)``."""
    half = random_scaling_critical_value(level) * np.sqrt(state.sn_v / layout.n)
    return state.theta_bar - half, state.theta_bar + half


def oracle(state: PathState, layout: StreamLayout, *, sigma: np.ndarray, level: float):
    """Interval from the true asymptotic covariance: ``theta_bar +- z sqrt(Sigma_jj / n)``."""
    half = normal_quantile(level) * np.sqrt(np.diag(sigma) / layout.n)
    return state.theta_bar - half, state.theta_bar + half


def mixture_rho2(t_opt: float, level: float) -> float:
    """``rho^2`` of the normal mixture whose boundary is (nearly) narrowest at ``t_opt``.

    Waudby-Smith et al. (2024), Section 2.2: ``rho^2 = (-2 log alpha + log(1 - 2 log alpha)) / t_opt``,
    ``alpha = 1 - level``.
    """
    la = -2.0 * math.log(1.0 - level)
    return (la + math.log1p(la)) / t_opt


def mixture_margin(t, rho2: float, level: float):
    """Unit-variance half-width of Robbins' two-sided normal-mixture boundary, on the scale of a mean.

    ``sqrt(2 (t rho^2 + 1) / (t^2 rho^2) log(sqrt(t rho^2 + 1) / alpha))``, ``alpha = 1 - level``
    (Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas 2024, Theorem 2.2): for i.i.d. unit-variance
    Gaussian means it is crossed at some ``t >= 1`` with probability at most ``alpha`` (Ville's
    inequality on the mixture martingale, symmetric in the sign, so two-sided at ``alpha``).
    """
    tr = t * rho2 + 1.0
    return np.sqrt(2.0 * tr / (t * t * rho2) * np.log(np.sqrt(tr) / (1.0 - level)))


def asymptotic_cs(state: PathState, layout: StreamLayout, *, level: float, t_opt: float, variance=None):
    """The asymptotic confidence sequence of the averaged iterate at step ``layout.n``.

    ``theta_bar_t +- sqrt(Sigma_hat_t) mixture_margin(t, rho^2, level)``, ``rho^2`` tuned to be narrowest
    at ``t_opt`` (:func:`mixture_rho2`); ``Sigma_hat_t`` the batch-means estimate at ``t`` (``AsympCS``)
    or the true diagonal (``variance``, ``AsympCS_oracle``). Its guarantee (docs/sequential.md):
    the averaged iterate's partial sums are a martingale plus terms negligible at the ``sqrt(t log t)``
    scale, and ``Sigma_hat_t`` consistent; the same function of ``t`` serves every look of a path.
    """
    if variance is None:
        variance = batch_means_variance(state, layout)
    half = np.sqrt(variance) * mixture_margin(float(layout.n), mixture_rho2(t_opt, level), level)
    return state.theta_bar - half, state.theta_bar + half


def intervals(methods, state: PathState, layout: StreamLayout, gen: np.random.Generator, *,
              n_boot: int, law: str, level: float, sigma: np.ndarray, t_opt: float | None = None) -> np.ndarray:
    """All intervals of one replication, in the order of ``methods``.

    The bootstrap multipliers are drawn once, after the path and from its
    generator, and serve every coordinate and both ``BB`` and ``BBjoint``.
    ``t_opt``: where the confidence sequences are narrowest (default the path's end, ``layout.n``;
    at a look before the end, the run's ``n``).

    Returns
    -------
    numpy.ndarray
        ``(len(methods), d, 2)`` lower and upper ends.
    """
    draws = None
    if uses_blocks(methods):
        draws = block_bootstrap_draws(state, layout, gen, n_boot, law)
    out = np.empty((len(methods), state.theta_bar.shape[0], 2))
    for j, method in enumerate(methods):
        if method == "BB":
            lo, hi = block_bootstrap(state, draws, level=level)
        elif method == "BBjoint":
            lo, hi = block_bootstrap_joint(state, draws, level=level)
        elif method == "BM":
            lo, hi = batch_means(state, layout, level=level)
        elif method == "SN":
            lo, hi = random_scaling(state, layout, level=level)
        elif method == "oracle":
            lo, hi = oracle(state, layout, sigma=sigma, level=level)
        elif method in CS_METHODS:
            lo, hi = asymptotic_cs(state, layout, level=level, t_opt=layout.n if t_opt is None else t_opt,
                                   variance=np.diag(sigma) if method == "AsympCS_oracle" else None)
        else:
            raise ValueError(f"method = {method!r} is not one of {', '.join(METHODS)}")
        out[j, :, 0], out[j, :, 1] = lo, hi
    return out
