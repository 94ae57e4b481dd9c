"""Privacy of SAGD's oracles and the conditions of 001's Theorems 1 and 3, per setting.

Two readings side by side (docs/corrections.md, items 18-20):

* **as printed**: Lemma 2's statement ``sqrt(T ln(1/delta)) G1 / (n sigma)``,
  its proof's last line (``2 G1``), Lemma 3's ``sqrt(C_s ln(2/delta)) 2 G1 / (n sigma)``,
  and the ranges of T (Theorem 1) and C_s (Theorem 3) as printed;
* **derived**: the replace-one l1 sensitivity of a mean gradient over ``m``
  points is ``2 G1 / m``, so one DPG-Lap step is ``2 G1 / (m sigma)``-DP;
  one privacy-paying DPG-Sparse answer costs AboveThreshold's
  ``D / (2 sigma) + 2 D / (4 sigma) = D / sigma`` plus the Laplace answer's
  ``D / sigma``, ``D = 2 G1 / |S1|``. The run's guarantee (``epsilon``) is the
  smallest of three valid figures at the same delta
  (:func:`ldpsim.privacy.composition.tightest`): the PLD of dp-accounting
  (``epsilon_pld``: T Laplace mechanisms; for DPG-Sparse, C_s AboveThresholds
  as generic pure-DP mechanisms and C_s Laplace answers), Dwork & Roth's
  Theorem 3.20 (``epsilon_advanced``: T, or 2 C_s, mechanisms) and basic
  composition (``epsilon_basic``); ``accountant`` names the one that gave
  it (:mod:`ldpsim.privacy.composition`). Lemma 1's
  conditions are then checked as Dwork et al.'s transfer theorem states
  them, for queries with values in ``[0, 1]``: a gradient coordinate spans an
  interval of width ``W``, so the accuracy ``sigma`` of the lemma is
  ``tau = sigma / W`` on that scale; an (eps, delta)-DP algorithm is
  (eps', delta)-DP for every eps' >= eps, so the condition
  ``n >= 2 ln(8/delta) / eps^2`` is met best at ``eps' = tau / 13``.
"""

from __future__ import annotations

import math

from ...privacy.composition import above_threshold_epsilon, advanced_composition, basic_composition, \
    laplace_epsilon, pld_epsilon, tightest

#: ``k`` compositions of an ``eps0``-DP step stay floats in Theorem 3.20 when ``eps0 <= EPS0_ROOM - ln k``:
#: then ``k eps0 (e^eps0 - 1) < e^(EPS0_ROOM + ln EPS0_ROOM) < e^709.78``, the largest float.
EPS0_ROOM = 700.0


def lap_privacy(g1: float, n: int, sigma: float, T: int, batches: int, delta: float) -> dict:
    """Privacy of SAGD with DPG-Lap: T steps (mini-batch: each of ``batches`` batches seen ``ceil(T / B)`` times).

    Batches are disjoint, so the whole run is as private as its most used
    batch (parallel composition); the smallest batch has ``floor(n / B)`` points.
    """
    m = n // batches
    k = math.ceil(T / batches)
    eps0 = laplace_epsilon(2.0 * g1 / m, sigma)
    lemma = math.sqrt(k * math.log(1.0 / delta)) * g1 / (m * sigma)
    return {"epsilon_step": eps0, "compositions": k,
            **_guarantee(pld_epsilon(delta, laplace=[(eps0, k)]), advanced_composition(eps0, k, delta)[0],
                         basic_composition(eps0, k)[0]),
            "epsilon_lemma": lemma, "epsilon_lemma_proof": 2.0 * lemma}


def _guarantee(pld: float, advanced: float, basic: float) -> dict:
    """The tightest of the three figures, all valid at the same delta, and each of them."""
    accountant, epsilon = tightest({"PLD": pld, "Thm 3.20": advanced, "basic": basic})
    return {"epsilon": epsilon, "accountant": accountant, "epsilon_pld": pld, "epsilon_advanced": advanced,
            "epsilon_basic": basic}


def sparse_privacy(g1: float, n: int, sigma: float, budget: int, delta: float) -> dict:
    """Privacy of SAGD with DPG-Sparse for S1 (the first ``n // 2`` points) at budget ``C_s``.

    Only privacy-paying answers cost (the sparse vector technique); the
    guarantee holds whatever the count, up to the budget. S2's gradients
    are released without noise: S2 is not protected.

    A paying answer ends one AboveThreshold instance (``D / sigma``-DP) and
    releases one Laplace answer (``D / sigma``): ``2 C_s`` pure mechanisms in
    all (the instance still running when the path ends costs no more than
    the answer it did not give). Theorem 3.20 composes them one by one (the
    larger of the two epsilons each), which is tighter than composing C_s
    answers of ``2 D / sigma``; the PLD composes AboveThreshold as a generic
    pure-DP mechanism and the answers as Laplace mechanisms.
    """
    n1 = n // 2
    sens = 2.0 * g1 / n1
    eps_threshold = above_threshold_epsilon(sens, 2.0 * sigma, 4.0 * sigma)
    eps_laplace = laplace_epsilon(sens, sigma)
    k = int(budget)
    one = max(eps_threshold, eps_laplace)
    return {"epsilon_step": eps_threshold + eps_laplace, "compositions": k,
            **_guarantee(pld_epsilon(delta, laplace=[(eps_laplace, k)], pure=[(eps_threshold, k)]),
                         advanced_composition(one, 2 * k, delta)[0],
                         basic_composition(eps_threshold + eps_laplace, k)[0]),
            "epsilon_lemma": math.sqrt(budget * math.log(2.0 / delta)) * 2.0 * g1 / (n * sigma),
            "epsilon_lemma_proof": math.nan}


