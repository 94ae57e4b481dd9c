"""BB and BBjoint: the multiplier block bootstrap of Dette & Graw (2024, eq. 11-12), and its simultaneous box.

Both read the block sums the main kernel streams (blocks of length
``l = floor(n^beta)``) and share one set of ``B`` bootstrap draws, drawn from
the replication's generator after the path.
"""

from __future__ import annotations

import math

import numpy as np

from ...engine.runs.config import Key, Range
from ..streaming import floor_power
from .base import Method, register
from .common import LEVEL

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


def block_bootstrap_draws(state, layout, gen: np.random.Generator, n_boot: int, law: str) -> np.ndarray:
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


def block_bootstrap(state, draws: np.ndarray, *, level: float):
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


def block_bootstrap_joint(state, draws: np.ndarray, *, level: float):
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


#: The block bootstrap's keys (``level`` sits among them where the coverage study has always listed it).
BETA = Key("beta", "float", 0.75, range=Range("(0, 1)"), help="block length floor(n^beta) of BB")
DRAWS = Key("B", "int", 500, range=Range(f"[{MIN_BOOTSTRAP_DRAWS}, inf)"),
            help=f"bootstrap draws (at least {MIN_BOOTSTRAP_DRAWS}, and 2 / (1 - level) for BB)")
MULTIPLIER = Key("multiplier", "choice", "uniform", choices=MULTIPLIERS, help="law of the bootstrap multipliers")
KEYS = (BETA, DRAWS, LEVEL, MULTIPLIER)

_STREAMS = "m = floor(n / l) of them, l = floor(n^beta) (m d floats)"


def _block_floats(d: int, s, options) -> int:
    return (s.n // floor_power(s.n, s.beta)) * d

register(
    Method("BB", "multiplier block bootstrap, blocks of length floor(n^beta), B draws (Dette & Graw 2024, eq. 11-12)",
           studies={"coverage": 10, "trace": 10, "dpsgd": 70}, default_in=("coverage", "trace", "dpsgd"),
           reads=("blocks",), streams=_STREAMS, tags=frozenset({"path"}), keys=KEYS, state_floats=_block_floats,
           texts={"dpsgd": "the coverage study's block bootstrap (blocks floor(T^beta)) on the DP-SGD path"},
           interval=lambda x: block_bootstrap(x.state, x.draws, level=x.level), style=("tab:green", "o"),
           line=("tab:red", "-")),
    Method("BBjoint", "the simultaneous block-bootstrap box for all coordinates of a vector model",
           studies={"coverage": 20, "trace": 20}, reads=("blocks",), streams=_STREAMS, keys=KEYS,
           state_floats=_block_floats,
           interval=lambda x: block_bootstrap_joint(x.state, x.draws, level=x.level), style=("tab:purple", "s"),
           line=("tab:purple", (0, (3, 1, 1, 1)))),
)

__all__ = ["BETA", "DRAWS", "KEYS", "MIN_BOOTSTRAP_DRAWS", "MULTIPLIER", "MULTIPLIERS", "block_bootstrap",
           "block_bootstrap_draws", "block_bootstrap_joint", "draw_multipliers", "min_bootstrap_draws"]
