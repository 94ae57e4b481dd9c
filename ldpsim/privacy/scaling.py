"""Scaling data columns without leaking them: public bounds, or a private centre and scale by Gaussian histograms.

DP-SGD needs covariates on a known scale (its clipping threshold and step
size are set for values of order one), and the sample mean and SD of a column
are not private. Two ways keep the scaling inside the guarantee:

* :func:`bounds_scaling`: bounds ``[lo, hi]`` the user states from public
  knowledge (an age in [18, 100]); values are clipped to them and mapped to
  ``[-3, 3]``. Spends nothing.
* :func:`private_scaling`: three Gaussian histograms per column, released
  with noise and then only post-processed, so that the map adapts to the
  column's location *and* scale over the whole range of doubles (a column
  of timestamps, 1.7e9 +- 3e7, or of x + 1e9 with SD 1, is scaled as well
  as one centred at zero):

  1. **magnitude**: ``|x|`` on a public grid of powers of 8 covering every
     double (bins ``[8^(k-1), 8^k)`` and one for 0) gives a range
     ``[-R, R]`` holding the bulk, ``R`` the upper edge of the highest bin
     that stands above the noise;
  2. **spread**: ``|x_i - x_j|`` over ``n // 2`` disjoint pairs of rows
     (paired by a random permutation, public coins) on the same grid gives
     the scale ``S``: the SD of the normal column whose differences have
     the noisy CDF found at the grid edge where it is nearest 1/2
     (:func:`_spread`). Differences do not see the location, so a column far
     from zero is measured as finely as one at zero;
  3. **location**: equal bins of width ``2 S`` on ``[-R, R]`` give the
     centre, the noisy median interpolated within its bin. There may be up to
     ``2^60`` bins (``R / S`` is large for a column far from zero): the noise
     of the empty ones is drawn lazily, exactly as the dense histogram's
     would be after thresholding (how many pass the threshold is binomial,
     where they sit uniform, their values the normal tail).

  The scale is that spread over :data:`TARGET_SD` (a normal column's scaled SD
  lands in 0.9-1.5). Noisy counts below a threshold are read as zero: ``z_(1 - ALPHA / K)``
  noise SDs for a histogram of ``K`` bins, so that an empty bin anywhere
  passes with probability about :data:`ALPHA`. Values outside
  ``centre +- MARGIN scale`` are clipped, so the scaled column lies in a known
  box (what the gradient's clipping assumes anyway).

  Replacing one row moves one count down and another up in each histogram
  (one pair's difference in the second): l2 sensitivity ``sqrt 2``. With
  noise SD ``s`` per count, each histogram is ``sqrt(2) / s``-GDP, and the
  ``3 k`` histograms of ``k`` columns, each chosen after the earlier ones
  were released, compose exactly to ``sqrt(6 k) / s``-GDP (Dong, Roth & Su
  2022, Corollary 3.3): :func:`histogram_noise_sd` solves ``s`` for a GDP
  budget. When a histogram shows nothing above the noise,
  :class:`ScalingFailed` says which; that decision reads only the released
  histograms, so it is post-processing and covered by the same budget.
  :func:`rows_needed` is the public counterpart, from ``s`` alone: the rows a
  normal column needs for every histogram to clear its threshold.

The centre and scale need not be accurate: any released affine map gives
the same inference on the original scale (estimates and intervals are
mapped back through it); they only need to put the bulk of the column near
``[-1, 1]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Histograms per privately scaled column (magnitude, spread, location).
HISTOGRAMS = 3
#: Probability that some empty bin of a histogram passes its threshold.
ALPHA = 1e-4
#: Octaves per bin of the magnitude grids (bins [8^(k-1), 8^k)).
OCTAVES = 3
#: Smallest and largest exponents of ``np.frexp`` for a finite nonzero double.
E_LOW, E_HIGH = -1073, 1024
#: Magnitude bins: one for 0, then ``[2^(E_LOW - 1 + OCTAVES k), 2^(E_LOW - 1 + OCTAVES (k + 1)))``.
MAG_BINS = 1 + (E_HIGH - E_LOW) // OCTAVES + 1
#: The scaled column's SD aimed at (the scale is the spread over it). The privacy noise is fixed in scaled
#: units, so a slope's privacy SD grows with its column's scale: aimed at 1, the intervals on a design like the
#: Fair data's were 2.8 times as long as before issue 32 (1.6 at 1.25, 1.1 at 1.5), while at 1.5 more paths
#: clipped their way out of settling (11 of 200 refused on x1 + 1e9 at n = 1000, 5 at 1.25, 4 at 1)
TARGET_SD = 1.25
#: Location bins are this many spread units wide.
WIDTH = 2.0
#: Most location bins (the width grows beyond).
MAX_BINS = 2**60
#: Values outside ``centre +- MARGIN scale`` are clipped.
MARGIN = 16.0
#: Median of ``|X - X'|`` for ``X, X'`` i.i.d. N(0, 1): ``sqrt 2 z_0.75``.
PAIR_MEDIAN = math.sqrt(2.0) * 0.6744897501960817
#: Share of rows in the busiest bin of each histogram for a normal column, whatever its location and scale
#: (the least over alignments of the grid): the magnitude histogram of a centred column 0.55, the
#: differences 0.55 of the n / 2 pairs, the location histogram (bins 2 S wide) 0.48, 0.34 if S is half the SD.
NORMAL_SHARE = 0.27
#: The busiest bin must stand this many noise SDs above its threshold for :func:`rows_needed`.
CLEARANCE = 2.0
#: Largest finite double.
BIG = float(np.finfo(float).max)


class ScalingFailed(ValueError):
    """A private scaling found nothing above the noise; ``str`` says which histogram (no data values)."""


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
        """The scaled column (clipped to ``[lo, hi]`` first); halves first, so that nothing overflows."""
        with np.errstate(over="ignore"):
            z = (np.clip(x, self.lo, self.hi) / 2.0 - self.centre / 2.0) / self.scale
        return z * 2.0


def histogram_noise_sd(columns: int, mu: float) -> float:
    """Noise SD per count so that ``3 columns`` histograms of l2 sensitivity ``sqrt 2`` are ``mu``-GDP together."""
    if not (mu > 0 and columns > 0):
        raise ValueError(f"need mu > 0 and columns > 0, got {mu}, {columns}")
    return math.sqrt(2.0 * HISTOGRAMS * columns) / mu


def threshold(bins: int) -> float:
    """Noise SDs below which a count of a ``bins``-bin histogram is read as zero: ``z_(1 - ALPHA / bins)``."""
    from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

    return float(-special.ndtri(ALPHA / bins))


def rows_needed(noise_sd: float) -> int:
    """Rows for which a normal column's busiest bin clears every threshold by :data:`CLEARANCE` noise SDs.

    A function of the noise alone (public): ``fit`` refuses fewer rows before
    it reads any value. Columns that are not normal may need more; the
    private scaling then says so (:class:`ScalingFailed`).
    """
    worst = max(threshold(MAG_BINS), threshold(64))
    return int(math.ceil((worst + CLEARANCE) * noise_sd / NORMAL_SHARE))


def _magnitude_index(values: np.ndarray) -> np.ndarray:
    """Bin of each ``|value|`` on the magnitude grid (0 for zero)."""
    _, e = np.frexp(np.abs(values))
    return np.where(values == 0.0, 0, 1 + (e - E_LOW) // OCTAVES)


def _magnitude_edges(k: int) -> tuple[float, float]:
    """``[low, high)`` of magnitude bin ``k >= 1`` (``high`` at most the largest double)."""
    low = math.ldexp(1.0, E_LOW - 1 + OCTAVES * (k - 1))
    high = math.ldexp(1.0, E_LOW - 1 + OCTAVES * k) if E_LOW - 1 + OCTAVES * k <= 1023 else BIG
    return low, high


def _noisy(counts: np.ndarray, noise_sd: float, gen: np.random.Generator) -> np.ndarray:
    """Counts plus Gaussian noise, thresholded at :func:`threshold` (below: 0)."""
    noisy = counts + noise_sd * gen.standard_normal(counts.shape[0])
    noisy[noisy < threshold(counts.shape[0]) * noise_sd] = 0.0
    return noisy


def _quantile_position(counts: np.ndarray, q: float) -> tuple[int, float]:
    """``(bin, fraction)``: where the noisy ``q`` quantile falls, ``fraction`` of the way through ``bin``."""
    cdf = np.cumsum(counts) / counts.sum()
    k = int(np.searchsorted(cdf, q, side="left"))
    before = cdf[k - 1] if k > 0 else 0.0
    return k, float((q - before) / (cdf[k] - before))


def _median_position(counts: np.ndarray) -> tuple[int, float]:
    """``(bin, fraction)``: where the noisy median falls, ``fraction`` of the way through ``bin``."""
    return _quantile_position(counts, 0.5)


def _sparse_noisy(index: np.ndarray, bins: int, noise_sd: float, gen: np.random.Generator):
    """``(bins, counts)`` of a ``bins``-bin histogram of ``index`` with noise, thresholded, empty bins drawn lazily.

    The result has the law of the dense histogram thresholded at
    :func:`threshold`: each occupied bin gets its noise; of the empty ones,
    ``Binomial(empty, p)`` pass (``p`` the normal tail beyond the threshold),
    at uniformly drawn empty positions, with values from that tail.
    """
    from scipy import special

    occupied, counts = np.unique(index, return_counts=True)
    level = threshold(bins)
    noisy = counts + noise_sd * gen.standard_normal(counts.shape[0])
    keep = noisy >= level * noise_sd
    where, values = [occupied[keep]], [noisy[keep]]
    tail = float(special.ndtr(-level))
    spurious = int(gen.binomial(bins - occupied.shape[0], tail))
    if spurious:
        taken = set(occupied.tolist())
        spots = []
        while len(spots) < spurious:
            spot = int(gen.integers(0, bins))
            if spot not in taken:
                taken.add(spot)
                spots.append(spot)
        where.append(np.array(spots, dtype=np.int64))
        # the normal tail beyond the threshold, by inversion from the far end (no rounding to 1)
        values.append(-noise_sd * special.ndtri(tail * gen.random(spurious)))
    where, values = np.concatenate(where), np.concatenate(values)
    order = np.argsort(where)
    return where[order], values[order]


def _spread(diff: np.ndarray) -> float:
    """The SD of a normal column whose pair differences have the noisy histogram ``diff`` (half-differences).

    Read at the bin edge ``e`` where the noisy CDF ``F`` is nearest 1/2: ``|X - X'| = sigma sqrt(2) |Z|`` for a
    normal column gives ``sigma = 2 e / (sqrt(2) z_((1 + F) / 2))``, whatever the grid's alignment (a quantile
    interpolated within a bin 8 wide was off by up to a factor 2.8, and a third of tied pairs, as in ratings
    1-5, pulled it to 0.6 of the SD: 12% of the gradients clipped on the Fair data; read so, a normal column's
    spread is within 0.8-1.4 of its SD, ratings 1-5 get 1.4 times theirs). Edges where ``F`` is below 0.02 or
    above 0.98 say little; with none between, the median of the untied differences interpolated in its bin.
    """
    from scipy import special

    # ties count (a discrete column's normal equivalent): left out, they made the scale of ratings 1-5 1.7
    # times their SD instead of 1.4
    cdf = np.cumsum(diff) / diff.sum()
    usable = np.flatnonzero((cdf > 0.02) & (cdf < 0.98))
    if usable.size:
        k = int(usable[np.argmin(np.abs(cdf[usable] - 0.5))])
        edge = _magnitude_edges(k)[1] if k > 0 else 0.0
        if edge > 0.0:
            return 2.0 * edge / (math.sqrt(2.0) * float(special.ndtri((1.0 + cdf[k]) / 2.0)))
    # one bin holds almost everything (or the zero bin and one other): its median, geometrically interpolated
    k, frac = _quantile_position(np.concatenate([[0.0], diff[1:]]), 0.5)  # the untied ones' median
    low, high = _magnitude_edges(k)
    return 2.0 * low * (high / low) ** frac / PAIR_MEDIAN


def private_scaling(name: str, x: np.ndarray, noise_sd: float, gen: np.random.Generator) -> ColumnScale:
    """A column's centre and scale from three Gaussian histograms with noise SD ``noise_sd`` per count (see module).

    Parameters
    ----------
    name : str
    x : (n,) array
        The column (finite values).
    noise_sd : float
        SD of the noise on each count (:func:`histogram_noise_sd`).
    gen : numpy.random.Generator
        Public coins and noise: the magnitude histogram's, the pairing, the
        differences', the location histogram's.

    Raises
    ------
    ScalingFailed
        If a histogram shows nothing above its threshold, or only ties among
        the differences (the message names the histogram, never a value).
    """
    x = np.asarray(x, dtype=float)
    # 1. magnitude: the bulk lies in [-R, R]
    mag = _noisy(np.bincount(_magnitude_index(x), minlength=MAG_BINS).astype(float), noise_sd, gen)
    seen = np.flatnonzero(mag)
    if seen.size == 0:
        raise ScalingFailed("its magnitude histogram has no count above the noise")
    top = int(seen[-1])
    reach = _magnitude_edges(top)[1] if top > 0 else 0.0

    # 2. spread, from differences of disjoint pairs (halved first: a difference of two doubles can overflow)
    perm = gen.permutation(x.shape[0])
    half = x[perm[0:2 * (x.shape[0] // 2):2]] / 2.0 - x[perm[1:2 * (x.shape[0] // 2):2]] / 2.0
    diff = _noisy(np.bincount(_magnitude_index(half), minlength=MAG_BINS).astype(float), noise_sd, gen)
    if not diff.any():
        raise ScalingFailed("its histogram of differences between rows has no count above the noise")
    if diff[1:].sum() <= 0.0:
        raise ScalingFailed("nearly every pair of its rows is equal, as far as the noise lets one see: it carries "
                            "too little information at this budget")
    spread = min(_spread(diff), BIG / 4.0)

    # 3. location: bins WIDTH spreads wide on [-R, R] (R >= one bin)
    reach = max(reach, WIDTH * spread)
    width = max(WIDTH * spread, reach / (MAX_BINS / 2.0))
    bins = int(math.ceil(2.0 * (reach / width)))
    index = np.clip(np.floor((np.clip(x, -reach, reach) / 2.0 + reach / 2.0) / (width / 2.0)), 0, bins - 1)
    where, values = _sparse_noisy(index.astype(np.int64), bins, noise_sd, gen)
    if where.size == 0:
        raise ScalingFailed("its location histogram has no count above the noise")
    k, frac = _median_position(values)
    centre = 2.0 * (-reach / 2.0 + (float(where[k]) + frac) * (width / 2.0))  # in halves: no overflow
    scale = float(spread) / TARGET_SD
    with np.errstate(over="ignore"):
        lo, hi = centre - MARGIN * scale, centre + MARGIN * scale
    return ColumnScale(name, centre, scale, max(lo, -BIG), min(hi, BIG), "private")


#: Public bounds map to ``[-BOUNDS_BOX, BOUNDS_BOX]``: a column filling the middle third of honest bounds gets
#: SD about 1 (mapped to [-1, 1], N(50, 10) in bounds 0:100 had SD 0.2 and gave A = E[x x'] an eigenvalue of
#: 0.04, an eighth of the spectral norm of the private A~'s noise at n = 2000 and epsilon 2).
BOUNDS_BOX = 3.0


def bounds_scaling(name: str, lo: float, hi: float) -> ColumnScale:
    """Public bounds: ``[lo, hi] -> [-3, 3]`` (:data:`BOUNDS_BOX`)."""
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"bounds of {name!r} must be finite with lo < hi, got {lo}:{hi}")
    return ColumnScale(name, lo / 2.0 + hi / 2.0, (hi / 2.0 - lo / 2.0) / BOUNDS_BOX, lo, hi, "bounds")


def identity_scaling(name: str) -> ColumnScale:
    """The column as it is (the user states it is on a public scale)."""
    return ColumnScale(name, 0.0, 1.0, -math.inf, math.inf, "none")


def nonprivate_scaling(name: str, x: np.ndarray) -> ColumnScale:
    """The sample mean and SD: NOT private (only with an explicit flag)."""
    return ColumnScale(name, float(np.mean(x)), float(np.std(x, ddof=1)), -math.inf, math.inf, "nonprivate")


__all__ = ["ALPHA", "BOUNDS_BOX", "HISTOGRAMS", "MARGIN", "TARGET_SD", "ColumnScale", "ScalingFailed",
           "bounds_scaling", "histogram_noise_sd", "identity_scaling", "nonprivate_scaling", "private_scaling",
           "rows_needed", "threshold"]
