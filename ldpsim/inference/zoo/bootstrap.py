"""The online bootstrap of Fang, Xu & Yang (2018, JMLR 19): B perturbed SGD paths beside the main one.

With ``W_{i,b}`` i.i.d. positive, mean 1, variance 1 (exponential(1) here),
perturbed path ``b = 1..B`` takes the step

    theta*_{i,b} = theta*_{i-1,b} - eta_i W_{i,b} g_{i,b}(theta*_{i-1,b}),

``g_{i,b}`` the gradient of observation ``i`` at the path's own iterate, and
averages its iterates like the main path. The spread of the ``B`` averages
``theta_bar*_b`` about ``theta_bar`` mimics that of ``theta_bar`` about the
truth: conditionally on the data, ``sqrt(n) (theta_bar* - theta_bar)`` has the
limit law of ``sqrt(n) (theta_bar - theta*)``.

Under LDP each gradient at a new point is a new answer of the user, so user
``i`` answers ``B + 1`` times: ``OB`` spends epsilon on each (``(B + 1)
epsilon`` in all, by sequential composition), ``OB_split`` spends
``epsilon / (B + 1)`` on each (epsilon in all; the main path's noise grows
too). The fresh noise of a perturbed path's answer enters its step with
weight ``W`` and ``E W^2 = 2``: the bootstrap variance estimates
``G^-1 (S + S_LDP) G^-1`` rather than ``G^-1 S G^-1`` (``S = S_SGD + S_LDP``),
so the OB interval is too wide under LDP (docs/zoo_methods.md, section OB).
"""

from __future__ import annotations

import numpy as np

from ...engine.errors import ConfigError
from ...engine.dialect.jit import jit
from ..critical_values import normal_quantile

#: Laws of the perturbation weights (mean 1, variance 1, positive).
OB_WEIGHT_LAWS = ("exponential",)
#: Intervals built from the bootstrap averages.
OB_INTERVALS = ("normal", "percentile", "basic")


@jit(inline=True)
def perturbed_step(theta, acc, grad, step):
    """One perturbed path's step: ``theta -= step * grad`` then ``acc += theta`` (``(d,)`` rows, in place).

    ``step = eta_i * W_{i,b}``; ``grad`` is the path's (privatized) gradient at its own ``theta``.
    """
    perturbed_step_d(theta, acc, grad, step, theta.shape[0])


@jit(inline=True)
def perturbed_step_d(theta, acc, grad, step, d):
    """:func:`perturbed_step` with the dimension ``d`` given (a constant 1 leaves no loop for LLVM to vectorize)."""
    for q in range(d):
        x = theta[q] - step * grad[q]
        theta[q] = x
        acc[q] += x


@jit(inline=True)
def ob_update(thetas, sums, grads, weights, eta):
    """Step ``i`` of all ``B`` perturbed paths: :func:`perturbed_step` with ``step = eta * weights[b]`` for each row ``b``.

    ``thetas``, ``sums``, ``grads`` are ``(B, d)``, ``weights`` ``(B,)``, all updated in place but ``grads`` and ``weights``.
    """
    for b in range(thetas.shape[0]):
        perturbed_step(thetas[b], sums[b], grads[b], eta * weights[b])


def ob_answers(replicates: int) -> int:
    """Answers each user gives: one for the main path and one per perturbed path."""
    return replicates + 1


def ob_epsilon(epsilon: float, replicates: int, split: bool) -> tuple[float, float]:
    """``(epsilon per answer, epsilon per user by sequential composition)`` of ``OB`` (``split=False``) or ``OB_split``."""
    answers = ob_answers(replicates)
    if split:
        return epsilon / answers, epsilon
    return epsilon, answers * epsilon


def ob_interval(theta_bar: np.ndarray, boot_means: np.ndarray, *, level: float, kind: str = "normal"):
    """The online-bootstrap interval per coordinate from ``theta_bar`` ``(d,)`` and the ``(B, d)`` bootstrap averages.

    * ``normal``: ``theta_bar +- z sd*``, ``sd*`` the SD (``ddof = 1``) of the bootstrap averages;
    * ``percentile``: the ``(1 - level)/2`` and ``(1 + level)/2`` quantiles of the bootstrap averages;
    * ``basic``: ``2 theta_bar`` minus those quantiles, swapped.

    Returns
    -------
    lo, hi : numpy.ndarray
        ``(d,)``; NaN where a bootstrap average is not finite.
    """
    boot_means = np.asarray(boot_means, dtype=float)
    if kind not in OB_INTERVALS:
        raise ConfigError(f"ob_interval = {kind!r} is not one of {', '.join(OB_INTERVALS)}")
    ok = np.isfinite(boot_means).all(axis=0) & np.isfinite(theta_bar)
    boot_means = np.where(ok, boot_means, 0.0)  # a diverged replicate's column gives NaN below, without warnings
    if kind == "normal":
        half = normal_quantile(level) * boot_means.std(axis=0, ddof=1)
        lo, hi = theta_bar - half, theta_bar + half
    else:
        a = (1.0 - level) / 2.0
        q_lo, q_hi = np.quantile(boot_means, [a, 1.0 - a], axis=0)
        lo, hi = (q_lo, q_hi) if kind == "percentile" else (2.0 * theta_bar - q_hi, 2.0 * theta_bar - q_lo)
    return np.where(ok, lo, np.nan), np.where(ok, hi, np.nan)


def ob_state_size(d: int, replicates: int) -> int:
    """Floats the online bootstrap streams: ``B`` iterates, ``B`` sums, ``B`` gradients and ``B`` weights."""
    return 3 * replicates * d + replicates
