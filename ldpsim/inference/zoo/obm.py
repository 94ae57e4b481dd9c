"""Fully online batch means (Zhu, Chen & Wu 2023, JASA): the covariance of theta_bar from the iterates, O(d^2) state.

Batches start at ``a_m = floor(C m^beta)``, ``m = 1, 2, ...`` (``C = 1``,
``beta = 2 / (1 - gamma)`` by default, ``gamma`` the step exponent). Iterate
``i`` belongs to the batch that started last, at ``t_i <= i``; it contributes the
partial sum ``W_i = theta_{t_i} + ... + theta_i`` of its batch so far, of length
``l_i = i - t_i + 1``, and

    Sigma_n = sum_i (W_i - l_i theta_bar_n)(W_i - l_i theta_bar_n)' / sum_i l_i,

which streams as ``V = sum W_i W_i'``, ``P = sum l_i W_i``, ``q = sum l_i^2`` and
``v = sum l_i``: ``Sigma_n = (V - P theta_bar' - theta_bar P' + q theta_bar theta_bar') / v``.
The interval is ``theta_bar +- z sqrt(Sigma_jj / n)``.

The sums ``V`` and ``q theta_bar theta_bar'`` grow like ``n l^2 theta^2`` and
cancel to ``n l Sigma``; so the iterates are taken relative to a reference
``ref`` that moves to the running mean at every power of two
(:func:`obm_recentre`, the same recentring as the random-scaling sums of
``ldpsim.recursion.kernels``), which the sums follow exactly:
``W -> W - l delta``, ``P -> P - q delta``, ``V -> V - P delta' - delta P' + q delta delta'``.

State of one replication: ``vec`` ``(4, d)`` with rows :data:`REF`, :data:`W`,
:data:`P`, :data:`YSUM` (the sum of ``theta_i - ref``), ``mat`` ``(d, d)``
holding ``V`` in its upper triangle, ``sc`` ``(3,)`` with ``l, q, v``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...engine.errors import ConfigError
from ...engine.dialect.jit import jit
from ..streaming import robust_floor
from .common import symmetric_from_upper

#: Rows of the ``(4, d)`` vector state.
REF, W, P, YSUM = 0, 1, 2, 3
#: Entries of the ``(3,)`` scalar state: the open batch's length so far, ``sum l_i^2``, ``sum l_i``.
LEN, SUM_L2, SUM_L = 0, 1, 2


#: Most values of m for which the batch start ``floor(C m^beta)`` is computed (a million: a second in Python).
OBM_MAX_M = 1e6


def obm_batch_starts(n: int, gamma: float, constant: float = 1.0, exponent: float | None = None) -> np.ndarray:
    """First iterate (1-based) of each batch: ``floor(C m^beta)`` for ``m = 1, 2, ...`` up to ``n``.

    ``beta = 2 / (1 - gamma)`` unless ``exponent`` is given. The first batch
    starts at 1 whatever ``C`` (an iterate before ``a_1`` has no batch
    otherwise); repeated starts (``C < 1``) are dropped.

    Returns
    -------
    numpy.ndarray
        Strictly increasing ``int64``, first element 1, all ``<= n``.
    """
    if not 0.0 < gamma < 1.0:
        raise ConfigError(f"gamma = {gamma} is not in (0, 1), where OBM's batch sequence is defined")
    beta = 2.0 / (1.0 - gamma) if exponent is None else float(exponent)
    if beta <= 1.0 or constant <= 0.0:
        raise ConfigError(f"OBM's batch sequence needs obm_exponent > 1 and obm_constant > 0, got {beta} and {constant}")
    # the schedule is listed for m = 1, 2, ... until C m^beta passes n: refuse a C so small that this takes
    # more than OBM_MAX_M steps (obm_constant = 1e-300 would take 1e76 of them), in closed form, before any work
    log_m = (math.log(n + 1.0) - math.log(constant)) / beta
    if log_m > math.log(OBM_MAX_M):
        least = math.exp(math.log(n + 1.0) - beta * math.log(OBM_MAX_M))  # (n + 1) / M^beta, M^beta may overflow
        raise ConfigError(f"obm_constant = {constant:g} is too small for n = {n} and gamma = {gamma}: OBM's "
                          f"batches start at floor(obm_constant m^{beta:.3g}), which reaches n only at "
                          f"m = {math.exp(log_m):.3g} (at most {OBM_MAX_M:.0e} allowed); use obm_constant >= "
                          f"{least:.3g}")
    starts = [1]
    m = 1
    while True:
        try:
            value = constant * float(m) ** beta
        except OverflowError:  # m^beta beyond a double (gamma near 1): the batch starts beyond any n
            break
        if not value <= n + 1.0:  # (inf too)
            break
        a = robust_floor(value)
        if a > n:
            break
        if a > starts[-1]:
            starts.append(a)
        m += 1
    return np.array(starts, dtype=np.int64)


@dataclass(frozen=True)
class OBMLayout:
    """Where OBM's batches start for ``n`` steps.

    Attributes
    ----------
    n : int
        Steps.
    starts : numpy.ndarray
        ``int64``: the first iterate of each batch (:func:`obm_batch_starts`).
    """

    n: int
    starts: np.ndarray

    @classmethod
    def build(cls, n: int, gamma: float, constant: float = 1.0, exponent: float | None = None):
        """The layout for ``n`` steps of step exponent ``gamma``."""
        starts = obm_batch_starts(n, gamma, constant, exponent)
        if starts.shape[0] < 2:
            # the second batch starts at floor(C 2^beta) (or later, C < 1): say which keys put it beyond n
            beta = 2.0 / (1.0 - gamma) if exponent is None else float(exponent)
            log10 = math.log10(constant) + beta * math.log10(2.0)  # (2^beta overflows a double for gamma near 1)
            second = f"{10.0 ** log10:.3g}" if log10 < 300 else f"10^{log10:.0f}"
            raise ConfigError(f"n = {n} is too small for OBM with gamma = {gamma} and obm_constant = {constant:g}: one "
                              f"batch only (they start at floor(obm_constant m^(2 / (1 - gamma))), the second at {second}); "
                              "raise n, or lower gamma or obm_constant")
        return cls(int(n), starts)

    @property
    def batch_lengths(self) -> np.ndarray:
        """Iterates per batch (the last one possibly cut short by ``n``)."""
        return np.diff(self.starts, append=self.n + 1)


def obm_init(theta0: np.ndarray):
    """Zeroed state ``(vec, mat, sc)`` with ``ref = theta0``."""
    theta0 = np.asarray(theta0, dtype=float)
    vec = np.zeros((4, theta0.shape[0]))
    vec[REF] = theta0
    return vec, np.zeros((theta0.shape[0], theta0.shape[0])), np.zeros(3)


@jit(inline=True)
def obm_add(theta, new_batch, vec, mat, sc):
    """Add iterate ``theta_i`` (``(d,)``); ``new_batch`` says whether a batch starts at ``i``. In place.

    ``l`` restarts at 1 (``W = y``) or grows by one (``W += y``), ``y = theta - ref``;
    then ``YSUM += y``, ``P += l W``, ``V += W W'`` (upper triangle), ``q += l^2``, ``v += l``.
    """
    obm_add_d(theta, new_batch, vec, mat, sc, theta.shape[0])


@jit(inline=True)
def obm_add_d(theta, new_batch, vec, mat, sc, d):
    """:func:`obm_add` with the dimension ``d`` given (a constant 1 leaves no loop for LLVM to vectorize)."""
    if new_batch:
        length = 1.0
    else:
        length = sc[0] + 1.0
    sc[0] = length
    for a in range(d):
        y = theta[a] - vec[0, a]
        if new_batch:
            vec[1, a] = y
        else:
            vec[1, a] += y
        vec[3, a] += y
        vec[2, a] += length * vec[1, a]
    for a in range(d):
        wa = vec[1, a]
        for b in range(a, d):
            mat[a, b] += wa * vec[1, b]
    sc[1] += length * length
    sc[2] += length


@jit
def obm_recentre(vec, mat, sc, fi):
    """Move ``ref`` to the running mean after step ``fi = float(i)`` and carry the sums with it, in place.

    With ``delta = YSUM / fi``: ``V -> V - P delta' - delta P' + q delta delta'``,
    then ``P -> P - q delta``, ``W -> W - l delta``, ``ref -> ref + delta``, ``YSUM -> 0``.
    Returns whether every entry of ``V`` stayed finite (a diverging path does not).
    """
    d = vec.shape[1]
    q = sc[1]
    length = sc[0]
    finite = True
    for a in range(d):
        da = vec[3, a] / fi
        pa = vec[2, a]
        for b in range(a, d):
            db = vec[3, b] / fi
            mat[a, b] = ((mat[a, b] - pa * db) - da * vec[2, b]) + (q * da) * db
            finite = finite & np.isfinite(mat[a, b])
    for a in range(d):
        da = vec[3, a] / fi
        vec[2, a] -= q * da
        vec[1, a] -= length * da
        vec[0, a] += da
        vec[3, a] = 0.0
    return finite


def obm_sigma(vec: np.ndarray, mat: np.ndarray, sc: np.ndarray, n: int):
    """``(theta_bar, Sigma_n)`` from the state after ``n`` iterates; ``Sigma_n`` ``(d, d)`` symmetric.

    The same algebra as :func:`obm_recentre` with ``delta = YSUM / n``, on copies.
    """
    ybar = vec[YSUM] / float(n)
    q = sc[SUM_L2]
    upper = ((mat - vec[P][:, None] * ybar[None, :]) - ybar[:, None] * vec[P][None, :]) \
        + (q * ybar[:, None]) * ybar[None, :]
    return vec[REF] + ybar, symmetric_from_upper(upper) / sc[SUM_L]


def obm_state_size(d: int) -> int:
    """Floats OBM streams: ``ref, W, P, YSUM`` ``(4, d)``, ``V`` ``(d, d)``, ``l, q, v``."""
    return 4 * d + d * d + 3
