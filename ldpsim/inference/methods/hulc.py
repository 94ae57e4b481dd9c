"""HulC: ``[min, max]`` of B averaged paths on consecutive segments (Kuchibhotla, Balakrishnan & Wasserman 2024).

The statistics are :mod:`ldpsim.inference.zoo.hulc`'s; the segment paths run
in the zoo's kernel pass (:mod:`ldpsim.recursion.zoo`, ``HulCPaths``), each
privatizing the main path's observation at its own iterate with noise of its
own stream. docs/zoo_methods.md states the algorithm.
"""

from __future__ import annotations

import numpy as np

from ...engine.runs.config import Key, Range
from ..zoo.common import accumulate
from ..zoo.hulc import HulCLayout, hulc_interval, hulc_splits, hulc_state_size
from ..zoo.twins import accumulate_twin
from .base import Method, register
from .common import LEVEL

DELTA = Key("hulc_delta", "float", 0.0, grid=False, range=Range("[0, 0.5)"),
            help="HulC: median bias Delta of the segment averages; B = smallest with (1/2-D)^B + (1/2+D)^B <= 1 - level")


def _interval(averages, inputs):
    # the range of the B segment averages; its point estimate their median
    lo, hi = hulc_interval(averages)
    return lo, hi, np.median(averages, axis=0)


register(
    Method("HulC", "[min, max] of B averaged paths on consecutive segments (Kuchibhotla et al. 2024)",
           studies={"coverage": 120}, kind="zoo", stream_code=1, tags=frozenset({"own_estimate", "no_se_ratio"}),
           streams="B segment paths restarted at theta0, each privatizing the observation at its own iterate; "
                   "the segment averages",
           update=accumulate, twin=accumulate_twin, interval=_interval, keys=(LEVEL, DELTA),
           layout=lambda s, options: HulCLayout.build(s.n, hulc_splits(s.level, options["hulc_delta"])),
           state_floats=lambda d, s, options: hulc_state_size(d, hulc_splits(s.level, options["hulc_delta"])),
           pass_cost=lambda options: 2.0),
)

__all__ = ["DELTA"]
