"""HulC: the interval ``[min, max]`` of B independent averaged paths (Kuchibhotla, Balakrishnan & Wasserman 2024).

The stream of ``n`` observations is cut into ``B`` consecutive segments; on
each an averaged LDP-SGD path runs afresh (``theta`` restarts at ``theta0``
and the step counter at 1, as in Carter & Kuchibhotla 2025, whose code runs
one ASGD per batch), and the interval of coordinate ``j`` is the range of the
``B`` segment averages. If each average is on either side of the truth with
probability at least ``1/2 - Delta`` (median bias ``Delta``), the range misses
with probability at most

    Q(B; Delta) = (1/2 - Delta)^B + (1/2 + Delta)^B,

so ``B`` is the smallest integer with ``Q(B) <= alpha = 1 - level``
(``ceil(log2(2 / alpha))`` for ``Delta = 0``: 5 at level 0.9, 6 at 0.95).
The authors' code (``HulC1d``, ``solve_for_B`` in ``R/HulC.R`` and
``R/auxiliary_functions.R`` of github.com/Arun-Kuchibhotla/HulC) randomizes by
default: ``B - 1`` with probability ``tau = (alpha - Q(B)) / (Q(B - 1) - Q(B))``,
else ``B``, which makes the miscoverage bound exactly ``alpha``
(:func:`hulc_randomized_splits`). docs/zoo_methods.md has the details.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...engine.errors import ConfigError


def hulc_miscoverage(splits: int, delta: float = 0.0) -> float:
    """``Q(B; Delta) = (1/2 - Delta)^B + (1/2 + Delta)^B``, the bound on HulC's miscoverage (KBW 2024, Algorithm 1)."""
    return (0.5 - delta) ** splits + (0.5 + delta) ** splits


def _check(level: float, delta: float) -> None:
    if not 0.0 < level < 1.0:
        raise ConfigError(f"level = {level} is not in (0, 1)")
    if not 0.0 <= delta < 0.5:
        raise ConfigError(f"hulc_delta = {delta} is not a median bias in [0, 0.5)")


def hulc_splits(level: float, delta: float = 0.0) -> int:
    """The smallest ``B >= 1`` with ``Q(B; Delta) <= 1 - level`` (``solve_for_B`` of the HulC code, with ``t = 0``).

    Parameters
    ----------
    level : float
        Coverage level ``1 - alpha`` in (0, 1).
    delta : float
        Median bias ``Delta`` in [0, 1/2) of the segment averages (0: median-unbiased).

    Returns
    -------
    int
        ``ceil(log2(2 / alpha))`` when ``delta = 0``.
    """
    _check(level, delta)
    alpha = 1.0 - level
    # Q decreases in B; it is above alpha below log(1/alpha) / log(2/(1+2 delta)), so start the search there
    splits = max(1, math.floor(math.log(1.0 / alpha) / math.log(2.0 / (1.0 + 2.0 * delta))))
    while splits > 1 and hulc_miscoverage(splits - 1, delta) <= alpha:  # float safety: never skip the smallest
        splits -= 1
    while hulc_miscoverage(splits, delta) > alpha:
        splits += 1
    return splits


def hulc_randomization(level: float, delta: float = 0.0) -> tuple[int, float]:
    """``(B, tau)``: HulC uses ``B - 1`` segments with probability ``tau``, ``B`` otherwise (miscoverage bound ``alpha``).

    ``tau = (alpha - Q(B)) / (Q(B - 1) - Q(B))`` (``HulC1d`` with ``randomize = TRUE``);
    ``tau = 0`` when ``B = 1`` cannot be lowered.
    """
    splits = hulc_splits(level, delta)
    if splits == 1:
        return splits, 0.0
    alpha = 1.0 - level
    q1, q0 = hulc_miscoverage(splits, delta), hulc_miscoverage(splits - 1, delta)
    return splits, (alpha - q1) / (q0 - q1)


def hulc_randomized_splits(level: float, delta: float, u: float) -> int:
    """The randomized number of segments given a ``U[0, 1)`` draw ``u``: ``B - 1`` if ``u <= tau``, else ``B``.

    ``u`` must not depend on the path (draw it before the path, or from a
    stream of its own), or the segments would depend on the data.
    """
    splits, tau = hulc_randomization(level, delta)
    return splits - 1 if u <= tau else splits


def hulc_coverage(splits: int, delta: float = 0.0) -> float:
    """The guaranteed coverage ``1 - Q(B; Delta)``; exact for continuous median-unbiased averages (``Delta = 0``)."""
    return 1.0 - hulc_miscoverage(splits, delta)


@dataclass(frozen=True)
class HulCLayout:
    """Where HulC's segments end for ``n`` observations.

    Attributes
    ----------
    n : int
        Observations (steps) in the stream.
    ends : numpy.ndarray
        ``int64`` ``(B,)``: the last observation (1-based) of each segment,
        ``ends[b] = floor((b + 1) n / B)``; segment ``b`` holds observations
        ``ends[b - 1] + 1 .. ends[b]`` (``ends[-1] = 0``), lengths differing by
        at most one, all ``n`` used.
    """

    n: int
    ends: np.ndarray

    @classmethod
    def build(cls, n: int, splits: int, min_length: int = 2):
        """The layout of ``splits`` segments of ``n`` observations; each must hold ``min_length`` at least."""
        if splits < 1:
            raise ConfigError(f"HulC needs at least 1 segment, got B = {splits}")
        if n // splits < min_length:
            raise ConfigError(f"n = {n} is too small for HulC's B = {splits} segments of at least {min_length} steps")
        ends = np.array([(b + 1) * n // splits for b in range(splits)], dtype=np.int64)
        return cls(int(n), ends)

    @property
    def splits(self) -> int:
        """``B``, the number of segments."""
        return int(self.ends.shape[0])

    @property
    def lengths(self) -> np.ndarray:
        """Observations per segment."""
        return np.diff(self.ends, prepend=0)


def hulc_interval(averages: np.ndarray):
    """HulC's interval per coordinate: ``(min_b avg_b, max_b avg_b)`` of the ``(B, d)`` segment averages.

    NaN where any average is not finite (a diverged segment: no interval).
    """
    averages = np.asarray(averages, dtype=float)
    ok = np.isfinite(averages).all(axis=0)
    lo = np.where(ok, averages.min(axis=0), np.nan)
    hi = np.where(ok, averages.max(axis=0), np.nan)
    return lo, hi


def hulc_state_size(d: int, splits: int) -> int:
    """Floats HulC streams: the ``(B, d)`` averages, the open segment's sum and its own iterate."""
    return splits * d + 2 * d
