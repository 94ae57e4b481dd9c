"""Critical values of the random-scaling (self-normalised) interval.

The statistic ``W(1) / sqrt(int_0^1 (W(r) - r W(1))^2 dr)`` (Abadir & Paruolo
1997; Lee, Liao, Seo & Shin 2022) has ``W(1)`` independent of the Brownian
bridge ``W(r) - r W(1)``, and the bridge integral ``Q`` has Laplace transform
``E exp(-s Q) = (sqrt(2s) / sinh sqrt(2s))^(1/2)``. Hence
``Y = W(1)^2 - c^2 Q`` has characteristic function

    phi(t) = (1 - 2it)^(-1/2) * (w / sinh w)^(1/2),   w = sqrt(2 i t c^2),

and the two-sided coverage ``P(|T| <= c) = P(Y <= 0)`` follows from the
Gil-Pelaez inversion ``P(Y <= 0) = 1/2 - (1/pi) int_0^inf Im phi(t) / t dt``,
integrated over ``u = sqrt(t)`` where the integrand decays like ``exp(-c u / 2)``.
Published values: 80% 3.875, 90% 5.323, 95% 6.747 (Abadir & Paruolo 1997);
this computes 3.87488, 5.32268, 6.74730 and, for 99%, 10.01727.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=256)
def normal_quantile(level: float) -> float:
    """``z`` with ``P(|Z| <= z) = level`` for standard normal ``Z`` (cached: scipy takes 0.2 ms a call)."""
    from scipy import special  # scipy.stats.norm.ppf's own function, without scipy.stats' import (0.4 s)

    return float(special.ndtri(0.5 + level / 2.0))


def _char_fn(t: np.ndarray | float, c: float) -> complex:
    w = np.sqrt(2j * t * c * c)
    # log sinh w = w + log(1 - e^{-2w}) - log 2, stable and branch-free for Re w > 0
    log_sinh = w + np.log1p(-np.exp(-2.0 * w)) - np.log(2.0)
    return np.exp(-0.5 * np.log(1.0 - 2j * t) + 0.5 * (np.log(w) - log_sinh))


def random_scaling_coverage(c: float) -> float:
    """``P(|W(1)| / sqrt(int (W(r) - r W(1))^2 dr) <= c)``.

    Parameters
    ----------
    c : float
        Critical value, ``> 0``.

    Returns
    -------
    float
        Two-sided coverage of ``[-c, c]``.
    """
    from scipy import integrate  # lazy: import ldpsim <= 1 s (issue 41)

    def integrand(u):
        return 2.0 * _char_fn(u * u, c).imag / u

    # exp(-c u / 2) < 1e-19 beyond u = 90 / c
    value, _ = integrate.quad(integrand, 0.0, 90.0 / c, limit=400, epsabs=1e-13, epsrel=1e-12)
    return 0.5 - value / np.pi


#: :func:`random_scaling_critical_value` at the levels the configs use, as this module computes them
#: (tests/test_inference.py recomputes each): a run at these levels imports neither scipy.optimize nor
#: scipy.integrate and solves nothing (0.3 s of a two-second run), and gets the same value on every
#: platform (the quadrature's last bits could differ on another libm).
_RS_COMPUTED = {
    0.8: float.fromhex("0x1.effc1c1c4acb5p+1"),  # 3.87488
    0.9: float.fromhex("0x1.54a6c998f6a6cp+2"),  # 5.32268
    0.95: float.fromhex("0x1.afd3cc39c83d6p+2"),  # 6.74730
    0.99: float.fromhex("0x1.408d73a84e39fp+3"),  # 10.01727
}


@lru_cache(maxsize=64)
def random_scaling_critical_value(level: float) -> float:
    """Two-sided critical value of the random-scaling interval at ``level``.

    Parameters
    ----------
    level : float
        Coverage level in [0.05, 0.9999].

    Returns
    -------
    float
        ``c`` with ``P(|T| <= c) = level``; 5.3227 at level 0.9.

    Raises
    ------
    ValueError
        If ``level`` is outside [0.05, 0.9999], where the inversion is not
        checked.
    """
    if not 0.05 <= level <= 0.9999:
        raise ValueError(f"level = {level} is outside [0.05, 0.9999], where SN critical values are computed")
    if level in _RS_COMPUTED:
        return _RS_COMPUTED[level]
    return _solve_critical_value(level)


def _solve_critical_value(level: float) -> float:
    from scipy import optimize

    return optimize.brentq(lambda c: random_scaling_coverage(c) - level, 0.1, 40.0, xtol=1e-12)