def accounting_problem(oracle: str, g1: float, n: int, sigma: float, T: int, batches: int, budget: int) -> str | None:
    """Why the privacy of a run cannot be computed in floating point, or ``None``.

    Theorem 3.20's ``k eps0 (e^eps0 - 1)`` overflows when one step's
    ``eps0`` (a DPG-Lap step: ``2 G1 / (m sigma)``; a paying DPG-Sparse
    answer: ``4 G1 / (|S1| sigma)``) exceeds ``EPS0_ROOM - ln k``, ``k`` the
    compositions (steps per batch, or C_s). The text continues
    ``"sigma = ... "`` and ends with the smallest sigma allowed.
    """
    if oracle == "lap":
        m, k = n // batches, math.ceil(T / batches)
        scale, what = 2.0 * g1 / m, "a DPG-Lap step is epsilon0 = 2 G1 / (m sigma) = "
    else:
        m, k = n // 2, budget
        scale, what = 4.0 * g1 / m, "a paying DPG-Sparse answer is epsilon0 = 4 G1 / (|S1| sigma) = "
    room = EPS0_ROOM - math.log(max(k, 1))
    if scale / sigma <= room:
        return None
    return (f"is too small for the privacy accounting: {what}{scale / sigma:.4g}-DP (G1 = {g1:.4g}, m = {m}), and "
            f"{k} such steps compose past the largest float; allowed here: sigma >= {scale / room:.4g}")


def theorem_range(oracle: str, g1: float, n: int, sigma: float, beta: float) -> tuple[float, float]:
    """The printed range of T (Theorem 1, ``lap``) or of C_s (Theorem 3, ``sparse``); empty if sigma beta >= 1.

    An end beyond the largest float is ``inf``.
    """
    log = math.log(1.0 / (sigma * beta)) if sigma * beta < 1.0 else 0.0
    try:
        if oracle == "lap":
            lo, hi = 2.0 * n * sigma ** 2 / g1 ** 2, n ** 2 * sigma ** 4 / (169.0 * log * g1 ** 2) if log > 0 else 0.0
        else:
            lo, hi = n * sigma ** 2 / (2.0 * g1 ** 2), n ** 2 * sigma ** 4 / (676.0 * log * g1 ** 2) if log > 0 else 0.0
    except OverflowError:  # sigma^4 of a sigma above 1e77: the ends are computed apart
        lo = theorem_end(lambda: 2.0 * n * sigma ** 2 / g1 ** 2 if oracle == "lap"
                         else n * sigma ** 2 / (2.0 * g1 ** 2))
        hi = math.inf if log > 0 else 0.0
    return lo, hi


def theorem_end(expression) -> float:
    """``expression()``, or ``inf`` if it overflows."""
    try:
        return float(expression())
    except OverflowError:
        return math.inf


def lemma1_check(oracle: str, g1: float, width: float, n: int, sigma: float, beta: float, T: int, batches: int,
                 budget: int) -> dict:
    """Lemma 1's conditions with the derived privacy, at the largest delta the lemma allows.

    Returns ``tau = sigma / W``, ``delta_star = tau beta / (26 ln(26 / tau))``,
    the run's ``eps`` at ``delta_star`` (Theorem 3.20), ``eps_max = tau / 13``,
    ``n_min = 2 ln(8 / delta_star) / eps_max^2`` against the size of the
    protected set (``n``, ``|S1|`` or the smallest batch), and ``ok``.
    """
    tau = sigma / width
    protected = n // batches if oracle == "lap" else n // 2
    out = {"tau": tau}
    if tau >= 1.0:  # a mean of values in an interval of width W is never off by W: nothing to prove
        return {**out, "delta_star": math.nan, "epsilon_star": math.nan, "epsilon_max": math.nan,
                "n_protected": protected, "n_min": math.nan, "lemma1_ok": True, "lemma1_vacuous": True}
    delta_star = tau * beta / (26.0 * math.log(26.0 / tau))
    if not delta_star > 0.0:  # below the smallest float (a tiny beta): the lemma asks what no run can give
        return {**out, "delta_star": 0.0, "epsilon_star": math.inf, "epsilon_max": tau / 13.0,
                "n_protected": protected, "n_min": math.inf, "lemma1_ok": False, "lemma1_vacuous": False}
    if oracle == "lap":
        eps = lap_privacy(g1, n, sigma, T, batches, delta_star)["epsilon"]
    else:
        eps = sparse_privacy(g1, n, sigma, budget, delta_star)["epsilon"]
    eps_max = tau / 13.0
    n_min = 2.0 * math.log(8.0 / delta_star) / eps_max ** 2
    return {**out, "delta_star": delta_star, "epsilon_star": eps, "epsilon_max": eps_max, "n_protected": protected,
            "n_min": n_min, "lemma1_ok": bool(eps <= eps_max and protected >= n_min), "lemma1_vacuous": False}


__all__ = ["EPS0_ROOM", "accounting_problem", "lap_privacy", "lemma1_check", "sparse_privacy", "theorem_range"]
