"""Privacy of SAGD's oracles and the conditions of 001's Theorems 1 and 3, per setting.

Two readings side by side (docs/corrections.md, items 18-20):

* **as printed**: Lemma 2's statement ``sqrt(T ln(1/delta)) G1 / (n sigma)``,
  its proof's last line (``2 G1``), Lemma 3's ``sqrt(C_s ln(2/delta)) 2 G1 / (n sigma)``,
  and the ranges of T (Theorem 1) and C_s (Theorem 3) as printed;
* **derived**: the replace-one l1 sensitivity of a mean gradient over ``m``
  points is ``2 G1 / m``, so one DPG-Lap step is ``2 G1 / (m sigma)``-DP;
  one privacy-paying DPG-Sparse answer costs AboveThreshold's
  ``D / (2 sigma) + 2 D / (4 sigma) = D / sigma`` plus the Laplace answer's
  ``D / sigma``, ``D = 2 G1 / |S1|``; T (or C_s) of them compose by
  Dwork & Roth's Theorem 3.20 (:mod:`ldpsim.privacy.composition`). Lemma 1's
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
    laplace_epsilon


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
            "epsilon": advanced_composition(eps0, k, delta)[0],
            "epsilon_basic": basic_composition(eps0, k)[0],
            "epsilon_lemma": lemma, "epsilon_lemma_proof": 2.0 * lemma}


def sparse_privacy(g1: float, n: int, sigma: float, budget: int, delta: float) -> dict:
    """Privacy of SAGD with DPG-Sparse for S1 (the first ``n // 2`` points) at budget ``C_s``.

    Only privacy-paying answers cost (the sparse vector technique); the
    guarantee holds whatever the count, up to the budget. S2's gradients
    are released without noise: S2 is not protected.
    """
    n1 = n // 2
    sens = 2.0 * g1 / n1
    eps_answer = above_threshold_epsilon(sens, 2.0 * sigma, 4.0 * sigma) + laplace_epsilon(sens, sigma)
    return {"epsilon_step": eps_answer, "compositions": int(budget),
            "epsilon": advanced_composition(eps_answer, budget, delta)[0],
            "epsilon_basic": basic_composition(eps_answer, budget)[0],
            "epsilon_lemma": math.sqrt(budget * math.log(2.0 / delta)) * 2.0 * g1 / (n * sigma),
            "epsilon_lemma_proof": math.nan}


def theorem_range(oracle: str, g1: float, n: int, sigma: float, beta: float) -> tuple[float, float]:
    """The printed range of T (Theorem 1, ``lap``) or of C_s (Theorem 3, ``sparse``); empty if sigma beta >= 1."""
    log = math.log(1.0 / (sigma * beta)) if sigma * beta < 1.0 else 0.0
    if oracle == "lap":
        lo, hi = 2.0 * n * sigma ** 2 / g1 ** 2, n ** 2 * sigma ** 4 / (169.0 * log * g1 ** 2) if log > 0 else 0.0
    else:
        lo, hi = n * sigma ** 2 / (2.0 * g1 ** 2), n ** 2 * sigma ** 4 / (676.0 * log * g1 ** 2) if log > 0 else 0.0
    return lo, hi


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
    if oracle == "lap":
        eps = lap_privacy(g1, n, sigma, T, batches, delta_star)["epsilon"]
    else:
        eps = sparse_privacy(g1, n, sigma, budget, delta_star)["epsilon"]
    eps_max = tau / 13.0
    n_min = 2.0 * math.log(8.0 / delta_star) / eps_max ** 2
    return {**out, "delta_star": delta_star, "epsilon_star": eps, "epsilon_max": eps_max, "n_protected": protected,
            "n_min": n_min, "lemma1_ok": bool(eps <= eps_max and protected >= n_min), "lemma1_vacuous": False}


__all__ = ["lap_privacy", "lemma1_check", "sparse_privacy", "theorem_range"]
