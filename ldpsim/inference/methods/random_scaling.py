"""SN: random scaling, self-normalised (Lee, Liao, Seo & Shin 2022), from three running sums of the main path.

The kernel keeps ``V_n`` with its running mean in three centred sums
(:func:`ldpsim.recursion.kernels.sn_add`; docs/corrections.md, item 4); the
critical values are computed (:mod:`ldpsim.inference.critical_values`).
"""

from __future__ import annotations

import numpy as np

from ..critical_values import random_scaling_critical_value
from .base import Method, register
from .common import LEVEL


def random_scaling(state, layout, *, level: float):
    """Random-scaling (self-normalised) interval ``theta_bar +- cv sqrt(V_n / n)``."""
    half = random_scaling_critical_value(level) * np.sqrt(state.sn_v / layout.n)
    return state.theta_bar - half, state.theta_bar + half


register(
    Method("SN", "random scaling, self-normalised (Lee, Liao, Seo & Shin 2022), its critical values computed",
           studies={"coverage": 40, "trace": 40}, default_in=("coverage", "trace"), reads=("sn",),
           streams="S, A, T, centred at the running mean (3 d floats; they also give theta_bar)",
           keys=(LEVEL,), interval=lambda x: random_scaling(x.state, x.layout, level=x.level),
           state_floats=lambda d, s, options: 3 * d,
           style=("tab:red", "D"), line=("tab:green", ":")),
)

__all__ = ["random_scaling"]
