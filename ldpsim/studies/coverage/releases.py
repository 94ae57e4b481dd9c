"""Methods that read each user's release beside the SGD path: NPRR's confidence sequences and intervals.

The mean model with ``mechanism: nprr`` (issue 30) releases one NPRR value per
user and steps on it. Waudby-Smith, Wu & Ramdas (2023) build confidence
sequences and intervals for the mean from those same values
(:mod:`ldpsim.inference.nprr_cs`); with ``NPRR_H``, ``NPRR_EB``, ``NPRR_H_CI``
or ``NPRR_EB_CI`` among the methods of a run with looks, the checkpoint kernel
streams each step's release into their states (O(1) floats each) and records
their running bounds at every look (:func:`.checkpoints.run_trace`). The SGD
methods and these read the same releases of the same users.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...engine.runs.config import ConfigError, show
from ...engine.dialect.dispatch import by_record
from ...inference.methods import RELEASE_METHODS
from ...inference.methods.nprr import release_params
from ...inference.nprr_cs import PARAMS_SIZE, STATE_SIZE, nprr_running_bounds, nprr_state, nprr_update, released_value
from ...privacy.mechanisms.nprr import NPRR


# The kernel's tap is a record: a run without release methods passes NoTap, whose functions compile to nothing,
# so its kernel is the one before the tap existed (a run-time branch in the step cost the looks 1.4x).


class NoTap(NamedTuple):
    """No release methods."""


class NPRRTap(NamedTuple):
    """NPRR's ``G`` and ``r``, the mechanism's scratch (which holds each step's release), and the methods'
    params ``(J, PARAMS_SIZE)``, states ``(J, STATE_SIZE)`` and bounds at each look ``(C, J, 2)``."""

    grid: float
    keep: float
    scratch: np.ndarray
    params: np.ndarray
    states: np.ndarray
    out: np.ndarray


@by_record
def tap_step(tap):
    """Stream this step's release into the tap's states."""


@by_record
def tap_look(tap, q):
    """Record the tap's running bounds at look ``q``."""


@tap_step.register(NoTap)
def _no_step(tap):
    return None


@tap_look.register(NoTap)
def _no_look(tap, q):
    return None


@tap_step.register(NPRRTap)
def _nprr_step(tap):
    z = released_value(tap.scratch[0], tap.grid, tap.keep)
    for j in range(tap.params.shape[0]):
        nprr_update(tap.states[j], tap.params[j], z)


@tap_look.register(NPRRTap)
def _nprr_look(tap, q):
    for j in range(tap.params.shape[0]):
        tap.out[q, j, 0], tap.out[q, j, 1] = nprr_running_bounds(tap.states[j])


def release_methods(methods) -> tuple[str, ...]:
    """The methods of ``methods`` that read each user's release, in their order."""
    return tuple(m for m in methods if m in RELEASE_METHODS)


@dataclass(frozen=True)
class ReleaseTap:
    """What the kernel needs to stream the release methods of one setting.

    Attributes
    ----------
    methods : tuple of str
        Names from :data:`~ldpsim.inference.methods.RELEASE_METHODS`.
    grid, keep : float
        NPRR's ``G`` and ``r``.
    params : numpy.ndarray
        ``(len(methods), PARAMS_SIZE)``.
    """

    methods: tuple
    grid: float
    keep: float
    params: np.ndarray

    @classmethod
    def build(cls, model, methods, level: float, n: int) -> "ReleaseTap":
        """The tap of ``methods`` (empty without release methods) for a ``model`` run to ``n`` at ``level``."""
        names = release_methods(methods)
        mech = getattr(model, "mechanism", None)
        if not names:
            return NO_TAP
        if getattr(model, "name", None) != "mean" or not isinstance(mech, NPRR):
            raise ValueError(f"{names[0]} reads NPRR releases: the mean model with mechanism nprr, not {model!r}")
        return cls(names, float(mech.G), float(mech.r), release_params(names, float(mech.r), level, n))

    def kernel_record(self, kernel_params, looks: int):
        """The kernel's record (:class:`NoTap` without methods) and the bounds it fills, ``(looks, J, 2)``, NaN."""
        j = len(self.methods)
        out = np.full((looks, j, 2), np.nan)
        if not j:
            return NoTap(), out
        states = np.zeros((j, STATE_SIZE))
        for q in range(j):
            states[q] = nprr_state()
        # the release's own scratch (kernel_params.noise.t): after each step it holds that step's release
        return NPRRTap(self.grid, self.keep, kernel_params.noise.t, self.params, states, out), out


#: The tap of a run without release methods.
NO_TAP = ReleaseTap((), 0.0, 0.0, np.zeros((0, PARAMS_SIZE)))


def validate_releases(s, options) -> None:
    """Refuse, in one line, release methods where there is no NPRR release to read, or no looks."""
    names = release_methods(options["methods"])
    if not names:
        return
    methods = f"methods = {show(list(options['methods']))}"
    epsilon = getattr(s, "epsilon", None)
    if s.model == "mean" and getattr(s, "mechanism", None) is None and epsilon is not None and math.isinf(epsilon):
        raise ConfigError(f"{methods} with epsilon = inf: {', '.join(names)} read each user's NPRR release, and "
                          "without privacy there is none; allowed: a finite epsilon with mechanism nprr")
    if s.model != "mean" or s.mechanism != "nprr":
        raise ConfigError(f"{methods} with model = {s.model!r}, mechanism = {show(getattr(s, 'mechanism', None))}: "
                          f"{', '.join(names)} read each user's NPRR release: model mean with mechanism nprr")
    if not options["looks"]:
        raise ConfigError(f"{methods} without looks: {', '.join(names)} stream each user's release in the checkpoint "
                          "kernel; set looks (true, or a number of looks; the last look is n)")


__all__ = ["NO_TAP", "NPRRTap", "NoTap", "ReleaseTap", "release_methods", "tap_look", "tap_step",
           "validate_releases"]
