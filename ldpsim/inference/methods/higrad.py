"""HiGrad: a t interval from a tree of threads on disjoint observations (Su & Zhu 2018).

The statistics are :mod:`ldpsim.inference.zoo.higrad`'s; the threads run in
the zoo's kernel pass (:mod:`ldpsim.recursion.zoo`, ``HiGradPaths``).
"""

from __future__ import annotations

from ...engine.runs.config import Key, Range
from ..zoo.higrad import HiGradLayout, higrad_branch, higrad_interval, higrad_state_size, higrad_thread_estimates
from ..zoo.twins import higrad_branch_twin
from .base import Method, register
from .common import LEVEL

SPLITS = Key("higrad_splits", "int", 2, grid=False, range=Range("[1, 20]"),
             help="HiGrad: levels after the first (nsplits); no burn-in (the R package's default runs round(n / 10) "
                  "steps first)")
THREADS = Key("higrad_threads", "int", 2, grid=False, range=Range("[1, 100]"), help="HiGrad: threads per split (nthreads)")
RATIO = Key("higrad_step_ratio", "float", 1.0, grid=False, range=Range("(0, 100]"),
            help="HiGrad: length ratio of consecutive levels (step.ratio)")


def tree(setting, options) -> HiGradLayout:
    """HiGrad's tree for ``setting`` and the run's keys."""
    return HiGradLayout.build(setting.n, options["higrad_splits"], options["higrad_threads"],
                              options["higrad_step_ratio"])


def _interval(nodes, inputs):
    # each final thread's estimate from its ancestors' node averages; a t interval over the threads
    estimates = higrad_thread_estimates(nodes, inputs.spec.higrad)
    lo, hi = higrad_interval(estimates, inputs.spec.higrad, level=inputs.setting.level)
    return lo, hi, estimates.mean(axis=0)


register(
    Method("HiGrad", "t interval from a tree of threads on disjoint observations (Su & Zhu 2018)",
           studies={"coverage": 130}, kind="zoo", stream_code=2, tags=frozenset({"own_estimate"}),
           streams="a tree of threads, each privatizing its observations at its own iterate; the node averages",
           update=higrad_branch, twin=higrad_branch_twin, interval=_interval, keys=(LEVEL, SPLITS, THREADS, RATIO),
           layout=tree, state_floats=lambda d, s, options: higrad_state_size(d, tree(s, options)),
           pass_cost=lambda options: 2.0),
)

__all__ = ["RATIO", "SPLITS", "THREADS", "tree"]
