"""An audit of the mechanisms as the kernels run them: empirical lower bounds on their privacy.

A mechanism ``M`` claims that its outputs at two neighbouring inputs ``x``
and ``x'`` are hard to tell apart: ``epsilon``-DP, ``(epsilon, delta)``-DP or
``mu``-GDP. An audit draws many outputs at a worst-case pair, through the
same jitted code the kernels call (randomized response, :func:`~.mechanisms.add_noise`
and :func:`~.mechanisms.draw_noise` on a noise record, and
:func:`~.mechanisms.gaussian_or_zero`, DP-SGD's step noise), and runs a
threshold test on a statistic of each output: the region
``R_t = {s(y) >= t}`` says "x'". Any test bounds the claim from below
(Kairouz, Oh & Viswanath 2015; the DP auditing of Jagielski, Ullman &
Oprea 2020 and Nasr et al. 2021): with ``FPR = P(M(x) in R)`` and
``FNR = P(M(x') not in R)``, ``(epsilon, delta)``-DP implies

    epsilon >= log((1 - delta - FNR) / FPR)   and, swapping x and x',   epsilon >= log((1 - delta - FPR) / FNR),

and ``mu``-GDP implies ``FNR >= Phi(Phi^-1(1 - FPR) - mu)`` (Dong, Roth & Su
2022), i.e. ``mu >= Phi^-1(1 - FPR) - Phi^-1(FNR)``. Both bounds decrease in
FPR and FNR, so plugging in the upper ends of Clopper-Pearson intervals of
the two rates gives a bound that holds with probability at least ``1 -
alpha`` (each end one-sided at ``alpha / 2``, the two joined by the union
bound). The threshold ``t`` and the direction of the test are chosen on
half of the draws (the *selection* half: the pair with the largest lower
bound there) and the bound is computed on the other half only, so the
choice cannot flatter it.

The statistics are the likelihood ratios of the noise, which makes the
threshold tests the most powerful ones (Neyman-Pearson):

* ``laplace``: i.i.d. Laplace noise of any common scale ``b`` at the shift
  ``v = x' - x``: ``b log(p_x'(y) / p_x(y)) = sum_j clamp(2 u_j - |v_j|, -|v_j|, |v_j|)``
  with ``u_j = sign(v_j) (y_j - x_j)``; it takes the values ``+-||v||_1``
  with positive probability (the noise beyond the shift), where the ratio
  of the two densities is exactly ``e^(+-epsilon)``;
* ``linear``: isotropic Gaussian noise: ``v'(y - x)``;
* randomized response: the reported bit.

Counts are kept per bin of a fixed grid of thresholds (chosen before any
draw, from the noise law), so memory does not grow with the draws.
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from scipy import stats

from ..engine.dialect.dispatch import by_record
from ..engine.dialect.jit import jit
from ..engine.dialect.rng import kernel_rng, local_rng, release_rng, replication_generator
from .mechanisms import add_noise, draw_noise, gaussian_or_zero, randomized_response, release

#: Statistic codes of the jitted loops.
LAPLACE_LOSS, LINEAR = 0, 1
STATISTICS = {"laplace": LAPLACE_LOSS, "linear": LINEAR}
#: Kinds of claims.
CLAIMS = ("epsilon", "epsilon_delta", "gdp")
#: Thresholds in a grid (the selection half picks one; a few hundred: with thousands, the best of many
#: noisy tail thresholds on the selection half is often a poor one on the evaluation half).
GRID_SIZE = 401


# --- the claim ----------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """What the code states for one pair of neighbouring inputs.

    Parameters
    ----------
    kind : {'epsilon', 'epsilon_delta', 'gdp'}
        Pure epsilon-DP, (epsilon, delta)-DP or mu-GDP.
    value : float
        epsilon, or mu for ``gdp``.
    delta : float
        The delta of ``epsilon_delta`` (0 otherwise).
    """

    kind: str
    value: float
    delta: float = 0.0

    def __post_init__(self):
        if self.kind not in CLAIMS:
            raise ValueError(f"claim kind must be one of {', '.join(CLAIMS)}, got {self.kind!r}")
        if not (self.value > 0 and math.isfinite(self.value)):
            raise ValueError(f"claimed value must be finite and > 0, got {self.value}")
        if not (0.0 <= self.delta < 1.0) or (self.kind == "epsilon_delta") != (self.delta > 0):
            raise ValueError(f"delta must be in (0, 1) for an (epsilon, delta) claim and 0 otherwise, got {self.delta}")

    @property
    def text(self) -> str:
        """E.g. ``epsilon = 1``, ``(1, 1e-05)``, ``mu = 1 GDP``."""
        if self.kind == "epsilon":
            return f"epsilon = {self.value:g}"
        if self.kind == "epsilon_delta":
            return f"({self.value:g}, {self.delta:g})"
        return f"mu = {self.value:.4g} GDP"


# --- the draws (jitted) -----------------------------------------------------------


@jit(inline=True)
def _term(kind, y, origin, shift):
    """One coordinate's part of the statistic (see the module docstring)."""
    if kind == LAPLACE_LOSS:
        a = abs(shift)
        u = y - origin if shift >= 0.0 else origin - y
        return min(max(2.0 * u - a, -a), a)
    return (y - origin) * shift


