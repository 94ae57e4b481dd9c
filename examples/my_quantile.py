# examples/my_quantile.py
import math
from typing import NamedTuple
import numpy as np
from scipy import stats
from ldpsim.extend import Model, observe, register_scalar, normal, randomized_response, where

class MyQuantileRR(NamedTuple):
    flip_prob: float
    high: float
    low: float

@observe.register(MyQuantileRR)
def draw(params, gen):
    return normal(gen)

@register_scalar(MyQuantileRR)
def gradient(params, obs, theta, gen):
    return where(randomized_response(obs <= theta, gen, params.flip_prob), params.high, params.low)

class MyQuantile(Model):
    name = "my_quantile"
    dim = 1
    def __init__(self, epsilon, tau=0.5):
        self.tau, self.epsilon = float(tau), float(epsilon)
        self.p = math.exp(self.epsilon) / (1.0 + math.exp(self.epsilon))
    def kernel_params(self, lanes=1):
        scale = 1.0 / (2.0 * self.p - 1.0)
        offset = self.tau + (1.0 - self.p) * scale
        return MyQuantileRR(1.0 - self.p, scale * 1.0 - offset, scale * 0.0 - offset)
    def theta_star(self):
        return np.array([stats.norm.ppf(self.tau)])
