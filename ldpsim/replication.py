"""One chunk of Monte Carlo replications of one setting: paths, then intervals.

Replication ``r`` of a setting draws everything (path, then bootstrap
multipliers) from ``SeedSequence(root, spawn_key=(setting.seed_key, r))``
(:mod:`ldpsim.rng`). This module and the ones it calls decide what a saved
chunk holds (:data:`ldpsim.driver.COMPUTE_SOURCES`); how chunks are
scheduled, saved and resumed is :mod:`ldpsim.driver`'s business.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import inference
from .config import Setting
from .models import build_model
from .recursion import run_path
from .rng import replication_generator


@dataclass
class ChunkResult:
    """Per-replication output of a range of replications of one setting.

    Attributes
    ----------
    theta_bar : numpy.ndarray
        ``(reps, d)`` averaged iterates.
    bounds : numpy.ndarray
        ``(reps, n_methods, d, 2)`` interval ends.
    ok : numpy.ndarray
        ``(reps,)`` False where the path diverged or an interval is not finite.
    """

    theta_bar: np.ndarray
    bounds: np.ndarray
    ok: np.ndarray

    @classmethod
    def concatenate(cls, parts):
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("theta_bar", "bounds", "ok")))


def run_replications(setting: Setting, methods, root_seed: int, start: int, stop: int) -> ChunkResult:
    """Run replications ``start .. stop - 1`` of ``setting``.

    Parameters
    ----------
    setting : Setting
        Grid point.
    methods : sequence of str
        Interval methods to compute.
    root_seed : int
        Root of the seed tree.
    start, stop : int
        Replication range.

    Returns
    -------
    ChunkResult
    """
    model = build_model(setting)
    layout = setting.layout(methods)
    sigma = model.sigma(setting.batch_size)
    k, d = stop - start, model.dim
    theta_bar = np.full((k, d), np.nan)
    bounds = np.full((k, len(methods), d, 2), np.nan)
    ok = np.zeros(k, dtype=bool)
    for row, rep in enumerate(range(start, stop)):
        gen = replication_generator(root_seed, setting.seed_key, rep)
        state = run_path(model, gen, setting.n, setting.c, setting.gamma, setting.theta0, layout, setting.batch_size)
        theta_bar[row] = state.theta_bar
        if not state.finite(setting.n):
            continue
        bounds[row] = inference.intervals(methods, state, layout, gen, n_boot=setting.B, law=setting.multiplier,
                                          level=setting.level, sigma=sigma)
        ok[row] = bool(np.isfinite(bounds[row]).all())  # theta_bar is finite: state.finite held
    return ChunkResult(theta_bar, bounds, ok)