@jit(inline=True)
def _bin(grid, s):
    """Number of thresholds ``<= s``: the output lies in ``R_t`` for the first that many of them."""
    lo, hi = 0, grid.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if grid[mid] <= s:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit
def _rr_counts(stream, bit, flip_prob, n, counts):
    # counts[1] += reports of 1, counts[0] += reports of 0 (the grid is [0.5])
    gen = local_rng(stream)
    ones = 0
    for _ in range(n):
        if randomized_response(bit, gen, flip_prob):
            ones += 1
    release_rng(stream, gen)
    counts[0] += n - ones
    counts[1] += ones


class _Added(NamedTuple):
    """An additive mechanism's noise record: the output is the input plus its noise (:func:`~.mechanisms.add_noise`)."""

    noise: tuple


class _Released(NamedTuple):
    """A release record (:data:`~.mechanisms.LDP_MECHANISMS`): the output is the release of the input (:func:`~.mechanisms.release`)."""

    record: tuple


@by_record
def _output(mech, gen, work):
    """Overwrite ``work`` (the input) with one output of the mechanism, the kernels' own call."""


@_output.register(_Added)
def _output_added(mech, gen, work):
    add_noise(mech.noise, gen, work)


@_output.register(_Released)
def _output_released(mech, gen, work):
    release(mech.record, gen, work)


@jit
def _vector_counts(mech, stream, center, origin, shift, kind, grid, n, work, counts):
    # n outputs at center (the vector models' draw, or a release of a scaled gradient), binned by their statistic
    gen = local_rng(stream)
    d = work.shape[0]
    for _ in range(n):
        for j in range(d):
            work[j] = center[j]
        _output(mech, gen, work)
        s = 0.0
        for j in range(d):
            s += _term(kind, work[j], origin[j], shift[j])
        counts[_bin(grid, s)] += 1
    release_rng(stream, gen)


@jit
def _scalar_counts(noise, stream, center, origin, shift, kind, grid, n, counts):
    # n outputs center + draw_noise (the scalar models' draw)
    gen = local_rng(stream)
    for _ in range(n):
        y = center + draw_noise(noise, gen)
        counts[_bin(grid, _term(kind, y, origin, shift))] += 1
    release_rng(stream, gen)


@jit
def _step_counts(stream, sigma1, center, origin, shift, grid, n, work, counts):
    # n outputs of one DP-SGD step's release: the clipped mean gradient plus gaussian_or_zero per coordinate
    gen = local_rng(stream)
    d = work.shape[0]
    for _ in range(n):
        s = 0.0
        for j in range(d):
            work[j] = center[j] + gaussian_or_zero(gen, sigma1)
            s += _term(LINEAR, work[j], origin[j], shift[j])
        counts[_bin(grid, s)] += 1
    release_rng(stream, gen)


#: Draws a counting kernel makes per call (a fraction of a second): Ctrl-C stops an audit of 1e10 draws in between.
AUDIT_CHUNK = 1 << 22


def _in_chunks(n: int, draw) -> None:
    """``draw(size)`` for sizes adding up to ``n``, :data:`AUDIT_CHUNK` at a time.

    The stream goes on from call to call and the counts add up, so the
    counts are those of one call of ``n`` draws; between calls the
    interpreter gets the Ctrl-C that a kernel of minutes would hold off.
    """
    done = 0
    while done < n:
        size = min(AUDIT_CHUNK, n - done)
        draw(size)
        done += size


# --- plain-Python twins (tests require the same counts from the same stream) ---------------


def _rr_counts_twin(gen, bit, flip_prob, n, counts):
    ones = sum(1 for _ in range(n) if randomized_response.py_func(bit, gen, flip_prob))
    counts[0] += n - ones
    counts[1] += ones


