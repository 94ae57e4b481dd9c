"""A user's own mechanism (:mod:`ldpsim.extend`): the contract, the build from a config's value, the checks.

A user's mechanism is a :class:`Mechanism` subclass in a file of theirs,
named in a config as ``mechanism: path/to/file.py:Class``; its kernel
record is registered with :func:`~.kernel.register_noise` (additive noise)
or :func:`~.kernel.register_release` (a release of the scaled gradient),
as the built-in families register theirs. It is not in the registry
(:mod:`.registry`): the registry lists what ldpsim ships.
"""

from __future__ import annotations

import inspect
import math
from typing import ClassVar

import numpy as np

from ...engine.runs import usercode
from ...engine.errors import ConfigError
from .kernel import _fmt, draw_noise, release


class Mechanism:
    """A user's local mechanism for a bounded gradient (:mod:`ldpsim.extend`): additive noise, or a release.

    The models with a bounded gradient (``mean``, ``linear``, ``logistic``,
    ``quantile_regression``) take ``mechanism: path/to/file.py:Class``. They
    build it as ``Class(epsilon=..., bounds=..., delta=...)``: ``bounds[j]``
    bounds coordinate ``j`` of the (clipped) gradient, so
    ``sensitivity(bounds, "l1")`` or ``"l2"`` is what a calibration needs. The
    subclass gives

    * ``kernel_params()`` (or ``kernel_params(lanes)``, for scratch arrays of
      :func:`lane_array`): the NamedTuple record its kernel function reads,
      registered either with :func:`register_noise` (additive noise: one
      coordinate's noise, added to each coordinate) or with
      :func:`~.kernel.register_release` (a release: the gradient scaled into
      ``[-1, 1]^d`` is replaced in place by an unbiased release of it, as
      Duchi's mechanism or PM do);
    * ``variance``: the variance additive noise adds to each coordinate (the
      oracle's ``S``); ``None`` (the default) makes ldpsim estimate ``S`` by
      Monte Carlo, as it always does for a release;
    * ``epsilon`` and ``delta``: the guarantee it declares. ldpsim cannot
      prove it: every guarantee printed says "declared, not verified", and
      ``ldpsim audit`` tests it.
    """

    name: ClassVar[str] = ""
    #: Per-coordinate variance of the noise (``None``: not known, estimated with the model's truth).
    variance = None

    def __init__(self, epsilon, bounds, delta=None):
        self.epsilon = float(epsilon)
        self.bounds = np.asarray(bounds, dtype=float)
        self.delta = None if delta is None else float(delta)

    def kernel_params(self):
        """The NamedTuple record of the noise or release (:func:`register_noise` or ``register_release``)."""
        raise NotImplementedError(f"mechanism {type(self).__name__} does not define kernel_params()")

    @property
    def releases(self) -> bool:
        """Whether the mechanism releases the scaled gradient (``register_release``) rather than adding noise."""
        return type(user_record(self)) in release.registry

    @property
    def guarantee(self) -> str:
        """The declared guarantee, in one line, marked as declared."""
        name = self.name or type(self).__name__
        delta = getattr(self, "delta", None)
        budget = f"epsilon = {_fmt(self.epsilon)}" if not delta else f"(epsilon = {_fmt(self.epsilon)}, " \
                                                                       f"delta = {_fmt(delta)})"
        return f"{budget} LDP ({name}; declared, not verified)"


def user_record(mech, lanes: int = 1):
    """A user's mechanism's record: ``kernel_params(lanes)`` if it takes ``lanes``, else ``kernel_params()``."""
    if "lanes" in inspect.signature(mech.kernel_params).parameters:
        return mech.kernel_params(lanes=lanes)
    return mech.kernel_params()


def build_mechanism(spec: str, epsilon: float, bounds, delta: float | None = None) -> Mechanism:
    """A user's :class:`Mechanism` from its canonical value, built and checked (one-line errors)."""
    cls = usercode.resolve(spec, Mechanism, "mechanism")
    shown = usercode.shown(spec)
    params = inspect.signature(cls).parameters
    kwargs = {"epsilon": float(epsilon), "bounds": np.asarray(bounds, dtype=float)}
    if "delta" in params:
        kwargs["delta"] = delta
    try:
        mech = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001  (the user's code)
        raise ConfigError(f"mechanism = {shown!r}: {cls.__name__}({', '.join(kwargs)}) failed: "
                          f"{usercode.describe_exception(exc)}") from None
    try:
        record = user_record(mech)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"mechanism = {shown!r}: kernel_params() failed: {usercode.describe_exception(exc)}") from None
    if not (isinstance(record, tuple) and hasattr(type(record), "_fields")):
        raise ConfigError(f"mechanism = {shown!r}: kernel_params() returned a {type(record).__name__}, not a "
                          "NamedTuple record")
    usercode.refuse_lists([release.registry.get(type(record)), draw_noise.registry.get(type(record))],
                          f"mechanism = {shown!r}")
    if type(record) in release.registry:
        check_release_draws(record, mech.bounds.size, shown)
    elif type(record) not in draw_noise.registry:
        raise ConfigError(f"mechanism = {shown!r}: neither a noise nor a release is registered for "
                          f"{type(record).__qualname__} records: decorate its draw with "
                          f"@register_noise({type(record).__qualname__}) (additive noise) or "
                          f"@register_release({type(record).__qualname__}) (a release of the scaled gradient)")
    else:
        check_noise_draws(record, shown)
    try:
        variance = getattr(mech, "variance", None)
    except Exception as exc:  # noqa: BLE001  (the user's property)
        raise ConfigError(f"mechanism = {shown!r}: its variance failed at epsilon = {mech.epsilon:g}: "
                          f"{usercode.describe_exception(exc)}") from None
    if variance is not None and not (isinstance(variance, (int, float, np.floating)) and math.isfinite(variance)
                                     and variance >= 0):
        raise ConfigError(f"mechanism = {shown!r}: variance = {variance!r} is not a finite number >= 0 (or None)")
    if not getattr(mech, "name", ""):
        mech.name = cls.__name__
    return mech


