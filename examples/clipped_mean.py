"""The mean of a clipped exponential by LDP-SGD with Laplace noise: a model whose truth ldpsim estimates.

X ~ Exp(rate) is clipped at `clip`, so that the gradient theta - min(X, clip)
of the squared loss has range `clip` whatever theta: Laplace noise of scale
clip / epsilon makes it epsilon-LDP. theta* = E min(X, clip) =
(1 - e^(-rate clip)) / rate. The class gives neither hessian() nor
gradient_covariance(): ldpsim estimates G and S by Monte Carlo before the run
(docs/extending.md compares them with G = 1 and
S = Var(min(X, clip)) + 2 (clip / epsilon)^2).
"""

import math
from typing import NamedTuple

import numpy as np

from ldpsim.extend import Model, exponential, laplace, observe, register_scalar


class ClippedMeanParams(NamedTuple):
    rate: float
    clip: float
    scale: float  # of the Laplace noise: clip / epsilon (0 without privacy)


@observe.register(ClippedMeanParams)
def draw(params, gen):
    return min(exponential(gen) / params.rate, params.clip)


@register_scalar(ClippedMeanParams)
def gradient(params, obs, theta, gen):
    return theta - obs + laplace(gen, params.scale)


class ClippedMean(Model):
    """E min(X, clip) for X ~ Exp(rate) under epsilon-LDP Laplace noise."""

    name = "clipped_mean"
    dim = 1
    ranges = {"rate": "(0, inf)", "clip": "(0, inf)"}
    descriptions = {"rate": "rate of the exponential law of X", "clip": "X is clipped at clip (the sensitivity)"}

    def __init__(self, epsilon, rate=1.0, clip=3.0):
        self.epsilon, self.rate, self.clip = float(epsilon), float(rate), float(clip)

    def kernel_params(self, lanes=1):
        scale = 0.0 if math.isinf(self.epsilon) else self.clip / self.epsilon
        return ClippedMeanParams(self.rate, self.clip, scale)

    def theta_star(self):
        return np.array([-math.expm1(-self.rate * self.clip) / self.rate])
