"""OB and OB_split: the online bootstrap (Fang, Xu & Yang 2018), B perturbed paths beside the main one.

Each perturbed path answers the main path's observation at its own iterate
with step ``eta_i W``, ``W ~ exponential(1)``: each user answers ``B + 1``
times. ``OB`` pays ``B + 1`` times the run's budget; ``OB_split`` keeps the
budget, each answer at ``epsilon / (B + 1)``, and runs a main path of its own.
The statistics are :mod:`ldpsim.inference.zoo.bootstrap`'s; the paths run in
the zoo's kernel pass (``BootPaths``).
"""

from __future__ import annotations

from ...engine.runs.config import Key, Range
from ..zoo.bootstrap import OB_INTERVALS, ob_interval, ob_update
from ..zoo.twins import ob_update_twin
from .base import Method, register
from .common import LEVEL

PATHS = Key("ob_paths", "int", 100, grid=False, range=Range("[2, 100000]"),
            help="OB, OB_split: perturbed paths B (each user answers B + 1 times)")
INTERVAL = Key("ob_interval", "choice", "normal", grid=False, choices=OB_INTERVALS,
               help="OB, OB_split: interval from the bootstrap averages (percentile, basic: ob_paths >= max(50, "
                    "2 / (1 - level)))")


def _ob(sums, inputs):
    n = float(inputs.setting.n)
    return (*ob_interval(inputs.theta_bar, sums / n, level=inputs.setting.level, kind=inputs.options["ob_interval"]),
            inputs.theta_bar)


def _ob_split(sums, inputs):
    n = float(inputs.setting.n)
    est = sums[0] / n  # its own main path, privatized at epsilon / (B + 1)
    return (*ob_interval(est, sums[1:] / n, level=inputs.setting.level, kind=inputs.options["ob_interval"]), est)


def _answers(options) -> int:
    return options["ob_paths"] + 1


register(
    Method("OB", "online bootstrap: B perturbed paths, each user answers B + 1 times (Fang, Xu & Yang 2018)",
           studies={"coverage": 140}, kind="zoo", stream_code=3,
           streams="B perturbed paths on the main path's observations, their iterates and sums",
           update=ob_update, twin=ob_update_twin, interval=_ob, keys=(LEVEL, PATHS, INTERVAL), answers=_answers,
           # B iterates and sums, the step's weights, the answer's scratch
           state_floats=lambda d, s, options: 2 * options["ob_paths"] * d + options["ob_paths"] + 2 * d,
           pass_cost=lambda options: 1.0 + int(options["ob_paths"])),
    Method("OB_split", "OB with each of the B + 1 answers at epsilon / (B + 1) (and delta / (B + 1)): the run's "
                       "budget in all", studies={"coverage": 150}, kind="zoo", stream_code=4,
           tags=frozenset({"own_estimate", "split_budget"}),
           streams="a main path of its own and B perturbed paths, every answer at 1 / (B + 1) of the budget",
           update=ob_update, twin=ob_update_twin, interval=_ob_split, keys=(LEVEL, PATHS, INTERVAL),
           answers=_answers,
           state_floats=lambda d, s, options: 2 * (options["ob_paths"] + 1) * d + options["ob_paths"] + 1 + 2 * d,
           pass_cost=lambda options: 2.0 + int(options["ob_paths"])),
)

__all__ = ["INTERVAL", "PATHS"]
