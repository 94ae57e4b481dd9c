"""What the additive mechanisms (Laplace, the Gaussians, GDP) share: a box's sensitivity, the checks, the guarantee.

The noise itself, its record and its draw are each family's (:mod:`.laplace_noise`,
:mod:`.gaussian_noise`, :mod:`.gdp_noise`); randomized response (:mod:`.rr`) states
its guarantee as they do (:class:`Guaranteed`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np


class Guaranteed:
    """A mechanism whose budget may be infinite (no privacy, no noise): its guarantee is :meth:`claim` otherwise."""

    #: The budget's attribute, as the guarantee names it.
    budget_key: ClassVar[str] = "epsilon"
    #: What an infinite budget switches off, as the guarantee says it.
    switched_off: ClassVar[str] = "noise"

    @property
    def guarantee(self) -> str:
        """The privacy guarantee in one line (``no privacy (...)`` at an infinite budget)."""
        if math.isinf(getattr(self, self.budget_key)):
            return f"no privacy ({self.budget_key} = inf, {self.switched_off} off)"
        return self.claim()

    def claim(self) -> str:
        """The guarantee at a finite budget."""
        raise NotImplementedError


def sensitivity(bounds, norm) -> float:
    """Sensitivity of a gradient known to lie in a box, in the l1 or l2 norm.

    With ``|g_j(x)| <= bounds[j]`` for every ``x``, the largest difference
    ``sup_{x, x'} ||g(x) - g(x')||`` (Dette & Graw 2024, Example 2.1) is reached at
    opposite corners of the box: ``2 sum_j bounds[j]`` in l1 and
    ``2 sqrt(sum_j bounds[j]^2)`` in l2. This is an upper bound for a
    gradient that does not fill the box, hence still a valid calibration.

    Parameters
    ----------
    bounds : array_like
        Per-coordinate bounds ``sup |g_j|``, nonnegative and finite, 1-D (a
        scalar counts as one coordinate).
    norm : {"l1", "l2"}
        The norm: "l1" for the Laplace mechanism, "l2" for the Gaussian.

    Returns
    -------
    float
        The sensitivity.

    Raises
    ------
    ValueError
        On a bad ``norm``, or bounds that are empty, more than 1-D, negative
        or not finite.
    """
    if norm not in ("l1", "l2"):
        raise ValueError(f"norm must be 'l1' or 'l2', got {norm!r}")
    b = np.asarray(bounds, dtype=float)
    if b.ndim > 1 or b.size == 0:
        raise ValueError(f"bounds must be a non-empty 1-D array, got shape {b.shape}")
    bad = ~(np.isfinite(b) & (b >= 0))
    if bad.any():
        raise ValueError(f"bounds must be finite and nonnegative, got {b.ravel()[bad.ravel()][0]}")
    if norm == "l1":
        return float(2.0 * b.sum())
    return float(2.0 * math.sqrt(float(np.dot(b.ravel(), b.ravel()))))


def _check_epsilon(epsilon: float) -> None:
    if not epsilon > 0:  # also catches nan
        raise ValueError(f"epsilon must be > 0 (inf for no privacy), got {epsilon}")


def _check_sensitivity(value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"sensitivity must be finite and > 0, got {value}")


class Calibrated(Guaranteed):
    """Noise calibrated to a ``sensitivity`` at a budget ``epsilon`` (dataclass fields of the subclass), checked when built."""

    def __post_init__(self):
        _check_epsilon(self.epsilon)
        _check_sensitivity(self.sensitivity)


__all__ = ["Calibrated", "Guaranteed", "sensitivity"]
