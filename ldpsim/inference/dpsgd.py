"""Intervals for the average of DP-SGD on a fixed sample (002, Section 4), with finite-sample corrections.

DP-SGD runs ``T = k n`` steps on a dataset of ``n`` points, batches of ``m``,
Gaussian noise of SD ``sigma_1`` on the averaged gradient. Conditionally on
the data, the average ``theta_bar_T`` fluctuates around the full-sample
estimator ``theta_hat`` with the long-run covariance of the path,
``(f V / m + sigma_1^2 A^-2) / T``, where ``V = A^-1 S A^-1`` and ``f`` is the
sampling fraction of the batch noise (:func:`sampling_factor`: ``(n - m) / (n - 1)``
without replacement, ``1 - m / n`` for Poisson, 0 for cyclic passes). Adding the
data's own ``V / n`` (002, Theorem 2, whose ``phi_sam`` is ``f = 1``):

    n Var(theta_bar_T - theta*) = V + (f V + m sigma_1^2 A^-2) / (k m)        (*)

Every interval here is built from (*), per coordinate ``j`` (``A^-2`` read as
``(A^-2)_jj``, which for a non-diagonal ``A`` is not ``(A^-1_jj)^2``):

* plug-in (4.1): ``theta_bar_j +- z sqrt(V~_jj / n)``; corrected (4.2): the
  whole of (*) with the private ``A~``, ``S~`` (Proposition 1). 002 prints both
  without the ``1 / n`` (docs/corrections.md, item 15) and (4.2) without the
  sampling term ``f V / (k m)``, which (*) keeps (0.1% of the half-length at
  ``T = n^2``, half the variance at ``T = n``).
* random scaling (4.6): ``V^ = (m / T^2) sum_t S_t S_t'`` with ``S_t`` the partial
  sums of ``theta_s - theta_bar_T`` (002's (4.4) prints ``sqrt(n)/sqrt(T)`` for
  one factor: item 15); ``V^_jj -> (f V_jj + m sigma_1^2 (A^-2)_jj) int_0^1 (W - rW(1))^2``.
  Uncorrected: ``theta_bar_j +- cv sqrt(V^_jj / n)``, ``cv`` the critical value of
  Abadir & Paruolo. Corrected: ``V^`` times
  ``rho = (*) / (f V + m sigma_1^2 A^-2)``, which makes the statistic exactly
  the random-scaling pivot; with ``f = 1`` it is
  ``V / (V + m sigma_1^2 A^-2) + 1 / (k m)``. 002's (4.7) drops the
  ``1 / (k m)`` (item 16): it then estimates ``V`` alone and, like the
  uncorrected plug-in, misses the privacy term ``sigma_1^2 A^-2 / k``.
"""

from __future__ import annotations

import numpy as np

from .critical_values import normal_quantile, random_scaling_critical_value


def sampling_factor(sampling: str, n: int, m: int) -> float:
    """``f``: the covariance of the batch-mean gradient is ``f S / m`` (finite-population fraction)."""
    if sampling == "swor":
        return (n - m) / (n - 1) if n > 1 else 0.0
    if sampling == "poisson":
        return 1.0 - m / n
    if sampling == "cyclic":
        return 0.0
    raise ValueError(f"sampling = {sampling!r} is not one of swor, poisson, cyclic")