def _vector_counts_twin(mech, gen, center, origin, shift, kind, grid, n, work, counts):
    for _ in range(n):
        work[:] = center
        _output(mech, gen, work)
        s = 0.0
        for j in range(work.shape[0]):
            s += _term.py_func(kind, work[j], origin[j], shift[j])
        counts[_bin.py_func(grid, s)] += 1


def _scalar_counts_twin(noise, gen, center, origin, shift, kind, grid, n, counts):
    for _ in range(n):
        y = center + draw_noise(noise, gen)
        counts[_bin.py_func(grid, _term.py_func(kind, y, origin, shift))] += 1


def _step_counts_twin(gen, sigma1, center, origin, shift, grid, n, work, counts):
    for _ in range(n):
        s = 0.0
        for j in range(work.shape[0]):
            work[j] = center[j] + gaussian_or_zero.py_func(gen, sigma1)
            s += _term.py_func(LINEAR, work[j], origin[j], shift[j])
        counts[_bin.py_func(grid, s)] += 1


# --- probes: a mechanism at a pair of inputs ------------------------------------------
# A probe has grid(), the thresholds (fixed before any draw), and counts(stream, which, n, grid, twin):
# n outputs at input `which` (0: x, 1: x') binned by their statistic (len(grid) + 1 bins), drawn from
# stream = kernel_rng(gen) by the jitted loop, or from gen itself by the plain-Python twin (twin=True).


def _pair(inputs) -> tuple[np.ndarray, np.ndarray]:
    x0, x1 = (np.atleast_1d(np.asarray(x, dtype=float)) for x in inputs)
    if x0.shape != x1.shape or x0.ndim != 1:
        raise ValueError(f"the two inputs must be 1-D arrays of one shape, got {x0.shape} and {x1.shape}")
    if not (np.isfinite(x0).all() and np.isfinite(x1).all()) or np.array_equal(x0, x1):
        raise ValueError("the two inputs must be finite and differ")
    return x0, x1


@dataclass(frozen=True)
class RandomizedResponseProbe:
    """Randomized response (:func:`~.mechanisms.randomized_response`) at the bits 0 and 1."""

    flip_prob: float

    def grid(self) -> np.ndarray:
        """The one threshold: the statistic is the reported bit."""
        return np.array([0.5])

    def counts(self, stream, which: int, n: int, grid: np.ndarray, twin: bool = False) -> np.ndarray:
        """Reports of ``n`` draws at the bit ``which``: ``[zeros, ones]``."""
        out = np.zeros(grid.shape[0] + 1, dtype=np.int64)
        kernel = _rr_counts_twin if twin else _rr_counts
        _in_chunks(int(n), lambda size: kernel(stream, bool(which), float(self.flip_prob), size, out))
        return out


@dataclass(frozen=True)
class AdditiveProbe:
    """Noise from a kernel record added to one of two inputs (``which = 0`` or ``1``).

    Parameters
    ----------
    record : NamedTuple
        A noise record of :mod:`.mechanisms` or :mod:`.online`.
    inputs : pair of array_like
        The neighbouring inputs ``x`` and ``x'`` (gradients).
    statistic : {'laplace', 'linear'}
        The likelihood ratio of Laplace or of Gaussian noise.
    sd : float
        The largest standard deviation of one coordinate's noise (sets the
        grid of the ``linear`` statistic).
    scalar : bool
        Draw through :func:`~.mechanisms.draw_noise` (the scalar models)
        instead of :func:`~.mechanisms.add_noise`; the inputs have one coordinate.
    """

    record: object
    inputs: tuple
    statistic: str
    sd: float = 0.0
    scalar: bool = False

    def __post_init__(self):
        x0, x1 = _pair(self.inputs)
        object.__setattr__(self, "inputs", (x0, x1))
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {self.statistic!r}")
        if self.scalar and x0.shape[0] != 1:
            raise ValueError(f"a scalar draw needs inputs of one coordinate, got {x0.shape[0]}")

    def grid(self) -> np.ndarray:
        """Thresholds of the statistic (:func:`statistic_grid`)."""
        x0, x1 = self.inputs
        return statistic_grid(self.statistic, x1 - x0, self.sd)

    def counts(self, stream, which: int, n: int, grid: np.ndarray, twin: bool = False) -> np.ndarray:
        """Binned statistics of ``n`` outputs at input ``which`` (see the comment above the probes)."""
        x0, x1 = self.inputs
        out = np.zeros(grid.shape[0] + 1, dtype=np.int64)
        center = x1 if which else x0
        kind = STATISTICS[self.statistic]
        if self.scalar:
            kernel = _scalar_counts_twin if twin else _scalar_counts
            _in_chunks(int(n), lambda size: kernel(self.record, stream, float(center[0]), float(x0[0]),
                                                   float(x1[0] - x0[0]), kind, grid, size, out))
        else:
            kernel, work = (_vector_counts_twin if twin else _vector_counts), np.zeros_like(x0)
            _in_chunks(int(n), lambda size: kernel(_Added(self.record), stream, center, x0, x1 - x0, kind, grid, size,
                                                   work, out))
        return out


