"""Duchi, Jordan & Wainwright's 1-D mechanism (2018, JASA), written as a user's release mechanism.

A release mechanism does not add noise to the gradient: it replaces the
gradient, scaled into [-1, 1] coordinate by coordinate (t_j = g_j / bounds[j]),
by an unbiased random value whose law depends on t. Duchi's mechanism
outputs +D or -D, D = (e^eps + 1) / (e^eps - 1), with
P(+D) = 1/2 + t (e^eps - 1) / (2 (e^eps + 1)), so that E[output] = t; each
of the d coordinates gets epsilon / d. ldpsim has it built in
(`mechanism: duchi`); this file shows the contract of ldpsim.extend that
the built-in mechanisms of this kind use too:

    python -m ldpsim audit examples/my_duchi.py:MyDuchi --epsilon 2
    python -m ldpsim run configs/mechanisms.yaml --set mechanism=examples/my_duchi.py:MyDuchi --set epsilon=1 --n 1e5
"""

import math
from typing import NamedTuple

from ldpsim.extend import Mechanism, register_release, uniform, where


class MyDuchiRelease(NamedTuple):
    bound: float  # D at epsilon / d
    tilt: float  # (e^e - 1) / (2 (e^e + 1))


@register_release(MyDuchiRelease)
def duchi(noise, gen, t):
    # t holds the scaled gradient, one entry per coordinate (in [-1, 1]); overwrite it with the release
    for j in range(t.shape[0]):
        tj = min(max(t[j], -1.0), 1.0)  # the privacy proof needs t in [-1, 1]: clamp what rounding may push out
        t[j] = where(uniform(gen) < 0.5 + tj * noise.tilt, noise.bound, -noise.bound)


class MyDuchi(Mechanism):
    name = "my_duchi"

    def __init__(self, epsilon, bounds):
        super().__init__(epsilon, bounds)
        self.per = self.epsilon / self.bounds.size  # sequential composition over the coordinates

    def kernel_params(self):
        e = math.exp(self.per)
        return MyDuchiRelease((e + 1.0) / (e - 1.0), (e - 1.0) / (2.0 * (e + 1.0)))