#: Noise draws of a user's mechanism made twice from one seed in plain Python: finite, and equal (reproducible).
REPEAT_DRAWS = 64


def check_noise_draws(record, shown: str) -> None:
    """Draw a user's noise twice from one seed in plain Python: refuse it non-finite or not reproducible.

    A noise that draws from ``np.random.*`` (or any source besides ``gen``)
    passes an audit and runs, but no run of it can be repeated; one that
    draws infinities makes every replication diverge and the audit read
    nothing (one line each, before any compilation).
    """
    try:
        first, again = usercode.draws_twice(lambda gen: draw_noise(record, gen), REPEAT_DRAWS)
    except Exception as exc:  # noqa: BLE001  (the user's code, run as plain Python)
        raise ConfigError(f"mechanism = {shown!r}: its noise failed in plain Python: "
                          f"{usercode.describe_exception(exc)}") from None
    value = first[0]
    if not usercode.is_number(value):
        # an array was drawn and added as a 2-D stack (numba's TypingError in the run, the audit's too)
        raise ConfigError(f"mechanism = {shown!r}: its noise returned a {type(value).__name__} ({usercode.short(value)})"
                          f"{usercode.defined_at(draw_noise.registry.get(type(record)))}; a float is expected: the "
                          "noise of one coordinate, which ldpsim adds to each coordinate with a draw of its own")
    first, again = np.asarray(first, dtype=float), np.asarray(again, dtype=float)
    if not np.isfinite(first).all():
        bad = first[~np.isfinite(first)][0]
        raise ConfigError(f"mechanism = {shown!r}: its noise drew {float(bad)!r} in plain Python ({int(np.sum(~np.isfinite(first)))} "
                          f"of {REPEAT_DRAWS} draws): a noise must be finite")
    if not np.array_equal(first, again):
        raise ConfigError(f"mechanism = {shown!r}: its noise is not a function of the generator it is given: two runs "
                          "from one seed drew different values (np.random.* or another source of randomness besides "
                          "gen?); draw only from gen, with ldpsim.extend's functions, or neither its audit nor a run "
                          "of it can be reproduced")


#: Scaled gradients at which a user's release is drawn twice: the two corners of the box and its centre.
RELEASE_PROBES = (-1.0, 0.0, 1.0)


def check_release_draws(record, dim: int, shown: str) -> None:
    """Release ``t = -1, 0, 1`` (every coordinate) twice from one seed in plain Python: finite and reproducible."""
    def draw(gen):
        out = []
        for value in RELEASE_PROBES:
            t = np.full(dim, value)
            release(record, gen, t)
            out.extend(t.tolist())
        return out

    try:
        first, again = usercode.draws_twice(draw, REPEAT_DRAWS // len(RELEASE_PROBES))
    except Exception as exc:  # noqa: BLE001  (the user's code, run as plain Python)
        raise ConfigError(f"mechanism = {shown!r}: its release failed in plain Python: "
                          f"{usercode.describe_exception(exc)}") from None
    first, again = np.asarray(first, dtype=float), np.asarray(again, dtype=float)
    if not np.isfinite(first).all():
        raise ConfigError(f"mechanism = {shown!r}: its release drew {float(first[~np.isfinite(first)][0])!r} in plain "
                          "Python: a release must be finite")
    if not np.array_equal(first, again):
        raise ConfigError(f"mechanism = {shown!r}: its release is not a function of the generator it is given: two "
                          "runs from one seed drew different values (np.random.* or another source of randomness "
                          "besides gen?); draw only from gen, with ldpsim.extend's functions")


__all__ = ["Mechanism", "RELEASE_PROBES", "REPEAT_DRAWS", "build_mechanism", "check_noise_draws",
           "check_release_draws", "user_record"]
