"""The method zoo's inference (issue 20): the exact statistics of HulC, HiGrad, OB, OBM and the plug-in sandwich.

Each method has

* a layout computed in Python before a path runs, where it needs a schedule
  (:class:`~.hulc.HulCLayout` segment ends, :class:`~.higrad.HiGradLayout`
  tree, :class:`~.obm.OBMLayout` batch starts), as ``int64`` arrays;
* per-step updates a path kernel calls, ``@jit(inline=True)`` functions on
  one replication's preallocated state, allocation-free
  (:func:`~.common.accumulate`, :func:`~.common.close_stretch`,
  :func:`~.higrad.higrad_branch`, :func:`~.bootstrap.ob_update`,
  :func:`~.obm.obm_add`, :func:`~.obm.obm_recentre`, :func:`~.plugin.plugin_add`),
  with plain-Python twins in :mod:`.twins`;
* functions that turn the final state into ``(lo, hi)`` per coordinate, and
  the size of the state.

docs/zoo_methods.md states each algorithm, its sources, its state and its
privacy cost; each method is declared, with its name, keys and interval, in
the registry (:mod:`ldpsim.inference.methods`: ``ZOO_METHODS`` is there).
"""

from .bootstrap import OB_INTERVALS, OB_WEIGHT_LAWS, ob_answers, ob_epsilon, ob_interval, ob_state_size, ob_update
from .common import accumulate, close_stretch, symmetric_from_upper, wald_interval
from .higrad import (HiGradLayout, create_split, higrad_branch, higrad_interval, higrad_state_size,
                     higrad_thread_estimates)
from .hulc import (HulCLayout, hulc_coverage, hulc_interval, hulc_miscoverage, hulc_randomization,
                   hulc_randomized_splits, hulc_splits, hulc_state_size)
from .obm import OBMLayout, obm_add, obm_batch_starts, obm_init, obm_recentre, obm_sigma, obm_state_size
from .plugin import plugin_add, plugin_sigma, plugin_state_size

__all__ = [
    "HiGradLayout", "HulCLayout", "OBMLayout", "OB_INTERVALS", "OB_WEIGHT_LAWS", "accumulate",
    "close_stretch", "create_split", "higrad_branch", "higrad_interval", "higrad_state_size",
    "higrad_thread_estimates", "hulc_coverage", "hulc_interval", "hulc_miscoverage", "hulc_randomization",
    "hulc_randomized_splits", "hulc_splits", "hulc_state_size", "ob_answers", "ob_epsilon", "ob_interval",
    "ob_state_size", "ob_update", "obm_add", "obm_batch_starts", "obm_init", "obm_recentre", "obm_sigma",
    "obm_state_size", "plugin_add", "plugin_sigma", "plugin_state_size", "symmetric_from_upper", "wald_interval",
]
