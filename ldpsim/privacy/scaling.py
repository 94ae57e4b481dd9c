"""Scaling data columns without leaking them: public bounds, or a private centre and scale by Gaussian histograms.

DP-SGD needs covariates on a known scale (its clipping threshold and step
size are set for values of order one), and the sample mean and SD of a column
are not private. Two ways keep the scaling inside the guarantee:

* :func:`bounds_scaling`: bounds ``[lo, hi]`` the user states from public
  knowledge (an age in [18, 100]); values are clipped to them and mapped to
  ``[-1, 1]``. Spends nothing.
* :func:`private_scaling`: two Gaussian histograms per column, released with
  noise and then only post-processed. First the signed magnitudes on a
  public grid of powers of two (bins ``(2^(k-1), 2^k]`` of either sign, and
  one bin for ``|x| <= 2^K_MIN``) locate the column's bulk: noisy counts
  below :data:`THRESHOLD` noise SDs are set to zero (an empty bin passes
  with probability 2e-8, so the ~1000 empty bins of the grid do not drown
  the data), and the 0.5% and 99.5% quantiles of the rest give a range
  ``[lo, hi]``. Then :data:`FINE_BINS` equal bins on ``[lo, hi]`` (values
  outside clipped into the end bins), thresholded the same way, give the
  centre and scale: the mean and SD of what is left (at least one bin
  width; with nothing left, the middle and a quarter of the range). Replacing one row moves one count down and another up in
  each histogram: l2 sensitivity ``sqrt 2`` (under add/remove, 1). With noise
  SD ``s`` per count, each histogram is ``sqrt(2) / s``-GDP, and the ``2k``
  histograms of ``k`` columns compose exactly to ``2 sqrt(k) / s``-GDP
  (Dong, Roth & Su 2022, Corollary 3.3): :func:`histogram_noise_sd` solves
  ``s`` for a GDP budget. Values outside ``[lo, hi]`` are then clipped, so
  the scaled column lies in a known box (what the gradient's clipping
  assumes anyway).

The centre and scale need not be accurate: any released affine map gives
the same inference on the original scale (estimates and intervals are
mapped back through it); they only need to put the bulk of the column near
``[-1, 1]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Smallest and largest power of two of the coarse grid: |x| <= 2^K_MIN share one bin, |x| > 2^K_MAX the last.
K_MIN, K_MAX = -40, 500
#: Bins of the fine histogram on the coarse range.
FINE_BINS = 64
#: Share of a column's values left outside the coarse range, half on each side.
TAIL = 0.01
#: Coarse counts below this many noise SDs are read as zero.
THRESHOLD = 5.5


@dataclass(frozen=True)
class ColumnScale:
    """A column's released affine map ``x -> (clip(x, lo, hi) - centre) / scale`` and how it was found."""

    name: str
    centre: float
    scale: float
    lo: float
    hi: float
    how: str  # "private", "bounds", "none" or "nonprivate"

    def apply(self, x: np.ndarray) -> np.ndarray:
        """The scaled column (clipped to ``[lo, hi]`` first)."""
        return (np.clip(x, self.lo, self.hi) - self.centre) / self.scale


def histogram_noise_sd(columns: int, mu: float) -> float:
    """Noise SD per count so that ``2 columns`` histograms of l2 sensitivity ``sqrt 2`` are ``mu``-GDP together."""
    if not (mu > 0 and columns > 0):
        raise ValueError(f"need mu > 0 and columns > 0, got {mu}, {columns}")
    return 2.0 * math.sqrt(columns) / mu


def _coarse_edges() -> np.ndarray:
    """Edges of the signed power-of-two grid, from -2^K_MAX to 2^K_MAX (the middle bin is |x| <= 2^K_MIN)."""
    pos = 2.0 ** np.arange(K_MIN, K_MAX + 1, dtype=float)
    return np.concatenate([-pos[::-1], pos])