@dataclass(frozen=True)
class StepProbe:
    """One DP-SGD step's release, ``g + N(0, sigma1^2 I)`` by :func:`~.mechanisms.gaussian_or_zero`, at two inputs."""

    sigma1: float
    inputs: tuple

    def __post_init__(self):
        object.__setattr__(self, "inputs", _pair(self.inputs))
        if not (self.sigma1 > 0 and math.isfinite(self.sigma1)):
            raise ValueError(f"sigma1 must be finite and > 0, got {self.sigma1}")

    def grid(self) -> np.ndarray:
        """Thresholds of the Gaussian likelihood ratio (:func:`statistic_grid`)."""
        x0, x1 = self.inputs
        return statistic_grid("linear", x1 - x0, self.sigma1)

    def counts(self, stream, which: int, n: int, grid: np.ndarray, twin: bool = False) -> np.ndarray:
        """Binned statistics of ``n`` outputs at input ``which`` (see the comment above the probes)."""
        x0, x1 = self.inputs
        out = np.zeros(grid.shape[0] + 1, dtype=np.int64)
        kernel, work = (_step_counts_twin if twin else _step_counts), np.zeros_like(x0)
        _in_chunks(int(n), lambda size: kernel(stream, float(self.sigma1), x1 if which else x0, x0, x1 - x0, grid,
                                               size, work, out))
        return out


@dataclass(frozen=True)
class ReleaseProbe:
    """A release (:func:`~.mechanisms.release`) at two scaled gradients in ``[-1, 1]^d``.

    The statistic is linear, ``(y - x)'(x' - x)``; for the 1-D mechanisms at
    ``x = -1``, ``x' = 1`` it is increasing in the output, whose density
    ratio between the two inputs is monotone, so a threshold test is the most
    powerful one. Its outputs are bounded (``|y_j| <= output_bound[j]``):
    the grid spans the statistic's range, with ``points`` (outputs where the
    density ratio jumps, such as PM's ``+-1``) added.

    Parameters
    ----------
    record : NamedTuple
        The mechanism's release record (``BoundedMechanism.record()``).
    inputs : pair of array_like
        The two scaled gradients.
    output_bound : array_like
        Per-coordinate bound of the release.
    points : sequence of float
        Statistic values added to the grid.
    """

    record: object
    inputs: tuple
    output_bound: tuple
    points: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "inputs", _pair(self.inputs))

    def grid(self) -> np.ndarray:
        """Thresholds over the statistic's range plus :attr:`points`."""
        x0, x1 = self.inputs
        shift, top = x1 - x0, np.asarray(self.output_bound, dtype=float)
        ends = np.array([(-top - x0) * shift, (top - x0) * shift])
        lo, hi = float(ends.min(axis=0).sum()), float(ends.max(axis=0).sum())
        return np.unique(np.concatenate([np.linspace(lo, hi, GRID_SIZE), np.asarray(self.points, dtype=float)]))

    def counts(self, stream, which: int, n: int, grid: np.ndarray, twin: bool = False) -> np.ndarray:
        """Binned statistics of ``n`` outputs at input ``which`` (see the comment above the probes)."""
        x0, x1 = self.inputs
        out = np.zeros(grid.shape[0] + 1, dtype=np.int64)
        kernel, work = (_vector_counts_twin if twin else _vector_counts), np.zeros_like(x0)
        _in_chunks(int(n), lambda size: kernel(_Released(self.record), stream, x1 if which else x0, x0, x1 - x0,
                                               LINEAR, grid, size, work, out))
        return out


