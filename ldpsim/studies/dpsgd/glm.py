"""Linear and logistic regression on a sample: the designs, theta*'s range, A and S, the full-sample fits.

Shared by the simulation (:mod:`.study`) and ``ldpsim fit`` (:mod:`.fit`).

* :func:`design_cholesky`: ``Sigma = I`` or Toeplitz ``Sigma_ij = 0.5^|i-j|`` (002, Section 6.1).
* :func:`clipped_moments`: ``A^ = (1/n) sum clip_H(grad^2 l_i)`` and
  ``S^ = (1/n) sum clip(grad l_i) clip(grad l_i)'`` at a point, with the
  gradient clipped at ``clip`` (as in the DP-SGD steps), so ``||g g'||_F <= clip^2``,
  and the Hessian ``w_i x_i x_i'`` (``w = 1`` linear, ``s (1 - s)`` logistic)
  at ``clip_hessian`` in Frobenius norm. One example then moves ``S^`` by at
  most ``sqrt(2) clip^2 / n`` and ``A^`` by ``sqrt(2) clip_hessian / n`` (both
  summands are rank one and positive semi-definite:
  ``||P - P'||_F^2 = ||P||_F^2 + ||P'||_F^2 - 2 <P, P'> <= 2 b^2``).
* :func:`private_moments`: ``A~ = A^ + xi'``, ``S~ = S^ + xi''`` (002,
  Proposition 1): symmetric noise, i.i.d. ``N(0, sd^2)`` on and above the
  diagonal, ``sd = sqrt(2) (sqrt(2) b / n) / mu_var`` with ``b`` the bound of
  the matrix's summands: each matrix is ``mu_var / sqrt(2)``-GDP, the pair
  ``mu_var``-GDP.
* :func:`full_sample_fit`: OLS with ``sigma^2 (X'X)^-1`` / the logistic MLE
  (Newton) with ``(X'WX)^-1``: the oracle of 002's Figure 2.
"""

from __future__ import annotations

import math

import numpy as np

#: Upper end of theta*'s uniform law per model (002, Section 6.1).
THETA_HI = {"linear": 1.0, "logistic": 0.5}
#: Correlation of neighbouring covariates in the Toeplitz design.
TOEPLITZ_RHO = 0.5


def design_covariance(design: str, d: int) -> np.ndarray:
    """``Sigma``: identity or ``0.5^|i-j|``."""
    if design == "identity":
        return np.eye(d)
    if design == "toeplitz":
        idx = np.arange(d)
        return TOEPLITZ_RHO ** np.abs(np.subtract.outer(idx, idx))
    raise ValueError(f"design = {design!r} is not one of identity, toeplitz")


def design_cholesky(design: str, d: int) -> np.ndarray:
    """Lower Cholesky factor of :func:`design_covariance` (``x = L z``)."""
    return np.linalg.cholesky(design_covariance(design, d))


def residuals(model: str, X, y, theta):
    """``r_i`` (``grad l_i = r_i x_i``) and the Hessian weights ``w_i`` (``grad^2 l_i = w_i x_i x_i'``)."""
    from scipy import special  # lazy: import ldpsim <= 1 s (issue 41)

    fit = X @ theta
    if model == "linear":
        return fit - y, np.ones_like(y)
    p = special.expit(fit)
    return p - y, p * (1.0 - p)


def clipped_moments(model: str, X, y, xnorm, theta, clip: float, clip_hessian: float):
    """``(A^, S^, clipped share)`` at ``theta`` with per-example clipping (module docstring)."""
    n = X.shape[0]
    r, w = residuals(model, X, y, theta)
    gnorm = np.abs(r) * xnorm
    with np.errstate(divide="ignore", invalid="ignore"):
        g_scale = np.where(gnorm > clip, clip / gnorm, 1.0)
        hnorm = w * xnorm * xnorm
        h_scale = np.where(hnorm > clip_hessian, clip_hessian / hnorm, 1.0)
    gr = r * g_scale
    a_hat = (X * (w * h_scale)[:, None]).T @ X / n
    s_hat = (X * (gr * gr)[:, None]).T @ X / n
    return a_hat, s_hat, float(np.mean(gnorm > clip))


