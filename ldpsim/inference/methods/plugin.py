"""plugin_oracle: the plug-in sandwich ``G^-1 S_n G^-1``, ``S_n`` from the main path's privatized gradients, G known.

The statistics are :mod:`ldpsim.inference.zoo.plugin`'s; ``sum g g'`` is kept
in the zoo's kernel pass (``PluginState``). An oracle: estimating G under
LDP would need each user's Hessian, a second privatized answer.
"""

from __future__ import annotations

from ..zoo.common import wald_interval
from ..zoo.plugin import plugin_add, plugin_sigma, plugin_state_size
from ..zoo.twins import plugin_add_twin
from .base import Method, register
from .common import LEVEL


def _interval(smat, inputs):
    n = inputs.setting.n
    return (*wald_interval(inputs.theta_bar, plugin_sigma(smat, n, inputs.hessian), n, level=inputs.setting.level),
            inputs.theta_bar)


register(
    Method("plugin_oracle", "plug-in sandwich G^-1 S_n G^-1, S_n from the privatized gradients, G known "
                            "(Chen et al. 2020)", studies={"coverage": 170}, kind="zoo",
           streams="sum g g' of the main path's privatized gradients (d^2 floats)",
           update=plugin_add, twin=plugin_add_twin, interval=_interval, keys=(LEVEL,),
           state_floats=lambda d, s, options: plugin_state_size(d), pass_cost=lambda options: 1.25),
)

__all__: list = []
