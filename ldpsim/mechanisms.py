"""Local privacy mechanisms applied to one observation's gradient.

Only randomized response is needed by the quantile model. Each mechanism has
a Python-side description (parameters, the variance it adds) and a jitted
draw used inside the kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._jit import jit


@dataclass(frozen=True)
class RandomizedResponse:
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
        return math.exp(self.epsilon) / math.expm1(self.epsilon) ** 2


@jit(inline=True)
def randomized_response(bit, gen, flip_prob):
    """Report ``bit`` (0.0 or 1.0), flipped with probability ``flip_prob``.

    Always draws one uniform. Models use a separate, mechanism-free gradient
    for epsilon = inf rather than a zero ``flip_prob``: a test of
    ``flip_prob > 0`` here made the whole kernel 60% slower.
    """
    if gen.random() < flip_prob:
        bit = 1.0 - bit
    return bit
