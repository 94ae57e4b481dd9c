"""A user's interval method: its class, its per-step update in the kernels, and the checks before a run.

A researcher's method lives in a file of theirs and runs in the coverage
study beside the built-in ones (docs/extending.md, "Your own interval
method"). A method that needs the sums of the iterates over segments of the
path (batch means and their kin) declares only

* its **segments**, :meth:`IntervalMethod.segments`: the steps at which they
  end. The kernels stream the sums as data, no code of the user's in the
  kernel: the batch stream (the built-in BM's, its open sum in a register)
  serves a method with BM's ends or, in a run without BM, the first such
  method; others go to a :class:`ldpsim.recursion.kernels.SegmentSums` beside it;
* its **interval** from one replication's :class:`Segments`.

Any other method declares

* the **state** it streams per replication: a ``typing.NamedTuple`` record of
  arrays (per-replication arrays from :func:`~ldpsim.engine.dialect.lanes.lane_array`,
  schedules shared by the lanes as plain arrays), built by
  :meth:`IntervalMethod.state` for a setting;
* its **update** at each step, registered for the record with
  :func:`register_update`: ``update(state, i, theta)`` sees the main path's
  iterate after step ``i`` (a number for a scalar model, the ``(d,)`` array
  otherwise) and is compiled into the same lane kernel as the main path, in
  its pass (no pass of its own: it reads no observation);
* its **interval** from one replication's final state, :meth:`IntervalMethod.interval`.

A config names it as it names a user's model:
``methods: [BM, examples/my_batch_means.py:MyBatchMeans]``. The class's
``__init__`` parameters with their defaults are its config keys (one value per
run). Everything wrong in the user's file is one line naming file and line
(:func:`prepare`, :func:`check_instance`); numba's errors in the update are cut
to at most 15 lines (:mod:`ldpsim.engine.runs.usercode`).
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba.core import types
from numba.extending import overload

from ..engine.runs import usercode
from ..engine.runs.config import Range
from ..engine.dialect.dispatch import by_record
from ..engine.errors import ConfigError
from ..engine.dialect.jit import OVERLOAD_OPTIONS
from ..engine.dialect.lanes import LaneArray, LaneArrayType, lane_array, lane_of
from .methods import REGISTRY


class Segments(NamedTuple):
    """What a method that asks for segments gets (:meth:`IntervalMethod.segments`): the ends and the iterates' sums.

    Attributes
    ----------
    ends : numpy.ndarray
        ``int64`` ``(K,)``: the segments' last steps ``e_0 < ... < e_{K-1} <= n``.
    sums : numpy.ndarray
        ``(K, d)``: ``sums[k] = theta_{e_{k-1} + 1} + ... + theta_{e_k}`` (``e_{-1} = 0``), added left to
        right, as the kernels' own block and batch sums are (a lane array inside a run's kernel call).
    """

    ends: np.ndarray
    sums: object


@by_record
def method_update(state, i, theta):
    """A user's method's update after step ``i`` of the main path, whose iterate is ``theta`` (in place on ``state``).

    ``theta`` is a number (a lane vector with lanes) for a scalar model, the
    ``(d,)`` array otherwise.
    """


def register_update(record_cls):
    """Register ``update(state, i, theta)`` as the per-step update of a method whose state is a ``record_cls``.

    The function is plain Python: the twin and ``NUMBA_DISABLE_JIT=1`` run it
    as it is, and the kernels compile it (with everything it calls, which must
    be ``@kernel_function``s or ldpsim's). It runs after every step of the
    main path; it changes ``state``'s arrays in place and returns nothing.
    """
    record_cls.__ldpsim_method_state__ = True  # `ldpsim kernels` names the kernels that stream it
    return method_update.register(record_cls)


def add_iterate(out, theta):
    """``out[q] += theta_q`` for each coordinate: ``theta`` a number (``out[0] += theta``) or a ``(d,)`` array.

    The additions are those of the main kernel's own sums, in the same order,
    so a sum streamed with it equals the kernel's to the bit.
    """
    if isinstance(theta, np.ndarray):
        for q in range(theta.shape[0]):
            out[q] += theta[q]
    else:
        out[0] += theta


@overload(add_iterate, jit_options=OVERLOAD_OPTIONS, inline="always")
def _add_iterate(out, theta):
    if isinstance(theta, (types.Array, LaneArrayType)):
        def each(out, theta):
            for q in range(theta.shape[0]):
                out[q] += theta[q]
        return each

    def one(out, theta):
        out[0] += theta
    return one


class IntervalMethod:
    """Base class of a user's interval method (see the module's docstring and docs/extending.md).

    Class attributes a subclass may set: ``name`` (how tables print it;
    default the class name), ``dims`` (the model dimensions it runs on, a
    tuple, or ``None`` for any), ``looks`` (``False``: it has no interval at
    a look; ``True``, the default: at a look ``t`` its interval is that of a
    run of ``n = t`` on the same replication), ``ranges`` and
    ``descriptions`` of its keys (as a model's).
    """

    name: str | None = None
    dims: tuple | None = None
    looks: bool = True
    ranges: dict = {}
    descriptions: dict = {}

    def segments(self, setting, dim: int):
        """The steps at which the segments whose iterate sums the method reads end (instead of :meth:`state`).

        An increasing sequence of integers ``e_0 < ... < e_{K-1}``, ``1 <= e_0``,
        ``e_{K-1} <= setting.n``; :meth:`interval` then gets a :class:`Segments`
        of them, ``sums[k]`` the sum of the iterates ``e_{k-1} + 1 .. e_k``.
        """
        raise NotImplementedError

    def state(self, setting, dim: int, lanes: int):
        """The record the kernel streams for one kernel call of ``lanes`` replications side by side.

        ``setting`` holds the run's values (``setting.n``, ``setting.gamma``,
        ``setting.level``, ...); ``dim`` is the model's dimension. Make the
        per-replication arrays with ``lane_array(shape, lanes)``.
        """
        raise NotImplementedError

    def interval(self, state, theta_bar: np.ndarray, setting):
        """``(lower, upper)``, each ``(dim,)``, from one replication's final ``state`` (plain numpy arrays).

        ``theta_bar`` is the main path's average. NaN or an exception-free
        infinite end counts the replication as failed for this method alone.
        """
        raise NotImplementedError

    def estimate(self, state, theta_bar: np.ndarray, setting) -> np.ndarray:
        """The point estimate the summary's bias and SD describe (default: ``theta_bar``)."""
        return theta_bar

    def validate(self, setting, dim: int) -> None:
        """Raise ``ValueError("...")`` (one line) if the method cannot run ``setting``; the default accepts all."""