def statistic_grid(statistic: str, shift, sd: float = 0.0, size: int | None = None) -> np.ndarray:
    """Thresholds for a statistic at the shift ``v = x' - x``, fixed before any draw.

    ``laplace``: ``size`` points spanning ``[-||v||_1, ||v||_1]``, pulled in
    by a relative 1e-9 so that the first and last isolate the two atoms
    ``+-||v||_1``. ``linear``: ``v'(y - x)`` is ``N(0, sd^2 ||v||^2)`` at ``x``
    and ``N(||v||^2, sd^2 ||v||^2)`` at ``x'``: points from 10 SDs below the
    first mean to 10 above the second.
    """
    size = GRID_SIZE if size is None else int(size)
    v = np.asarray(shift, dtype=float)
    if statistic == "laplace":
        top = float(np.abs(v).sum()) * (1.0 - 1e-9)
        return np.linspace(-top, top, size)
    if not sd > 0:
        raise ValueError(f"the linear statistic's grid needs the noise sd > 0, got {sd}")
    norm2 = float(v @ v)
    width = 10.0 * sd * math.sqrt(norm2)
    return np.linspace(-width, norm2 + width, size)


# --- Clopper-Pearson and the bounds -------------------------------------------------


def cp_upper(k, n, a: float) -> np.ndarray:
    """One-sided ``1 - a`` upper Clopper-Pearson bound of a proportion: ``k`` successes of ``n``."""
    k = np.asarray(k, dtype=float)
    out = np.ones_like(k)
    inside = k < n
    out[inside] = stats.beta.ppf(1.0 - a, k[inside] + 1.0, n - k[inside])
    return out


def cp_lower(k, n, a: float) -> np.ndarray:
    """One-sided ``1 - a`` lower Clopper-Pearson bound of a proportion."""
    k = np.asarray(k, dtype=float)
    out = np.zeros_like(k)
    inside = k > 0
    out[inside] = stats.beta.ppf(a, k[inside], n - k[inside] + 1.0)
    return out


def _tails(counts: np.ndarray) -> np.ndarray:
    """``tail[k]``: outputs with statistic ``>= grid[k]``, from the counts per bin (``len(grid) + 1`` bins)."""
    return np.cumsum(counts[::-1])[::-1][1:]


def lower_bounds(claim: Claim, counts0: np.ndarray, counts1: np.ndarray, alpha: float) -> np.ndarray:
    """The lower bound of every test: shape ``(2, len(grid))`` (tests "x' if s >= t" and "x if s < t").

    ``nan`` where a test gives no bound (``1 - delta - FNR <= 0``). For a
    ``gdp`` claim the two rows agree (the bound is symmetric in FPR and FNR).
    """
    n0, n1 = int(counts0.sum()), int(counts1.sum())
    t0, t1 = _tails(counts0), _tails(counts1)  # at x, x': outputs in R_t = {s >= t}
    a = alpha / 2.0
    if claim.kind == "gdp":
        fpr_hi, fnr_hi = cp_upper(t0, n0, a), cp_upper(n1 - t1, n1, a)
        mu = stats.norm.isf(fpr_hi) - stats.norm.ppf(fnr_hi)
        return np.vstack([mu, mu])
    out = np.full((2, t0.shape[0]), np.nan)
    for row, (hit, miss, n_hit, n_miss) in enumerate([(t1, t0, n1, n0), (n0 - t0, n1 - t1, n0, n1)]):
        # row 0: R at x' (power) against R at x (FPR); row 1: the complement, x and x' swapped
        num = cp_lower(hit, n_hit, a) - claim.delta
        den = cp_upper(miss, n_miss, a)
        ok = num > 0
        out[row, ok] = np.log(num[ok] / den[ok])
    return out


def point_estimates(claim: Claim, counts0: np.ndarray, counts1: np.ndarray) -> np.ndarray:
    """The bounds of :func:`lower_bounds` at the observed proportions (no confidence), same shape."""
    n0, n1 = int(counts0.sum()), int(counts1.sum())
    p0, p1 = _tails(counts0) / n0, _tails(counts1) / n1
    with np.errstate(divide="ignore", invalid="ignore"):
        if claim.kind == "gdp":
            mu = stats.norm.isf(p0) - stats.norm.ppf(1.0 - p1)
            return np.vstack([mu, mu])
        return np.vstack([np.log((p1 - claim.delta) / p0), np.log((1.0 - p0 - claim.delta) / (1.0 - p1))])


# --- the audit ------------------------------------------------------------------


