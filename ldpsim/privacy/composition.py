"""Composition of differentially private mechanisms, and the sparse vector technique's cost.

Pure functions of the privacy parameters (no randomness, no model):

* :func:`laplace_epsilon`: the Laplace mechanism, ``Lap(b)`` per coordinate
  on a query of l1 sensitivity ``D``, is ``D / b``-DP (Dwork & Roth 2014,
  Theorem 3.6);
* :func:`basic_composition`: ``k`` mechanisms that are ``(eps0, delta0)``-DP
  compose to ``(k eps0, k delta0)`` (Dwork & Roth, Theorem 3.16);
* :func:`advanced_composition`: and, for every ``delta' > 0``, to
  ``(sqrt(2 k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1), k delta0 + delta')``
  (Dwork & Roth, Theorem 3.20), the smaller of the two for large ``k``;
* :func:`composition_epsilon`: the smaller of both at the same ``delta'``
  (basic composition needs no ``delta'``, so it is valid there too);
* :func:`above_threshold_epsilon`: AboveThreshold (Dwork & Roth,
  Algorithm 1, Theorem 3.23) with threshold noise ``Lap(a)`` and query noise
  ``Lap(b)`` on queries of sensitivity ``D`` is ``(D / a + 2 D / b)``-DP until
  it answers "above" once; with ``a = 2 D / eps`` and ``b = 4 D / eps`` (the
  book's calibration) that is ``eps``. The sparse vector technique restarts
  it after each "above" answer (fresh threshold noise), so ``c`` answers
  compose ``c`` such instances.

Reference: C. Dwork and A. Roth, *The Algorithmic Foundations of Differential
Privacy*, Found. Trends Theor. Comput. Sci. 9 (2014).
"""

from __future__ import annotations

import math


#: Largest ``x`` with ``e^x`` a float.
MAX_EXP = math.log(2.0 ** 1023 * (2.0 - 2.0 ** -52))


def _check_epsilon0(epsilon0: float) -> None:
    if not (epsilon0 >= 0 and math.isfinite(epsilon0)):  # also catches nan
        raise ValueError(f"epsilon0 must be finite and >= 0, got {epsilon0}")


def _check_k(k) -> int:
    if isinstance(k, bool) or int(k) != k or k < 0:
        raise ValueError(f"k must be an integer >= 0, got {k}")
    return int(k)


def _check_delta(name: str, delta: float) -> None:
    if not 0.0 < delta < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {delta}")


def laplace_epsilon(sensitivity: float, scale: float) -> float:
    """``epsilon = sensitivity / scale`` of the Laplace mechanism (l1 sensitivity, ``Lap(scale)`` noise).

    Raises
    ------
    ValueError
        On a negative sensitivity or a non-positive scale.
    """
    if not sensitivity >= 0:
        raise ValueError(f"sensitivity must be >= 0, got {sensitivity}")
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    return float(sensitivity) / float(scale)


def basic_composition(epsilon0: float, k: int, delta0: float = 0.0) -> tuple[float, float]:
    """``(k epsilon0, k delta0)``: ``k`` mechanisms, each ``(epsilon0, delta0)``-DP (Dwork & Roth, Thm 3.16)."""
    _check_epsilon0(epsilon0)
    k = _check_k(k)
    return k * float(epsilon0), k * float(delta0)


def advanced_composition(epsilon0: float, k: int, delta_prime: float, delta0: float = 0.0) -> tuple[float, float]:
    """The ``k``-fold adaptive composition of ``(epsilon0, delta0)``-DP mechanisms (Dwork & Roth, Thm 3.20).

    Parameters
    ----------
    epsilon0 : float
        Privacy of each mechanism, ``>= 0``.
    k : int
        Number of mechanisms composed, ``>= 0``.
    delta_prime : float
        The slack ``delta'`` in ``(0, 1)`` the theorem trades for a smaller epsilon.
    delta0 : float
        The ``delta`` of each mechanism (0 for pure DP, e.g. Laplace).

    Returns
    -------
    epsilon, delta : float
        ``sqrt(2 k ln(1/delta')) epsilon0 + k epsilon0 (e^epsilon0 - 1)`` and
        ``k delta0 + delta'``. ``(0, delta')`` for ``k = 0``; an epsilon
        beyond the largest float is ``inf`` (the theorem then promises
        nothing a float can state; basic composition may still).
    """
    _check_epsilon0(epsilon0)
    k = _check_k(k)
    _check_delta("delta_prime", delta_prime)
    if k == 0:
        return 0.0, float(delta_prime)
    if epsilon0 > MAX_EXP:  # e^epsilon0 is not a float
        return math.inf, k * float(delta0) + float(delta_prime)
    eps = math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * epsilon0 + k * epsilon0 * math.expm1(epsilon0)
    return eps, k * float(delta0) + float(delta_prime)


def composition_epsilon(epsilon0: float, k: int, delta_prime: float) -> float:
    """The smaller epsilon of basic and advanced composition of ``k`` pure ``epsilon0``-DP mechanisms.

    Both hold at ``delta = delta'`` (basic composition even at ``delta = 0``),
    so their minimum is a valid epsilon for ``(epsilon, delta')``-DP.
    """
    return min(basic_composition(epsilon0, k)[0], advanced_composition(epsilon0, k, delta_prime)[0])


def above_threshold_epsilon(sensitivity: float, threshold_scale: float, query_scale: float) -> float:
    """Privacy of one AboveThreshold run (until its first "above" answer): ``D / a + 2 D / b``.

    Parameters
    ----------
    sensitivity : float
        ``D``, the sensitivity of every query (for a scalar query, its
        largest change between neighbouring data sets).
    threshold_scale : float
        ``a``: the threshold is perturbed once by ``Lap(a)``.
    query_scale : float
        ``b``: each query is perturbed by fresh ``Lap(b)``.

    Notes
    -----
    Dwork & Roth's proof of Theorem 3.23 pays ``D / a`` for shifting the
    threshold noise by ``D`` and ``2 D / b`` for shifting the noise of the
    one query answered "above" by ``2 D``; their ``a = 2 D / eps``,
    ``b = 4 D / eps`` give ``eps / 2 + eps / 2``. Thresholdout (Dwork et al.
    2015) uses ``a = 2 sigma``, ``b = 4 sigma``: ``D / sigma``.
    """
    if not sensitivity >= 0:
        raise ValueError(f"sensitivity must be >= 0, got {sensitivity}")
    if not (threshold_scale > 0 and query_scale > 0):
        raise ValueError(f"noise scales must be > 0, got {threshold_scale}, {query_scale}")
    return sensitivity / threshold_scale + 2.0 * sensitivity / query_scale


__all__ = ["MAX_EXP", "above_threshold_epsilon", "advanced_composition", "basic_composition", "composition_epsilon",
           "laplace_epsilon"]