# --- the class, as a run finds it ---------------------------------------------------------------

def _own(cls, attr: str) -> bool:
    return any(attr in k.__dict__ for k in cls.__mro__ if k not in (IntervalMethod, object))


def label(value) -> str:
    """How tables name a method: a built-in's name, or a user's class's ``name`` (default its class name)."""
    if isinstance(value, str) and not usercode.looks_like_spec(value):
        return value
    cls = method_class(value)
    return cls.name


def is_user_method(value) -> bool:
    """Whether a ``methods`` entry names a user's class (``file.py:Class``, ``module:Class``, a class)."""
    return isinstance(value, type) or usercode.looks_like_spec(value)


def method_class(value) -> type:
    """The prepared class a ``methods`` entry (canonical spec or class) names."""
    return prepare(usercode.resolve(value, IntervalMethod, "methods"), value)


def canonical(value) -> str:
    """A ``methods`` entry naming a user's class as the run holds it: ``<path>:<Class>#<hash>`` (one-line errors)."""
    text = usercode.canonical(value, IntervalMethod, "methods")
    prepare(usercode.resolve(text, IntervalMethod, "methods"), text)
    return text


def prepare(cls: type, text) -> type:
    """Fill in what a user's method class leaves out, and check what it gives (one-line errors)."""
    if cls.__dict__.get("_ldpsim_prepared") is True:
        return cls
    shown = usercode.shown(text) if isinstance(text, str) else cls.__name__
    where = f"methods entry {shown!r}"
    if not _own(cls, "interval"):
        raise ConfigError(f"{where}: {cls.__name__} does not define interval()")
    if _own(cls, "state") == _own(cls, "segments"):
        raise ConfigError(f"{where}: {cls.__name__} defines " + ("both state() and segments(); keep one"
                                                                  if _own(cls, "state") else
                                                                  "neither state() nor segments(); define one"))
    if not _own(cls, "name") or cls.name is None:
        cls.name = cls.__name__
    if not (isinstance(cls.name, str) and cls.name.strip() and ":" not in cls.name):
        raise ConfigError(f"{where}: {cls.__name__}.name = {cls.name!r} is not a non-empty name without ':'")
    if cls.name in REGISTRY:  # its rows would read as the built-in's
        raise ConfigError(f"{where}: {cls.__name__}.name = {cls.name!r} is the name of a built-in method; give it "
                          "another")
    if cls.dims is not None and not (isinstance(cls.dims, tuple) and all(isinstance(d, int) and d >= 1
                                                                          for d in cls.dims)):
        raise ConfigError(f"{where}: {cls.__name__}.dims = {cls.dims!r} is not None or a tuple of dimensions")
    # no __init__ of its own: no keys (object's takes *args, **kwargs)
    params = [] if cls.__init__ is object.__init__ else usercode.signature_keys(cls, "methods", shown, skip=("self",))
    cls.keys = tuple(n for n, _ in params)
    cls.key_defaults = dict(params)
    missing = [n for n, d in params if d is inspect.Parameter.empty]
    if missing:
        raise ConfigError(f"{where}: {cls.__name__}.__init__ takes {missing[0]} without a default; give each key "
                          "of a method a default")
    for attr in ("ranges", "descriptions"):
        table = getattr(cls, attr, {}) or {}
        if not isinstance(table, dict) or any(k not in cls.keys for k in table):
            bad = next((k for k in table if k not in cls.keys), None) if isinstance(table, dict) else None
            raise ConfigError(f"{where}: {cls.__name__}.{attr} names {bad!r}, which is not a parameter of "
                              f"{cls.__name__}.__init__ ({', '.join(cls.keys) or 'none'})" if bad else
                              f"{where}: {cls.__name__}.{attr} must map key names to texts")
    for key, text_range in (getattr(cls, "ranges", {}) or {}).items():
        try:
            Range(str(text_range))
        except ValueError:
            raise ConfigError(f"{where}: ranges[{key!r}] = {text_range!r} is not an interval like '(0, 1)'") from None
    cls._ldpsim_prepared = True
    return cls