def _noisy_quantile_edges(counts: np.ndarray, edges: np.ndarray, tail: float) -> tuple[float, float]:
    """``(lo, hi)``: outer edges of the bins holding the ``tail / 2`` and ``1 - tail / 2`` noisy quantiles."""
    c = np.clip(counts, 0.0, None)
    total = c.sum()
    if total <= 0:
        return float(edges[0]), float(edges[-1])
    cdf = np.cumsum(c) / total
    first = int(np.searchsorted(cdf, tail / 2.0, side="left"))
    last = int(np.searchsorted(cdf, 1.0 - tail / 2.0, side="left"))
    return float(edges[first]), float(edges[min(last + 1, len(edges) - 1)])


def private_scaling(name: str, x: np.ndarray, noise_sd: float, gen: np.random.Generator) -> ColumnScale:
    """A column's centre and scale from two Gaussian histograms with noise SD ``noise_sd`` per count (see module).

    Parameters
    ----------
    name : str
    x : (n,) array
        The column (finite values).
    noise_sd : float
        SD of the noise on each count (:func:`histogram_noise_sd`).
    gen : numpy.random.Generator
        Draws the noise: the coarse histogram's, then the fine one's.
    """
    edges = _coarse_edges()
    # bins: (-inf, -2^K_MAX], ..., [-2^K_MIN, 2^K_MIN], ..., (2^K_MAX, inf): values beyond the grid join its ends
    index = np.clip(np.searchsorted(edges, x, side="left"), 1, len(edges) - 1)
    counts = np.bincount(index - 1, minlength=len(edges) - 1).astype(float)
    counts += noise_sd * gen.standard_normal(counts.shape[0])
    counts[counts < THRESHOLD * noise_sd] = 0.0
    lo, hi = _noisy_quantile_edges(counts, edges, TAIL)
    if not hi > lo:  # only when every noisy count was at most zero: the whole grid
        lo, hi = float(edges[0]), float(edges[-1])
    fine_edges = np.linspace(lo, hi, FINE_BINS + 1)
    width = (hi - lo) / FINE_BINS
    fine_index = np.clip(((np.clip(x, lo, hi) - lo) / width).astype(np.int64), 0, FINE_BINS - 1)
    fine = np.bincount(fine_index, minlength=FINE_BINS).astype(float)
    fine += noise_sd * gen.standard_normal(FINE_BINS)
    # unthresholded, the noise of the empty bins far from the bulk, weighted by their squared distance, can
    # outweigh the data's variance (n = 6366, 128 bins, SD 24 per count: as large as the signal)
    fine[fine < THRESHOLD * noise_sd] = 0.0
    mids = 0.5 * (fine_edges[:-1] + fine_edges[1:])
    total = fine.sum()
    if total > 0:
        centre = float(np.dot(fine, mids) / total)
        sd = math.sqrt(float(np.dot(fine, (mids - centre) ** 2)) / total)
    else:  # the noise outweighed the data: the middle of the range, a quarter of it
        centre, sd = 0.5 * (lo + hi), 0.25 * (hi - lo)
    # a scale of at least one bin: a column the histogram sees as one spike still maps into a finite box
    scale = max(sd, width)
    return ColumnScale(name, centre, scale, lo, hi, "private")


def bounds_scaling(name: str, lo: float, hi: float) -> ColumnScale:
    """Public bounds: ``[lo, hi] -> [-1, 1]``."""
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"bounds of {name!r} must be finite with lo < hi, got {lo}:{hi}")
    return ColumnScale(name, 0.5 * (lo + hi), 0.5 * (hi - lo), lo, hi, "bounds")


def identity_scaling(name: str) -> ColumnScale:
    """The column as it is (the user states it is on a public scale)."""
    return ColumnScale(name, 0.0, 1.0, -math.inf, math.inf, "none")


def nonprivate_scaling(name: str, x: np.ndarray) -> ColumnScale:
    """The sample mean and SD: NOT private (only with an explicit flag)."""
    return ColumnScale(name, float(np.mean(x)), float(np.std(x, ddof=1)), -math.inf, math.inf, "nonprivate")


__all__ = ["FINE_BINS", "K_MAX", "K_MIN", "TAIL", "THRESHOLD", "ColumnScale", "bounds_scaling", "histogram_noise_sd",
           "identity_scaling", "nonprivate_scaling", "private_scaling"]
