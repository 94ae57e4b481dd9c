"""The staircase mechanism (Geng & Viswanath 2016, IEEE Trans. Inf. Theory 62(2)): epsilon-DP additive noise.

Among additive noises that give epsilon-DP for a query of sensitivity D, the
staircase law minimises the variance; Laplace noise, with variance
2 (D / epsilon)^2, is close to it at small epsilon and far from it at large
epsilon. Its density is a staircase: with b = e^-epsilon and gamma in (0, 1),
|X| / D lies in [k, k + gamma) with density proportional to b^k and in
[k + gamma, k + 1) with density proportional to b^(k + 1). Drawn as in the
paper (Section V): a sign, a geometric G with P(G = k) = (1 - b) b^k, a
uniform U and a coin B that picks the high or the low step,

    X = sign * D * (G + gamma U)                    if B = 0 (probability gamma / (gamma + (1 - gamma) b))
    X = sign * D * (G + gamma + (1 - gamma) U)      otherwise,

with the optimal gamma = 1 / (1 + e^(epsilon / 2)). Each of the d coordinates
of a gradient gets noise at epsilon / d with D = 2 max_j bounds[j] (basic
composition: a coordinate's shift can reach D whatever its share of the l1
sensitivity, and the staircase is not smooth in the shift).

ldpsim cannot prove this mechanism private: its guarantee prints as declared,
and `python -m ldpsim audit examples/staircase.py:Staircase` tests it.
"""

import math
from typing import NamedTuple

from ldpsim.extend import Mechanism, exponential, register_noise, uniform, where


class StaircaseNoise(NamedTuple):
    epsilon: float  # per coordinate
    width: float  # D
    gamma: float
    p_low: float  # P(B = 0): the low step [k, k + gamma)


@register_noise(StaircaseNoise)
def staircase(noise, gen):
    sign = where(uniform(gen) < 0.5, -1.0, 1.0)
    g = float(int(exponential(gen) / noise.epsilon))  # floor(E / epsilon) is geometric with b = e^-epsilon
    u = uniform(gen)
    low = uniform(gen) < noise.p_low
    return sign * noise.width * where(low, g + noise.gamma * u, g + noise.gamma + (1.0 - noise.gamma) * u)


class Staircase(Mechanism):
    name = "staircase"

    def __init__(self, epsilon, bounds):
        super().__init__(epsilon, bounds)
        self.per = self.epsilon / self.bounds.size
        self.width = 2.0 * float(self.bounds.max())
        self.gamma = 1.0 / (1.0 + math.exp(self.per / 2.0))
        b = math.exp(-self.per)
        self.p_low = self.gamma / (self.gamma + (1.0 - self.gamma) * b)

    def kernel_params(self):
        return StaircaseNoise(self.per, self.width, self.gamma, self.p_low)

    @property
    def variance(self):
        """E[X^2] from the draw above: G geometric (mean b / (1 - b), E G^2 = b (1 + b) / (1 - b)^2), U uniform."""
        b, g = math.exp(-self.per), self.gamma
        eg, eg2 = b / (1.0 - b), b * (1.0 + b) / (1.0 - b) ** 2
        low = eg2 + g * eg + g * g / 3.0
        high = eg2 + eg * (2.0 * g + (1.0 - g)) + g * g + g * (1.0 - g) + (1.0 - g) ** 2 / 3.0
        return self.width ** 2 * (self.p_low * low + (1.0 - self.p_low) * high)
