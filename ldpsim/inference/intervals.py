"""Confidence intervals from a path's streamed state: BB, BM, SN, the oracle and asymptotic confidence sequences.

Each method's interval is declared with it in its module of the registry
(:mod:`ldpsim.inference.methods`; the functions are re-exported here), each
returning ``(lower, upper)`` arrays of shape ``(d,)``. :func:`intervals` runs
those a replication asks for, once per replication (and per look,
:mod:`ldpsim.studies.coverage.looks`) after the kernel; their cost is
``O(B m d)`` at most, negligible next to the ``O(n)`` path.
"""

from __future__ import annotations

import numpy as np

from .critical_values import normal_quantile  # noqa: F401  (re-exported: callers have always found it here)
from .methods import (BATCH_METHODS, BLOCK_METHODS, CS_METHODS, DEFAULT_METHODS, POINTWISE_METHODS,  # noqa: F401
                      REGISTRY, IntervalInputs)
from .methods import CLASSIC_METHODS as METHODS
from .methods.asymptotic_cs import asymptotic_cs, mixture_margin, mixture_rho2  # noqa: F401
from .methods.batch_means import batch_means, batch_means_variance  # noqa: F401
from .methods.bootstrap import (MIN_BOOTSTRAP_DRAWS, MULTIPLIERS, block_bootstrap, block_bootstrap_draws,  # noqa: F401
                                block_bootstrap_joint, draw_multipliers, min_bootstrap_draws)
from .methods.oracle import oracle  # noqa: F401
from .methods.random_scaling import random_scaling  # noqa: F401
from .streaming import PathState, StreamLayout

#: An interval is usable only if its length is this many units in the last place of its ends:
#: then the ends resolve it to one part in a million. A path started far from theta* (theta0 = 1e20)
#: whose steps are below the spacing of its iterates gives intervals of length 0 or of rounding noise.
RESOLVED_ULPS = 2.0 ** 20


def resolved(bounds: np.ndarray) -> bool:
    """Whether every interval in ``bounds`` (``(..., 2)``) is longer than :data:`RESOLVED_ULPS` of its ends."""
    lo, hi = bounds[..., 0], bounds[..., 1]
    return bool(((hi - lo) > RESOLVED_ULPS * np.spacing(np.maximum(np.abs(lo), np.abs(hi)))).all())


def uses_blocks(methods) -> bool:
    """Whether any of ``methods`` is a block-bootstrap method."""
    return any(m in BLOCK_METHODS for m in methods)


def uses_batches(methods) -> bool:
    """Whether any of ``methods`` reads the batch-means batches (:data:`BATCH_METHODS`)."""
    return any(m in BATCH_METHODS for m in methods)


def unavailable(methods, layout: StreamLayout) -> list[str]:
    """The ``methods`` with no interval on ``layout``: fewer than two blocks, or fewer than two batches."""
    return [m for m in methods if (m in BLOCK_METHODS and not layout.enough_blocks)
            or (m in BATCH_METHODS and not layout.enough_batches)]


def intervals(methods, state: PathState, layout: StreamLayout, gen: np.random.Generator, *,
              n_boot: int, law: str, level: float, sigma: np.ndarray, t_opt: float | None = None) -> np.ndarray:
    """All intervals of one replication, in the order of ``methods`` (each computed as its registry entry says).

    The bootstrap multipliers are drawn once, after the path and from its
    generator, and serve every coordinate and both ``BB`` and ``BBjoint``.
    ``t_opt``: where the confidence sequences are narrowest (default the path's end, ``layout.n``;
    at a look before the end, the run's ``n``).

    Returns
    -------
    numpy.ndarray
        ``(len(methods), d, 2)`` lower and upper ends.
    """
    draws = None
    if uses_blocks(methods):
        draws = block_bootstrap_draws(state, layout, gen, n_boot, law)
    inputs = IntervalInputs(state, layout, draws, level, sigma, layout.n if t_opt is None else t_opt)
    out = np.empty((len(methods), state.theta_bar.shape[0], 2))
    for j, method in enumerate(methods):
        if method not in METHODS:
            raise ValueError(f"method = {method!r} is not one of {', '.join(METHODS)}")
        out[j, :, 0], out[j, :, 1] = REGISTRY[method].interval(inputs)
    return out
