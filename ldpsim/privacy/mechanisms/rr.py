"""Randomized response on a bit, debiased (Dette & Graw 2024, Example 2.2 and Section 4): the quantile model's mechanism.

The bit ``1{X <= theta}`` is reported with probability ``e^eps / (1 + e^eps)``
and flipped otherwise; the model debiases the report. The audit draws
through :func:`randomized_response` at the bits 0 and 1
(:class:`ldpsim.privacy.audit.RandomizedResponseProbe`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ...engine.dialect.jit import jit
from ...engine.dialect.rng import uniform
from .additive import Guaranteed
from .kernel import _fmt
from .registry import register


#: Above this epsilon ``(e^eps - 1)^2`` overflows (from 354.9): the variance is computed as ``1 / ((e^eps - 1)
#: (1 - e^-eps))`` there, and as before below it, where every committed number was computed.
_SQUARE_OVERFLOWS = 350.0


@dataclass(frozen=True)
class RandomizedResponse(Guaranteed):
    """Randomized response on a bit, debiased (000, Example 2.2 and Section 4).

    The true bit is reported with probability ``p = e^eps / (1 + e^eps)`` and
    flipped otherwise; ``(report - (1 - p)) / (2p - 1)`` is then unbiased for
    the bit. ``epsilon = inf`` reports the bit unchanged (non-private).

    Parameters
    ----------
    epsilon : float
        Privacy budget, ``> 0``; ``math.inf`` for no privacy.
    """

    epsilon: float

    name: ClassVar[str] = "rr"
    switched_off: ClassVar[str] = "randomized response"

    def claim(self) -> str:
        """E.g. ``epsilon = 1 LDP (randomized response)``."""
        return f"epsilon = {_fmt(self.epsilon)} LDP (randomized response)"

    @property
    def flip_prob(self) -> float:
        """``1 - p = 1 / (1 + e^eps)``, the probability of flipping the bit."""
        if math.isinf(self.epsilon):
            return 0.0
        return 1.0 / (1.0 + math.exp(self.epsilon))

    @property
    def scale(self) -> float:
        """``1 / (2p - 1) = (e^eps + 1) / (e^eps - 1)``."""
        if math.isinf(self.epsilon):
            return 1.0
        return 1.0 + 2.0 / math.expm1(self.epsilon)

    @property
    def shift(self) -> float:
        """``(1 - p) / (2p - 1) = 1 / (e^eps - 1)``."""
        if math.isinf(self.epsilon):
            return 0.0
        return 1.0 / math.expm1(self.epsilon)

    @property
    def variance(self) -> float:
        """Variance the mechanism adds to the debiased bit, whatever the bit.

        ``p (1 - p) / (2p - 1)^2 = e^eps / (e^eps - 1)^2``: 0.9207 at eps = 1.
        The paper prints ``e^eps / (e^eps - 1)``, which its own Table 1 refutes
        (docs/corrections.md, item 1).
        """
        if math.isinf(self.epsilon):
            return 0.0
        if self.epsilon > _SQUARE_OVERFLOWS:  # (e^eps - 1)^2 is beyond the largest float: the same value, divided out
            return 1.0 / (math.expm1(self.epsilon) * -math.expm1(-self.epsilon))
        return math.exp(self.epsilon) / math.expm1(self.epsilon) ** 2


@jit(inline=True)
def randomized_response(bit, gen, flip_prob):
    """Report the boolean ``bit``, flipped with probability ``flip_prob``.

    Always draws one uniform. A boolean, not 0.0 / 1.0: the caller selects
    between two precomputed values rather than computing with the report,
    which keeps the kernel's dependency chain from theta to theta short.
    Models use a separate, mechanism-free gradient for epsilon = inf rather
    than a zero ``flip_prob``: a test of ``flip_prob > 0`` here made the
    whole kernel 60% slower.
    """
    return bit != (uniform(gen) < flip_prob)


register("rr", RandomizedResponse, "randomized response on the bit 1{X <= theta}, debiased (Dette & Graw 2024, "
         "Example 2.2)", "bit")

__all__ = ["RandomizedResponse", "randomized_response"]
