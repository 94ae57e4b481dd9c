"""Logistic regression whose labels are privatized by randomized response (label-LDP): a vector model.

x = (1, z1, z2) with z_j ~ U(-1, 1) public; y ~ Bernoulli(s(x'beta)) is
reported by randomized response at epsilon and debiased, y~ = (report - (1 - p)) / (2p - 1),
so that the gradient (s(x'theta) - y~) x of the logistic loss is unbiased
and theta* = beta. Only the label is private: the guarantee says so. The
class gives neither G nor S: ldpsim estimates them (d = 3).
"""

import math
from typing import NamedTuple

import numpy as np

from ldpsim.extend import Model, lane_array, observe, randomized_response, register_vector, uniform, where


class LabelRRParams(NamedTuple):
    coef: np.ndarray  # beta
    x: object  # scratch: the covariates of the observation being drawn, one per lane (lane_array)
    flip_prob: float
    scale: float  # 1 / (2p - 1)
    shift: float  # (1 - p) / (2p - 1)


@observe.register(LabelRRParams)
def draw(params, gen):
    x = params.x
    x[0] = 1.0
    for j in range(1, x.shape[0]):
        x[j] = 2.0 * uniform(gen) - 1.0
    eta = 0.0
    for j in range(x.shape[0]):
        eta += x[j] * params.coef[j]
    return where(uniform(gen) < 1.0 / (1.0 + math.exp(-eta)), 1.0, 0.0)  # the label y


@register_vector(LabelRRParams)
def gradient(params, obs, theta, gen, out):
    x = params.x
    fit = 0.0
    for j in range(x.shape[0]):
        fit += x[j] * theta[j]
    report = where(randomized_response(obs > 0.5, gen, params.flip_prob), 1.0, 0.0)
    residual = 1.0 / (1.0 + math.exp(-fit)) - (report * params.scale - params.shift)
    for j in range(x.shape[0]):
        out[j] += residual * x[j]


class LabelLogistic(Model):
    """beta = (0.5, 1, -1); the label under epsilon-LDP randomized response, the covariates public."""

    name = "label_logistic"
    dim = 3

    def __init__(self, epsilon):
        self.epsilon = float(epsilon)
        self.p = 1.0 if math.isinf(self.epsilon) else math.exp(self.epsilon) / (1.0 + math.exp(self.epsilon))

    def kernel_params(self, lanes=1):
        return LabelRRParams(np.array([0.5, 1.0, -1.0]), lane_array(3, lanes), 1.0 - self.p,
                             1.0 / (2.0 * self.p - 1.0), (1.0 - self.p) / (2.0 * self.p - 1.0))

    def theta_star(self):
        return np.array([0.5, 1.0, -1.0])

    @property
    def guarantee(self):
        return f"epsilon = {self.epsilon:g} label-LDP (randomized response on y; the covariates are public)"