def sandwich(a: np.ndarray, s: np.ndarray, floor: float = 0.0):
    """``V = A^-1 S A^-1`` and ``A^-2`` from symmetric (private) ``A``, ``S``.

    Eigenvalues of ``A`` below ``max(floor, 1e-8 max |eigenvalue|)`` are
    raised to it (the thresholding of Chen et al. 2020 that 002 mentions):
    noise can make ``A~`` indefinite or nearly singular. A public ``floor``
    (the SD of the privacy noise on ``A~``'s entries, say) keeps one unlucky
    draw from giving an absurdly wide interval. ``S~`` is projected on the
    positive semi-definite matrices (negative eigenvalues set to 0), so every
    variance is ``>= 0``. Both are post-processing: no privacy cost.

    Returns
    -------
    v, a_inv2 : numpy.ndarray
        ``(d, d)`` each; NaN if ``A`` or ``S`` is not finite (moments at a
        point so far out that they overflow: no interval, the replication is
        counted as failed).
    """
    if not (np.isfinite(a).all() and np.isfinite(s).all()):  # LAPACK would not converge on them
        nan = np.full(np.shape(a), np.nan)
        return nan, nan.copy()
    a = (a + a.T) / 2.0
    try:
        w, u = np.linalg.eigh(a)
        ws, us = np.linalg.eigh((s + s.T) / 2.0)
    except np.linalg.LinAlgError:  # entries so large that LAPACK's iterations overflow
        nan = np.full(np.shape(a), np.nan)
        return nan, nan.copy()
    w = np.maximum(w, max(floor, 1e-8 * np.max(np.abs(w))))
    a_inv = (u / w) @ u.T
    s = (us * np.maximum(ws, 0.0)) @ us.T  # a covariance: noise can make S~ indefinite
    v = a_inv @ s @ a_inv
    return (v + v.T) / 2.0, a_inv @ a_inv


def total_variance(v_diag, a_inv2_diag, sigma1: float, k: float, m: int, f: float) -> np.ndarray:
    """(*): ``n Var(theta_bar_T - theta*) = V + (f V + m sigma_1^2 A^-2) / (k m)``, per coordinate."""
    return v_diag + (f * v_diag + m * sigma1 * sigma1 * a_inv2_diag) / (k * m)


def plugin(theta_bar, v_diag, a_inv2_diag, *, sigma1: float, n: int, k: float, m: int, f: float, level: float,
           corrected: bool = True):
    """Plug-in interval (4.1), or with the finite-sample correction (4.2) read as (*)."""
    var = total_variance(v_diag, a_inv2_diag, sigma1, k, m, f) if corrected else v_diag
    half = normal_quantile(level) * np.sqrt(var / n)
    return theta_bar - half, theta_bar + half


def random_scaling_variance(sn_v, m: int) -> np.ndarray:
    """002's ``V^ = (m / T^2) sum_t S_t^2`` from the streamed ``V_T = T^-2 sum_t S_t^2``."""
    return m * np.asarray(sn_v)


def random_scaling_factor(v_diag, a_inv2_diag, *, sigma1: float, k: float, m: int, f: float,
                          form: str = "exact") -> np.ndarray:
    """The correction ``rho`` by which (4.7) multiplies ``V^``.

    ``form='exact'``: ``(*) / (f V + m sigma_1^2 A^-2)``, which makes
    ``sqrt(n) (theta_bar - theta*) / sqrt(rho V^)`` the random-scaling pivot
    for finite ``k``; ``form='paper'``: 002's (4.7),
    ``V / (V + m sigma_1^2 A^-2)``.
    """
    path = f * v_diag + m * sigma1 * sigma1 * a_inv2_diag
    if form == "paper":
        return v_diag / (v_diag + m * sigma1 * sigma1 * a_inv2_diag)
    if form != "exact":
        raise ValueError(f"form = {form!r} is not one of exact, paper")
    with np.errstate(divide="ignore", invalid="ignore"):
        return total_variance(v_diag, a_inv2_diag, sigma1, k, m, f) / path


def random_scaling(theta_bar, v_hat, *, n: int, level: float, factor=1.0):
    """Random-scaling interval (4.6): ``theta_bar +- cv sqrt(factor V^ / n)`` (``factor = rho``: (4.7))."""
    half = random_scaling_critical_value(level) * np.sqrt(factor * v_hat / n)
    return theta_bar - half, theta_bar + half


def wald(estimate, var_diag, *, n: int, level: float, extra=0.0):
    """``estimate +- z sqrt(var / n + extra)``: the oracle (``extra = 0``) and DP-GD's interval."""
    half = normal_quantile(level) * np.sqrt(var_diag / n + extra)
    return estimate - half, estimate + half


__all__ = ["plugin", "random_scaling", "random_scaling_factor", "random_scaling_variance", "sampling_factor",
           "sandwich", "total_variance", "wald"]