def _frame(exc: BaseException, cls) -> str:
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    return usercode._user_line(exc, Path(path)) if path else ""


def call(method, what: str, shown: str, func, *args):
    """``func(*args)`` of a user's method with any exception of the user's code as one line naming file and line.

    ``what`` names the call in the message (``interval()`` is read as ``MyMethod.interval()``).
    """
    try:
        return func(*args)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001  (the user's code)
        name = what if " " in what else f"{type(method).__name__}.{what}"
        raise ConfigError(f"methods entry {shown!r}: {name} failed: "
                          f"{usercode.describe_exception(exc)}{_frame(exc, type(method))}") from None


def build(value, options: dict):
    """An instance of the user's method ``value`` with its keys from ``options`` (the run's values)."""
    cls = method_class(value)
    kwargs = {k: options.get(k, cls.key_defaults[k]) for k in cls.keys}
    try:
        return cls(**kwargs)
    except Exception as exc:  # noqa: BLE001  (the user's code)
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise ConfigError(f"methods entry {usercode.shown(value)!r}: {cls.__name__}({args}) failed: "
                          f"{usercode.describe_exception(exc)}{_frame(exc, cls)}") from None


#: Steps of the plain-Python check of an update before any kernel is compiled.
CHECK_STEPS = 8


def asks_segments(method) -> bool:
    """Whether a user's method (an instance) reads segment sums (:meth:`IntervalMethod.segments`), not a state."""
    return _own(type(method), "segments")


def segment_ends(method, shown: str, setting, dim: int) -> np.ndarray:
    """``method.segments(setting, dim)`` as ``int64`` ends, checked (one-line errors)."""
    got = call(method, "segments()", shown, method.segments, setting, dim)
    try:
        ends = np.asarray(got)
        valid = ends.ndim == 1 and ends.size > 0 and (ends.dtype.kind in "iu" or (
            ends.dtype.kind == "f" and np.isfinite(ends).all() and (ends == np.round(ends)).all()))
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise ConfigError(f"methods entry {shown!r}: segments() gave {usercode.short(got)}; a non-empty sequence of "
                          "integer steps is expected")
    ends = ends.astype(np.int64)
    n = int(setting.n)
    if ends[0] < 1 or ends[-1] > n or (np.diff(ends) <= 0).any():
        raise ConfigError(f"methods entry {shown!r}: segments() gave ends {usercode.short(ends.tolist())}; they must "
                          f"increase strictly from at least 1 to at most n = {n}")
    return ends


def kernel_state(method, shown: str, setting, dim: int, lanes: int):
    """``method.state(setting, dim, lanes)``, checked to be a NamedTuple record with a registered update.

    A method that asks for segments: a :class:`Segments` of its ends, its sums
    a ``(K, d)`` lane array the kernels' wrapper fills.
    """
    if asks_segments(method):
        ends = segment_ends(method, shown, setting, dim)
        return Segments(ends, lane_array((ends.shape[0], dim), lanes))
    record = call(method, "state()", shown, method.state, setting, dim, lanes)
    if not (isinstance(record, tuple) and hasattr(type(record), "_fields")):
        raise ConfigError(f"methods entry {shown!r}: state() returned a {type(record).__name__}, not a NamedTuple "
                          "record (class State(typing.NamedTuple): ...)")
    kind = type(record)
    if kind not in method_update.registry:
        raise ConfigError(f"methods entry {shown!r}: no update is registered for {kind.__qualname__} records: "
                          f"decorate it with @register_update({kind.__qualname__})")
    return record


def copy_record(record):
    """A record like ``record`` with every array its own copy (lane arrays too), numbers and schedules as they are."""
    def one(value):
        if isinstance(value, LaneArray):
            return LaneArray(value.array.copy())
        if isinstance(value, np.ndarray):
            return value.copy()
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return copy_record(value)
        return value

    return type(record)(*(one(v) for v in record))


class StateMaker:
    """``make(lanes)``: a fresh state record of a user's method for one kernel call of ``lanes`` replications.

    ``state()`` is called once per width (a run's kernel calls share their
    setting's path keys), each call gets a copy: the user's Python (a batch
    schedule, say) runs once per run, not once per kernel call.
    """

    def __init__(self, method, shown: str, setting, dim: int):
        self.method, self.shown, self.setting, self.dim = method, shown, setting, dim
        self._built: dict = {}

    def __call__(self, lanes: int):
        if lanes not in self._built:
            self._built[lanes] = kernel_state(self.method, self.shown, self.setting, self.dim, lanes)
        return copy_record(self._built[lanes])


def check_instance(method, shown: str, setting, dim: int, theta0: float) -> None:
    """Call the user's method in plain Python before any kernel is compiled: its state, a few updates (one-line errors)."""
    try:
        method.validate(setting, dim)
    except ValueError as exc:  # the method's own refusal, in its words
        raise ConfigError(f"methods entry {shown!r}: {type(method).name} cannot run this setting: {exc}") from None
    except Exception as exc:  # noqa: BLE001  (the user's code)
        raise ConfigError(f"methods entry {shown!r}: {type(method).__name__}.validate() failed: "
                          f"{usercode.describe_exception(exc)}{_frame(exc, type(method))}") from None
    record = kernel_state(method, shown, setting, dim, 1)
    if isinstance(record, Segments):  # no code of the user's runs in the kernel
        return
    theta = float(theta0) if dim == 1 else np.full(dim, float(theta0))
    update = method_update.registry[type(record)]
    for i in range(1, min(CHECK_STEPS, int(setting.n)) + 1):
        call(method, f"the update registered for {type(record).__qualname__}", shown, update, record, i, theta)


def lane_state(record, lane: int):
    """Replication ``lane``'s copy of a state record after a kernel call: every array its own, plain numpy."""
    def one(value):
        if isinstance(value, LaneArray):
            return lane_of(value, lane).copy()
        if isinstance(value, np.ndarray):
            return value.copy()
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return lane_state(value, lane)
        return value

    return type(record)(*(one(v) for v in record))


def state_floats(record) -> int:
    """Floats (and integers) one replication's copy of a state record holds."""
    total = 0
    for value in record:
        if isinstance(value, np.ndarray):
            total += value.size
        elif isinstance(value, tuple) and hasattr(type(value), "_fields"):
            total += state_floats(value)
        else:
            total += 1
    return total


def bounds(method, shown: str, record, theta_bar: np.ndarray, setting, dim: int):
    """``(lo, hi, estimate)`` of one replication as ``(dim,)`` float arrays (one-line errors for a wrong shape)."""
    lo, hi = call(method, "interval()", shown, method.interval, record, theta_bar, setting)
    own_estimate = type(method).estimate is not IntervalMethod.estimate
    est = call(method, "estimate()", shown, method.estimate, record, theta_bar, setting) if own_estimate else theta_bar
    return _coordinates(lo, "the lower end", shown, dim), _coordinates(hi, "the upper end", shown, dim), \
        _coordinates(est, "estimate()", shown, dim)


def _coordinates(value, what: str, shown: str, dim: int) -> np.ndarray:
    """``value`` as a ``(dim,)`` float array (one line if it is not one number per coordinate)."""
    if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == (dim,):  # (the common case: as is)
        return value
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.shape != (dim,):
        raise ConfigError(f"methods entry {shown!r}: interval() gave {what} of shape {np.shape(value)}; "
                          f"({dim},) is expected (one number per coordinate)")
    return arr


__all__ = ["CHECK_STEPS", "IntervalMethod", "Segments", "StateMaker", "add_iterate", "asks_segments", "bounds", "build",
           "canonical", "check_instance",
           "copy_record", "is_user_method", "kernel_state", "label", "lane_state", "method_class", "method_update",
           "prepare", "register_update", "segment_ends", "state_floats"]
