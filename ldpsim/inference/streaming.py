"""The inference state streamed along the SGD path, and its layout.

Memory does not grow with n: the kernel keeps

* ``blocks``: the ``m = floor(n / l)`` block sums of the iterates, ``l = floor(n^beta)``
  (block bootstrap, 000 eq. 11);
* ``batches``: the ``M + 1`` batch sums of Chen et al. (2020) batch means,
  batch 0 being burn-in (docs/corrections.md, item 3);
* the random-scaling variance ``V_n`` of Lee et al. (2022), from three running
  sums (docs/corrections.md, item 4);
* ``theta_bar``, the average of the iterates.

:class:`StreamLayout` fixes where blocks and batches end; it depends on
``n``, ``beta`` and the step-size exponent ``gamma`` only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def robust_floor(value: float) -> int:
    """``floor(value)``, taking a value within a relative 1e-12 of an integer as that integer.

    Powers computed in floating point can land just below the integer they
    equal mathematically (``1e8 ** 0.75`` may give 999999.9999999999); the
    block and batch lengths must not depend on the platform's ``pow``.
    """
    nearest = round(value)
    if abs(value - nearest) <= 1e-12 * max(1.0, abs(value)):
        return int(nearest)
    return int(math.floor(value))


def floor_power(n: int, exponent: float) -> int:
    """``floor(n ** exponent)`` via :func:`robust_floor`."""
    return robust_floor(float(n) ** exponent)


def batch_ends(n: int, gamma: float) -> np.ndarray:
    """Last iterate index (1-based) of each batch of Chen et al.'s batch means.

    Batches ``k = 0..M`` with ``M = floor(n^((1 - gamma) / 2))`` and ends
    ``e_k = floor(((k + 1) N)^(1 / (1 - gamma)))``, ``N = n^(1 - gamma) / (M + 1)``,
    so that ``e_M = n`` (set exactly). Batch 0 is burn-in.

    Parameters
    ----------
    n : int
        Number of SGD steps.
    gamma : float
        Step-size exponent in (0, 1).

    Returns
    -------
    numpy.ndarray
        ``int64`` array of the ``M + 1`` increasing batch ends.
    """
    big_m = floor_power(n, (1.0 - gamma) / 2.0)
    per_batch = float(n) ** (1.0 - gamma) / (big_m + 1)
    power = 1.0 / (1.0 - gamma)
    ends = np.array([robust_floor(((k + 1) * per_batch) ** power) for k in range(big_m + 1)], dtype=np.int64)
    ends[-1] = n
    return ends


def checkpoint_grid(n: int, count: int, k_min: int) -> np.ndarray:
    """About ``count`` log-spaced integer checkpoints from ``k_min`` to ``n`` (both included).

    Rounding makes repeats at small ``k``; they are dropped, so fewer than
    ``count`` may remain (never more than ``n - k_min + 1``).

    Returns
    -------
    numpy.ndarray
        Strictly increasing ``int64`` array, first ``k_min``, last ``n``.
    """
    grid = np.unique(np.rint(np.geomspace(k_min, n, count)).astype(np.int64))
    grid[0], grid[-1] = k_min, n  # geomspace's ends are not exact in floating point
    return np.unique(grid)


@dataclass(frozen=True)
class StreamLayout:
    """Where the streamed blocks and batches end for one setting.

    Attributes
    ----------
    n : int
        Number of SGD steps.
    block_len : int
        Block length ``l`` of the block bootstrap (0 if BB is off).
    n_blocks : int
        Number of blocks ``m = floor(n / l)`` (0 if BB is off).
    batch_ends : numpy.ndarray
        Ends of the batch-means batches (empty if BM is off).
    """

    n: int
    block_len: int
    n_blocks: int
    batch_ends: np.ndarray

    @classmethod
    def build(cls, n: int, beta: float, gamma: float, blocks: bool = True, batches: bool = True):
        """Layout for ``n`` steps, block exponent ``beta``, step exponent ``gamma``."""
        block_len = floor_power(n, beta) if blocks else 0
        n_blocks = n // block_len if blocks else 0
        ends = batch_ends(n, gamma) if batches else np.zeros(0, dtype=np.int64)
        return cls(n, block_len, n_blocks, ends)

    @property
    def enough_blocks(self) -> bool:
        """Whether the block bootstrap has the two blocks it needs at least."""
        return self.n_blocks >= 2

    @property
    def enough_batches(self) -> bool:
        """Whether batch means has two non-empty batches after the burn-in batch."""
        ends = self.batch_ends
        return len(ends) >= 3 and ends[0] >= 1 and bool((ends[1:] > ends[:-1]).all())

    @property
    def batch_sizes(self) -> np.ndarray:
        """Number of iterates in each batch (batch 0 included)."""
        return np.diff(self.batch_ends, prepend=0)


@dataclass
class PathState:
    """What one LDP-SGD path leaves for inference.

    Attributes
    ----------
    theta_bar : numpy.ndarray
        Average of the iterates, shape ``(d,)``.
    sn_v : numpy.ndarray
        Random-scaling variance ``V_n`` per coordinate, shape ``(d,)``.
    blocks : numpy.ndarray
        Block sums of the iterates, ``(m, d)``.
    batches : numpy.ndarray
        Batch sums of the iterates, ``(M + 1, d)``.
    steps : int
        Steps completed: ``n``, or fewer if the path diverged and stopped.
    own : list, optional
        The states of the users' methods streamed in the same pass (their
        records, this replication's copies), or ``None``.
    """

    theta_bar: np.ndarray
    sn_v: np.ndarray
    blocks: np.ndarray
    batches: np.ndarray
    steps: int
    own: list | None = None

    def finite(self, n: int) -> bool:
        """Whether the path ran all ``n`` steps and left finite state."""
        return (
            self.steps == n
            and bool(np.all(np.isfinite(self.theta_bar)))
            and bool(np.all(np.isfinite(self.sn_v)))
            and bool(np.all(np.isfinite(self.blocks)))
            and bool(np.all(np.isfinite(self.batches)))
        )