@dataclass(frozen=True)
class AuditCase:
    """One row of the audit: a mechanism at a worst-case pair and what the code claims for it.

    Parameters
    ----------
    name : str
        The mechanism and where the kernels use it (the table's first column;
        also the identity of its random streams unless ``streams`` is given).
    claim : Claim
    probe : RandomizedResponseProbe, AdditiveProbe or StepProbe
    exact : float, optional
        The mechanism's true epsilon at the claim's delta (or its true mu),
        where known: what a test with unlimited draws would approach.
    why : str
        Why the pair is the worst case.
    streams : str, optional
        The identity of the case's random streams when it is not ``name``:
        a case relabelled keeps the draws (and the published numbers) it had.
    """

    name: str
    claim: Claim
    probe: object
    exact: float | None = None
    why: str = ""
    streams: str | None = None


@dataclass(frozen=True)
class AuditResult:
    """What :func:`run_audit` measured for one case."""

    case: AuditCase
    draws: int  # per input, both halves
    alpha: float
    lower_bound: float  # the evaluation half's bound, >= 0
    estimate: float  # the same test's point estimate on the evaluation half
    selection_bound: float  # the best bound on the selection half (not a valid bound: chosen there)
    threshold: float
    test: str  # "x' if s >= t" or "x if s < t"
    seconds: float
    counts: dict = field(repr=False, default_factory=dict)

    @property
    def ratio(self) -> float:
        """Lower bound over the claimed epsilon (or mu)."""
        return self.lower_bound / self.case.claim.value


TESTS = ("x' if s >= t", "x if s < t")


def run_audit(case: AuditCase, draws: int, seed: int, alpha: float = 0.05) -> AuditResult:
    """Audit one case with ``draws`` outputs at each of its two inputs (half to choose the test, half to bound).

    Parameters
    ----------
    case : AuditCase
    draws : int
        Outputs per input, ``>= 2``; the selection half is ``draws // 2``.
    seed : int
        Root seed. The stream of input ``w`` (0 or 1) in half ``h`` (0:
        selection, 1: evaluation) is ``SeedSequence(seed, spawn_key=(key, 2 h + w))``
        with ``key`` the CRC-32 of the case's ``streams`` (else its name), so
        a case's numbers do not depend on which other cases run.
    alpha : float
        The bound holds with probability at least ``1 - alpha``.

    Returns
    -------
    AuditResult
    """
    draws = int(draws)
    if draws < 2:
        raise ValueError(f"draws must be >= 2, got {draws}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    start = time.perf_counter()
    key = zlib.crc32((case.streams or case.name).encode())
    grid = case.probe.grid()
    sizes = (draws // 2, draws - draws // 2)
    counts = {}
    for half, size in enumerate(sizes):
        for which in (0, 1):
            gen = replication_generator(seed, key, 2 * half + which)
            counts[half, which] = case.probe.counts(kernel_rng(gen), which, size, grid)
    selection = lower_bounds(case.claim, counts[0, 0], counts[0, 1], alpha)
    if np.isnan(selection).all():
        row, k = 0, grid.shape[0] // 2
    else:
        row, k = np.unravel_index(np.nanargmax(selection), selection.shape)
    bound = lower_bounds(case.claim, counts[1, 0], counts[1, 1], alpha)[row, k]
    estimate = point_estimates(case.claim, counts[1, 0], counts[1, 1])[row, k]
    return AuditResult(case, draws, alpha, float(max(bound, 0.0)) if np.isfinite(bound) else 0.0, float(estimate),
                       float(np.nan_to_num(selection[row, k], nan=0.0)), float(grid[k]), TESTS[row],
                       time.perf_counter() - start, counts)


def format_number(x, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, ``-`` for None or a non-finite number."""
    return "-" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def table_rows(results) -> list[list[str]]:
    """Rows of the audit table: mechanism, claim, lower bound, ratio, exact, draws per input, seconds."""
    rows = []
    for r in results:
        c = r.case
        rows.append([c.name, c.claim.text, format_number(r.lower_bound), f"{r.ratio:.3f}",
                     format_number(c.exact), f"{r.draws:.0e}".replace("e+0", "e").replace("e+", "e"), f"{r.seconds:.1f}"])
    return rows


#: Header of :func:`table_rows`.
TABLE_HEAD = ["mechanism (where)", "claim", "lower bound (95%)", "bound / claim", "exact", "draws per input", "s"]


__all__ = ["AdditiveProbe", "AuditCase", "AuditResult", "CLAIMS", "Claim", "GRID_SIZE", "RandomizedResponseProbe",
           "STATISTICS", "StepProbe", "TABLE_HEAD", "TESTS", "cp_lower", "cp_upper", "lower_bounds",
           "point_estimates", "run_audit", "statistic_grid", "table_rows"]
