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
  compose ``c`` such instances;
* :func:`pld_epsilon`: the numerical composition of Laplace mechanisms and
  of arbitrary pure-DP mechanisms by the privacy loss distribution (PLD)
  of Google's ``dp-accounting`` (Koskela et al. 2020; Doroshenko et al.
  2022), a valid upper bound at every ``delta`` and much tighter than
  Theorem 3.20 (:func:`laplace_pld`, :func:`pure_dp_pld`);
* :func:`tightest`: the smallest of several epsilons, each valid at the same
  delta, is valid there (the mechanism is (epsilon_i, delta)-DP for each i).

Reference: C. Dwork and A. Roth, *The Algorithmic Foundations of Differential
Privacy*, Found. Trends Theor. Comput. Sci. 9 (2014).
"""

from __future__ import annotations

import functools
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


# --- numerical composition: the privacy loss distribution -----------------------------

#: Grid points of the privacy loss per epsilon0 of the smallest mechanism composed (dp-accounting's
#: value_discretization_interval = min epsilon0 / points): epsilon within 1e-5 relative of a grid 8 times
#: finer (measured at 1e4 compositions), in half a second. The cost grows with the number composed times
#: the points, so beyond 1e4 compositions the points fall as 1 / sqrt(count), to 2 at the least (at 1e6
#: compositions: 5 points, 2.5 s, epsilon within 2e-6 relative of 10 points).
PLD_POINTS = 50
#: Compositions beyond which no PLD is computed (``nan``: the other accountants still state a guarantee).
PLD_MAX_COMPOSITIONS = 10**6


def _points(count: int) -> int:
    """Grid points per epsilon0 for a composition of ``count`` mechanisms."""
    return max(2, min(PLD_POINTS, round(PLD_POINTS * math.sqrt(1e4 / max(count, 1)))))


def _pld_module():
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution


def laplace_pld(epsilon0: float, interval: float):
    """The PLD of a Laplace mechanism ``epsilon0 = D / b``, in any dimension, on dp-accounting's grid ``interval``.

    dp-accounting's ``from_laplace_mechanism(b, D)`` is the pair ``Lap(0, b)``
    vs ``Lap(D, b)`` in one dimension (pessimistic connect-the-dots
    discretization: an upper bound on every hockey-stick divergence). It
    covers i.i.d. ``Lap(b)`` noise on a vector whose l1 sensitivity is ``D``
    under any neighbouring relation whose pairs lie at l1 distance at most
    ``D`` (replace-one: ``D`` is the replace-one sensitivity): a shift
    ``v = (v_1, ..., v_d)`` can be walked one coordinate at a time, and
    chaining the optimal tests along the walk (Dong, Roth & Su 2022, the
    argument of Theorem 2.14, group privacy) bounds its trade-off function
    below by the composition of the one-dimensional power functions, which
    for the Laplace location family (monotone likelihood ratio: threshold
    tests are optimal) is exactly the one-dimensional trade-off function at
    the shift ``||v||_1 <= D``. So the 1-D pair dominates the d-dimensional
    mechanism (checked numerically in tests/test_composition.py). The pair
    is symmetric, so add and remove directions agree.
    """
    _check_epsilon0(epsilon0)
    return _pld_module().from_laplace_mechanism(1.0, sensitivity=float(epsilon0),
                                                value_discretization_interval=interval)


def pure_dp_pld(epsilon0: float, interval: float):
    """The PLD of the dominating pair of every ``epsilon0``-DP mechanism, on dp-accounting's grid ``interval``.

    Randomized response on a bit, ``(e^eps, 1) / (1 + e^eps)`` against its
    reverse, dominates every eps-DP mechanism (Kairouz, Oh & Viswanath 2015;
    its composition is their optimal composition theorem); AboveThreshold
    included. dp-accounting's ``from_privacy_parameters`` builds it with the
    values ``+-eps`` rounded up to the grid, which on a grid that does not
    hold ``eps`` exactly rounds ``-eps`` up and ``+eps`` up unequally and
    shifts the composition's mean (at ``k = 5000`` by 1% of epsilon). Here
    ``eps`` is rounded up to the nearest grid point ``N interval >= epsilon0``
    and the pair of that ``eps``, itself a dominating pair of every
    ``epsilon0``-DP mechanism, is placed on ``+-N`` exactly.
    """
    _check_epsilon0(epsilon0)
    steps = max(1, math.ceil(epsilon0 / interval - 1e-9))
    while steps * interval < epsilon0:  # rounding of the division: step up, never down
        steps += 1
    eps = steps * interval
    pld = _pld_module().PrivacyLossDistribution
    return pld.create_from_rounded_probability({steps: 1.0 / (1.0 + math.exp(-eps)), -steps: 1.0 / (1.0 + math.exp(eps))},
                                               0.0, interval)


@functools.lru_cache(maxsize=64)
def _composed(laplace: tuple, pure: tuple):
    """The PLD of the composition (cached: a study asks again at another delta)."""
    smallest = min(e for e, k in laplace + pure if k > 0)
    points = _points(sum(k for _, k in laplace + pure))
    interval = smallest / points
    while points * interval < smallest:  # the smallest epsilon0 on the grid exactly, not a point above it
        interval = math.nextafter(interval, math.inf)
    total = None
    for build, parts in ((laplace_pld, laplace), (pure_dp_pld, pure)):
        for epsilon0, count in parts:
            if count == 0:
                continue
            pld = build(epsilon0, interval).self_compose(count)
            total = pld if total is None else total.compose(pld)
    return total


def pld_epsilon(delta: float, laplace=(), pure=()) -> float:
    """epsilon at ``delta`` of the adaptive composition of Laplace and pure-DP mechanisms, by PLD.

    Parameters
    ----------
    delta : float
        In (0, 1).
    laplace : sequence of (epsilon0, count)
        ``count`` Laplace mechanisms of ``epsilon0 = D / b`` each
        (:func:`laplace_pld`).
    pure : sequence of (epsilon0, count)
        ``count`` mechanisms known only to be ``epsilon0``-DP
        (:func:`pure_dp_pld`).

    Returns
    -------
    float
        dp-accounting's ``get_epsilon_for_delta`` of the composed pessimistic
        PLD: a valid upper bound (up to floating point), on a grid of
        ``min epsilon0 / PLD_POINTS`` (fewer points beyond 1e4 compositions).
        0 if nothing is composed; ``nan`` (not computed) beyond
        ``PLD_MAX_COMPOSITIONS``.

    Notes
    -----
    Dominating pairs compose under adaptive composition (Zhu, Dong & Wang
    2022, Theorem 10), so the composition of the pairs above covers mechanisms
    chosen adaptively, and a number of mechanisms that stops at a data-dependent
    point up to ``count`` (pad with mechanisms that release nothing).
    """
    _check_delta("delta", delta)
    laplace = tuple((float(e), _check_k(k)) for e, k in laplace)
    pure = tuple((float(e), _check_k(k)) for e, k in pure)
    if not any(k > 0 and e > 0 for e, k in laplace + pure):
        return 0.0
    laplace = tuple((e, k) for e, k in laplace if e > 0)
    pure = tuple((e, k) for e, k in pure if e > 0)
    if sum(k for _, k in laplace + pure) > PLD_MAX_COMPOSITIONS:
        return math.nan
    return float(_composed(laplace, pure).get_epsilon_for_delta(delta))


def tightest(epsilons: dict) -> tuple[str, float]:
    """The smallest of ``{accountant: epsilon}``, each valid at one and the same delta: ``(accountant, epsilon)``.

    If a mechanism is (epsilon_i, delta)-DP for every i, it is
    (min_i epsilon_i, delta)-DP: the minimum is valid when every figure is a
    valid bound at that delta (never mix figures at different deltas, nor an
    approximation such as the CLT's). Non-finite figures are skipped.
    """
    finite = {name: float(e) for name, e in epsilons.items() if e is not None and math.isfinite(e)}
    if not finite:
        return "none", math.inf
    name = min(finite, key=finite.get)
    return name, finite[name]


__all__ = ["MAX_EXP", "PLD_MAX_COMPOSITIONS", "PLD_POINTS", "above_threshold_epsilon", "advanced_composition", "basic_composition",
           "composition_epsilon", "laplace_epsilon", "laplace_pld", "pld_epsilon", "pure_dp_pld", "tightest"]
