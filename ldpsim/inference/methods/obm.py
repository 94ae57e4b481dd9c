"""OBM: the fully online batch-means covariance of the main path (Zhu, Chen & Wu 2023).

The statistics are :mod:`ldpsim.inference.zoo.obm`'s; its sums of the main
path's iterates are kept in the zoo's kernel pass (``OBMState``).
"""

from __future__ import annotations

from ...engine.runs.config import Key, Range, check_range
from ..zoo.common import wald_interval
from ..zoo.obm import OBMLayout, obm_add, obm_sigma, obm_state_size
from ..zoo.twins import obm_add_twin
from .base import Method, register
from .common import LEVEL

CONSTANT = Key("obm_constant", "float", 1.0, grid=False, range=Range("(0, inf)"),
               help="OBM: batches start at floor(C m^(2 / (1 - gamma))), C this constant (the first at iterate 1 "
                    "whatever C)")


def batches(setting, options) -> OBMLayout:
    """OBM's batch starts for ``setting`` (one line if ``gamma`` leaves it none)."""
    check_range("gamma", setting.gamma, setting.gamma < 1.0, "(0, 1) for OBM (its batches grow like m^(2/(1-gamma)))")
    return OBMLayout.build(setting.n, setting.gamma, options["obm_constant"])


def _interval(state, inputs):
    n = inputs.setting.n
    _, sigma = obm_sigma(*state, n)
    return (*wald_interval(inputs.theta_bar, sigma, n, level=inputs.setting.level), inputs.theta_bar)


register(
    Method("OBM", "fully online batch-means covariance (Zhu, Chen & Wu 2023)", studies={"coverage": 160}, kind="zoo",
           streams="the online batch-means sums of the main path's iterates (4 d + d^2 + 3 floats)",
           update=obm_add, twin=obm_add_twin, interval=_interval, keys=(LEVEL, CONSTANT),
           layout=batches,
           state_floats=lambda d, s, options: obm_state_size(d), pass_cost=lambda options: 2.0),
)

__all__ = ["CONSTANT", "batches"]