def matrix_noise_sd(bound: float, n: int, mu_var: float) -> float:
    """SD of the noise on each entry of a matrix whose summands have Frobenius norm ``<= bound`` (0: mu_var = inf)."""
    if math.isinf(mu_var):
        return 0.0
    return math.sqrt(2.0) * (math.sqrt(2.0) * bound / n) / mu_var


def symmetric_noise(gen: np.random.Generator, d: int, sd: float) -> np.ndarray:
    """A symmetric ``(d, d)`` matrix, i.i.d. ``N(0, sd^2)`` on and above the diagonal (row by row)."""
    upper = np.zeros((d, d))
    rows, cols = np.triu_indices(d)
    upper[rows, cols] = sd * gen.standard_normal(rows.shape[0])
    return upper + np.triu(upper, 1).T


def private_moments(gen, model, X, y, xnorm, theta, clip: float, clip_hessian: float, mu_var: float):
    """``(A~, S~, SD of A~'s noise)``: :func:`clipped_moments` plus Proposition 1's noise (A's drawn first)."""
    a_hat, s_hat, _ = clipped_moments(model, X, y, xnorm, theta, clip, clip_hessian)
    n, d = X.shape
    sd_a = matrix_noise_sd(clip_hessian, n, mu_var)
    if sd_a > 0:
        a_hat = a_hat + symmetric_noise(gen, d, sd_a)
        s_hat = s_hat + symmetric_noise(gen, d, matrix_noise_sd(clip * clip, n, mu_var))
    return a_hat, s_hat, sd_a


def full_sample_fit(model: str, X, y, max_iter: int = 100):
    """The non-private full-sample estimator and its estimated covariance of ``sqrt(n) (estimate - theta*)``.

    Linear: OLS, ``s^2 (X'X / n)^-1`` with ``s^2 = RSS / (n - d)``. Logistic:
    the MLE by Newton's method from 0 (step halving if the likelihood falls),
    ``(X'WX / n)^-1``. Returns ``(estimate, covariance, converged)``; a
    separated logistic sample has no MLE: ``converged`` is False (so is a
    fit whose linear algebra fails: a singular ``X'X`` or information).
    """
    try:
        return _full_sample_fit(model, X, y, max_iter)
    except np.linalg.LinAlgError:
        d = X.shape[1]
        return np.full(d, np.nan), np.full((d, d), np.nan), False


def _full_sample_fit(model, X, y, max_iter):
    from scipy import special

    n, d = X.shape
    if model == "linear":
        xtx = X.T @ X
        est = np.linalg.solve(xtx, X.T @ y)
        rss = float(np.sum((y - X @ est) ** 2))
        return est, rss / (n - d) * np.linalg.inv(xtx / n), True
    theta = np.zeros(d)

    def loglik(t):
        f = X @ t
        return float(np.sum(y * f - np.logaddexp(0.0, f)))

    current = loglik(theta)
    for _ in range(max_iter):
        p = special.expit(X @ theta)
        grad = X.T @ (y - p)
        info = (X * (p * (1.0 - p))[:, None]).T @ X
        step = np.linalg.solve(info, grad)
        size = 1.0
        while size > 1e-10:
            trial = theta + size * step
            value = loglik(trial)
            if value >= current - 1e-12:
                break
            size /= 2.0
        theta, previous, current = trial, current, value
        if np.max(np.abs(size * step)) < 1e-10 * (1.0 + np.max(np.abs(theta))) or abs(current - previous) < 1e-13:
            p = special.expit(X @ theta)
            info = (X * (p * (1.0 - p))[:, None]).T @ X
            return theta, np.linalg.inv(info / n), bool(np.all(np.isfinite(theta)))
    return theta, np.full((d, d), np.nan), False


__all__ = ["THETA_HI", "clipped_moments", "design_cholesky", "design_covariance", "full_sample_fit",
           "matrix_noise_sd", "private_moments", "residuals", "symmetric_noise"]
