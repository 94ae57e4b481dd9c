"""A user's model class: found from its config value, completed with the defaults ldpsim needs, and checked.

What the public contract asks of a model (:mod:`ldpsim.extend`, docs/extending.md):
``kernel_params`` and ``theta_star``; everything else has a default, taken
here from the class itself:

* its config keys are the parameters of ``__init__`` besides ``epsilon``,
  with their defaults (a class that sets ``keys`` itself keeps them); a
  key of a built-in name (``tau``, ``delta``, ...) is validated as the
  built-in one, others by their default's type and the class's ``ranges``;
* every key shapes the path (``path_keys``), so settings that differ in one
  draw different streams;
* ``name`` defaults to the class name, ``dim`` to the length of
  ``theta_star()``;
* its privacy is declared, not verified (:attr:`~.base.Model.declared`).

:func:`check_model_instance` calls the user's code once in plain Python
(``theta_star``, ``kernel_params``, one observation and its gradient) before
any kernel is compiled, so that a wrong type, shape or registration is one
line naming the fault rather than a page of numba's typing errors.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np

from ..engine.runs import usercode
from ..engine.runs.config import Range
from ..engine.errors import ConfigError
from .base import Model, add_gradient_at, constrain, gradient_at, observe


def _own(cls, attr: str) -> bool:
    """Whether ``attr`` is set by ``cls`` or a base class other than :class:`Model` itself (not by ldpsim here)."""
    return any(attr in k.__dict__ and k.__dict__[attr] not in _INJECTED for k in cls.__mro__
               if k not in (Model, object, getattr(Model, "__base__", object)))


def prepare(cls: type, text: str) -> type:
    """Fill in what a user's model class leaves out, and check what it gives (one-line errors)."""
    if cls.__dict__.get("_ldpsim_prepared") is True:
        return cls
    shown = usercode.shown(text)
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise ConfigError(f"model = {shown!r}: {cls.__name__} does not define {', '.join(m + '()' for m in missing)}")
    if not _own(cls, "name"):
        cls.name = cls.__name__
    if not (isinstance(cls.name, str) and cls.name.strip()):
        raise ConfigError(f"model = {shown!r}: {cls.__name__}.name = {cls.name!r} is not a non-empty string")
    if not _own(cls, "dim"):
        cls.dim = None
    elif cls.dim is not None and (isinstance(cls.dim, bool) or not isinstance(cls.dim, int) or cls.dim < 1):
        raise ConfigError(f"model = {shown!r}: {cls.__name__}.dim = {cls.dim!r} is not a positive integer")
    params = usercode.signature_keys(cls, "model", shown)
    names = [n for n, _ in params]
    if "epsilon" not in inspect.signature(cls.__init__).parameters:
        raise ConfigError(f"model = {shown!r}: {cls.__name__}.__init__ must take epsilon (the privacy budget)")
    if not _own(cls, "keys"):
        cls.keys = tuple(names)
        cls.key_defaults = {n: d for n, d in params}
    ranges = getattr(cls, "ranges", {}) or {}
    if not isinstance(ranges, dict):
        raise ConfigError(f"model = {shown!r}: {cls.__name__}.ranges must map key names to intervals like '(0, 1)'")
    for key, text_range in ranges.items():
        if key not in cls.keys:
            raise ConfigError(f"model = {shown!r}: ranges names {key!r}, which is not a parameter of "
                              f"{cls.__name__}.__init__ ({', '.join(cls.keys) or 'none besides epsilon'})")
        try:
            Range(str(text_range))
        except ValueError:
            raise ConfigError(f"model = {shown!r}: ranges[{key!r}] = {text_range!r} is not an interval like '(0, 1)' "
                              "or '[1, inf)'") from None
    descriptions = getattr(cls, "descriptions", {}) or {}
    if not isinstance(descriptions, dict):
        raise ConfigError(f"model = {shown!r}: {cls.__name__}.descriptions must map key names to one-line texts")
    for key in descriptions:  # a misspelt key's text was dropped and the key showed the generic one
        if key not in cls.keys:
            raise ConfigError(f"model = {shown!r}: descriptions names {key!r}, which is not a parameter of "
                              f"{cls.__name__}.__init__ ({', '.join(cls.keys) or 'none besides epsilon'})")
    try:
        takes_lanes = "lanes" in inspect.signature(cls.kernel_params).parameters
    except (TypeError, ValueError):
        takes_lanes = False
    if not takes_lanes:  # the kernels call kernel_params(lanes): a TypeError deep inside a run
        raise ConfigError(f"model = {shown!r}: {cls.__name__}.kernel_params must take lanes=1 "
                          f"(def kernel_params(self, lanes=1): the kernels pass how many replications they advance "
                          f"side by side){usercode.defined_at(cls.kernel_params)}")
    if _own(cls, "theta_star") and not getattr(cls.theta_star, "_ldpsim_vector", False):
        cls.theta_star = _as_vector(cls.theta_star)
    if not _own(cls, "path_keys"):
        cls.path_keys = Model.path_keys + tuple(k for k in cls.keys if k not in Model.path_keys)
    if cls.dim is None:
        cls.dimension = classmethod(_dimension_by_building)
    estimated = []
    if not _own(cls, "hessian"):
        cls.hessian = _estimated_hessian
        estimated.append("G")
    if not _own(cls, "gradient_covariance"):
        cls.gradient_covariance = _estimated_covariance
        estimated.append("S")
    cls.estimated = tuple(estimated)
    if _own(cls, "guarantee"):  # the model states its own guarantee: ldpsim prints it as declared
        stated = cls.guarantee

        def guarantee(self):
            text = stated.fget(self) if isinstance(stated, property) else str(stated)
            return text if "not verified" in text else f"{text}; declared, not verified"

        cls.guarantee = property(guarantee)
    cls.declared = True
    cls._ldpsim_prepared = True
    return cls


def _as_vector(theta_star):
    """``theta_star`` whose numbers come back as a 1-D float array: a list of numbers, or a number for ``dim = 1``.

    The contract asks for a 1-D array, and ldpsim's studies index it
    (``theta_star()[0]``, ``.shape``): a list or a float failed deep inside
    a run. A list (or tuple) of numbers is the same vector; a single number is
    taken as the one coordinate of a one-dimensional model (there is nothing
    else it can mean), and refused for ``dim > 1`` (:func:`theta_star_of`),
    where broadcasting it to every coordinate would guess. Anything else is
    returned as it is, for :func:`theta_star_of` to refuse in one line.
    """
    import functools

    @functools.wraps(theta_star)
    def vector(self):
        value = theta_star(self)
        if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype == float:
            return value
        if isinstance(value, (bool, np.bool_, str, bytes)):
            return value
        try:
            theta = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return value
        if theta.ndim == 0 and getattr(self, "dim", None) in (None, 1):
            return theta.reshape(1)
        return theta if theta.ndim == 1 else value

    vector._ldpsim_vector = True
    return vector


def _dimension_by_building(cls, setting) -> int:
    """Coordinates of a user's model that gives no ``dim``: the length of its ``theta_star()`` at ``setting``."""
    return build(cls, setting, usercode.shown(setting.model)).dim


def key_specs(cls) -> list[tuple[str, object, str | None, str]]:
    """``(name, default, range text, help)`` of each key of a prepared user model class."""
    defaults = getattr(cls, "key_defaults", {})
    ranges = getattr(cls, "ranges", {}) or {}
    helps = getattr(cls, "descriptions", {}) or {}
    return [(k, defaults.get(k, inspect.Parameter.empty), ranges.get(k), str(helps.get(k, "")))
            for k in cls.keys]


def _user_frame(exc: BaseException, cls) -> str:
    module = __import__("sys").modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    return usercode._user_line(exc, Path(path)) if path else ""


def call(model, method: str, shown: str, *args):
    """``model.method(*args)`` with any exception of the user's code turned into one line."""
    try:
        return getattr(model, method)(*args)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001  (the user's code)
        raise ConfigError(f"model = {shown!r}: {type(model).__name__}.{method}() failed: "
                          f"{usercode.describe_exception(exc)}{_user_frame(exc, type(model))}") from None


def kernel_record(model, shown: str, lanes: int = 1):
    """``model.kernel_params(lanes)`` (:func:`prepare` made sure it takes ``lanes``), checked to be a NamedTuple."""
    record = call(model, "kernel_params", shown, lanes)
    if not (isinstance(record, tuple) and hasattr(type(record), "_fields")):
        raise ConfigError(f"model = {shown!r}: kernel_params() returned a {type(record).__name__}, not a NamedTuple "
                          "record (class Params(typing.NamedTuple): ...)")
    return record


def theta_star_of(model, shown: str) -> np.ndarray:
    """``theta_star()`` as a finite 1-D float array whose length agrees with ``dim`` (one-line errors)."""
    value = call(model, "theta_star", shown)
    at = usercode.defined_at(type(model).theta_star)
    try:
        if isinstance(value, (bool, np.bool_, str, bytes)):
            raise TypeError
        theta = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"model = {shown!r}: theta_star() returned a {type(value).__name__} "
                          f"({usercode.short(value)}){at}; "
                          "it must return the true parameter, a 1-D array of the dim numbers (a number for dim = "
                          "1)") from None
    dim = getattr(model, "dim", None)
    if theta.ndim == 0:
        if dim not in (None, 1):
            raise ConfigError(f"model = {shown!r}: theta_star() returned the number {usercode.short(value)}{at}, "
                              "but dim = "
                              f"{dim}: return the {dim} coordinates of theta* as an array")
        theta = theta.reshape(1)
    if theta.ndim != 1 or theta.size == 0:
        raise ConfigError(f"model = {shown!r}: theta_star() has shape {theta.shape}{at}; a 1-D array of the dim "
                          "coordinates is expected")
    if not np.isfinite(theta).all():
        raise ConfigError(f"model = {shown!r}: theta_star() = {theta.tolist()} is not finite{at}")
    if dim is not None and dim != theta.size:
        raise ConfigError(f"model = {shown!r}: dim = {dim} but theta_star() has {theta.size} coordinate(s)")
    return theta


#: Draws of a user's observation and gradient made twice from one seed: they must agree (reproducibility).
REPEAT_DRAWS = 16


def check_model_instance(model, shown: str) -> None:
    """Call the user's model in plain Python: record, registrations, its gradients (one-line errors).

    :data:`REPEAT_DRAWS` observations and gradients are drawn twice from
    one seed and must agree; the first must be a finite number (a vector
    for ``dim > 1``). Sets ``model.dim`` from ``theta_star`` when the class
    gave none.
    """
    theta = theta_star_of(model, shown)
    if getattr(model, "dim", None) is None:
        model.dim = int(theta.size)
    record = kernel_record(model, shown)
    kind = type(record)
    if kind not in observe.registry:
        raise ConfigError(f"model = {shown!r}: no observation is registered for {kind.__qualname__} records: decorate "
                          f"the draw with @observe.register({kind.__qualname__})")
    scalar, vector = kind in gradient_at.registry, kind in add_gradient_at.registry
    if not (scalar or vector):
        raise ConfigError(f"model = {shown!r}: no gradient is registered for {kind.__qualname__} records: decorate it "
                          f"with @register_scalar({kind.__qualname__}) or @register_vector({kind.__qualname__})")
    if model.dim == 1 and not scalar:
        raise ConfigError(f"model = {shown!r}: dim = 1, so the gradient is a number: register it with "
                          f"@register_scalar({kind.__qualname__}) (it returns a float), not @register_vector")
    if model.dim > 1 and scalar:
        raise ConfigError(f"model = {shown!r}: dim = {model.dim}, but the gradient is registered with "
                          f"@register_scalar: register it with @register_vector({kind.__qualname__}) (it adds a "
                          f"({model.dim},) gradient to out)")
    usercode.refuse_lists([observe.registry[kind], gradient_at.registry.get(kind), add_gradient_at.registry.get(kind),
                           constrain.registry.get(kind)], f"model = {shown!r}")
    grad_func = gradient_at.registry.get(kind) or add_gradient_at.registry.get(kind)

    def gradient(gen):
        obs = observe(record, gen)
        if model.dim == 1:
            return gradient_at(record, obs, float(theta[0]), gen)
        out = np.zeros(model.dim)
        add_gradient_at(record, obs, theta.copy(), gen, out)
        return out

    try:
        first, again = usercode.draws_twice(gradient, REPEAT_DRAWS)
    except Exception as exc:  # noqa: BLE001  (the user's code, run as plain Python)
        raise ConfigError(f"model = {shown!r}: its observation or gradient failed in plain Python: "
                          f"{usercode.describe_exception(exc)}{_user_frame(exc, type(model))}") from None
    value = first[0]
    if model.dim == 1:
        if not usercode.is_number(value):
            raise ConfigError(f"model = {shown!r}: the gradient returned a {type(value).__name__} "
                              f"({usercode.short(value)}){usercode.defined_at(grad_func)}; a float is expected (use "
                              "where(cond, a, b) for a choice)")
    with np.errstate(invalid="ignore"):
        same = all(np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True)
                   for a, b in zip(first, again))
    if not same:
        raise ConfigError(f"model = {shown!r}: its draws are not a function of the generator it is given: two runs "
                          f"from one seed drew different values (np.random.* or another source of randomness "
                          "besides gen?); draw only from gen, with ldpsim.extend's functions, or no run of it can be "
                          "reproduced")
    if not np.isfinite(np.asarray(value, dtype=float)).all():
        raise ConfigError(f"model = {shown!r}: the gradient at theta* is not finite ({usercode.short(value)})")


def build(cls, setting, shown: str) -> Model:
    """``cls.from_setting(setting)`` with an exception in the user's ``__init__`` as one line."""
    kwargs = {"epsilon": setting.epsilon, **{k: getattr(setting, k) for k in cls.keys}}
    try:
        model = cls.from_setting(setting)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001  (the user's code)
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise ConfigError(f"model = {shown!r}: {cls.__name__}({args}) failed: {usercode.describe_exception(exc)}"
                          f"{_user_frame(exc, cls)}") from None
    if getattr(model, "dim", None) is None:
        model.dim = int(theta_star_of(model, shown).size)
    return model


def _estimated_hessian(self):
    """``G`` estimated by Monte Carlo (:mod:`.truth`): the model gives no ``hessian()``."""
    from .truth import truth_of

    return truth_of(self).G


def _estimated_covariance(self):
    """``S`` estimated by Monte Carlo (:mod:`.truth`): the model gives no ``gradient_covariance()``."""
    from .truth import truth_of

    return truth_of(self).S


#: The methods :func:`prepare` gives a class that lacks them (not the class's own).
_INJECTED = (_estimated_hessian, _estimated_covariance)


def estimated_parts(cls) -> tuple[str, ...]:
    """Which of ``G`` and ``S`` ldpsim estimates for a model class (empty for the built-in models)."""
    return getattr(cls, "estimated", ())


def preflight(setting, truth_check: bool = True) -> None:
    """Everything that can be checked of a user's model before its kernels are compiled (one-line errors).

    The class and its keys, one call of its code in plain Python, then its
    truth: what the model does not give is estimated now (so that a run's
    workers find it cached), what it gives is checked against the estimates
    (:func:`.truth.check_declared`) unless ``truth_check`` is false.
    """
    from .truth import check_declared, check_estimates

    shown = usercode.shown(setting.model)
    cls = prepare(usercode.resolve(setting.model, Model, "model"), setting.model)
    model = build(cls, setting, shown)
    check_model_instance(model, shown)
    with usercode.compile_errors(f"model = {shown!r}"):
        declared = {}
        if "G" not in cls.estimated:
            declared["G"] = call(model, "hessian", shown)
        if "S" not in cls.estimated:
            declared["S"] = call(model, "gradient_covariance", shown)
        for part, value in declared.items():
            d = model.dim
            try:
                ok = np.asarray(value, dtype=float).shape in ((d, d),) + (((), (1,)) if d == 1 else ())
            except (TypeError, ValueError):
                ok = False
            if not ok:
                name = "hessian()" if part == "G" else "gradient_covariance()"
                raise ConfigError(f"model = {shown!r}: {name} returned {usercode.short(value)}; a ({d}, {d}) array "
                                  "is expected")
        if cls.estimated or truth_check:
            check_estimates(model, shown, declared)  # the gradient finite, G invertible (estimated or given)
        if truth_check:  # the mean gradient at theta* is 0, and what the model gives agrees with the estimates
            check_declared(model, shown, declared)


def run_meta(settings, build_model) -> dict:
    """What ``meta.json`` records of the users' code a run depends on, and of the truths ldpsim estimated.

    ``user_files``: the path and SHA-256 of every user's file the settings
    name (model, mechanism, streams); ``truth``: for each distinct model whose
    ``G`` or ``S`` is estimated, the estimates with their standard errors, and
    for each user's model whether its declared truth was checked. Within
    :func:`ldpsim.models.truth.deferred`, an estimate not yet made is left out and
    ``truth_pending: True`` says so.
    """
    from .truth import TruthPending, truth_of

    files, truths, seen, pending = {}, [], set(), False
    for s in settings:
        for key in ("model", "mechanism", "streams"):
            value = getattr(s, key, None)
            if usercode.looks_like_spec(value):
                source = usercode.source_of(value)
                if source is not None:
                    files.setdefault(source["path"], {**source, "key": key, "value": usercode.display(value)})
        cls_declared = usercode.looks_like_spec(s.model)
        model = build_model(s)
        keys = ("epsilon",) + tuple(k for k in type(model).keys if getattr(s, k, None) is not None)
        identity = (s.model,) + tuple((k, getattr(s, k)) for k in keys)
        if identity in seen:
            continue
        seen.add(identity)
        parts = model.estimated_parts()
        if not (parts or cls_declared):
            continue
        entry = {"model": usercode.display(s.model), **{k: getattr(s, k) for k in keys}, "estimated": list(parts)}
        if cls_declared:
            declared = [p for p in ("G", "S") if p not in parts]
            check = getattr(s, "truth_check", True)
            checked = " and ".join(["theta* (the mean gradient there is 0)"] + [f"declared {p}" for p in declared])
            entry["check"] = (f"{checked} checked against Monte Carlo within 4 SE" if check
                              else f"{checked} NOT checked (truth_check: false)")
        if parts:
            try:
                truth = truth_of(model)
                entry.update({k: v for k, v in truth.to_dict().items() if k not in ("theta_star",)})
            except TruthPending:  # (called within truth.deferred(): the estimate is made beside the compilation)
                pending = True
        truths.append(entry)
    out = {}
    if files:
        out["user_files"] = list(files.values())
    if truths:
        out["truth"] = truths
    if pending:
        out["truth_pending"] = True
    return out


def truth_notes(meta: dict) -> list[str]:
    """One line per model whose oracle is estimated: what was estimated, and how well it knows the length."""
    groups: dict[tuple, list] = {}
    for entry in meta.get("truth", []) if isinstance(meta.get("truth"), list) else []:
        if not isinstance(entry, dict) or not entry.get("estimated"):
            continue
        sigma, se = np.asarray(entry.get("sigma", []), dtype=float), np.asarray(entry.get("sigma_se", []), dtype=float)
        if sigma.ndim != 2 or se.shape != sigma.shape:
            continue
        with np.errstate(all="ignore"):
            rel = 0.5 * np.diag(se) / np.diag(sigma)  # the length is proportional to sqrt(Sigma_jj)
        key = (str(entry.get("model")), tuple(entry["estimated"]), entry.get("samples"))
        groups.setdefault(key, []).append(rel)
    notes = []
    for (model, parts, samples), rels in groups.items():
        rel = np.concatenate(rels) * 100
        spread = f"{rel.min():.2g}%" if rel.min() == rel.max() or len(rel) == 1 else f"{rel.min():.2g}-{rel.max():.2g}%"
        notes.append(f"oracle estimated: for model {model} ldpsim estimated {' and '.join(parts)} by Monte Carlo "
                     f"({samples} draws; docs/extending.md, Truth), so the oracle's length carries a relative "
                     f"standard error of {spread} besides its own (meta.json: truth).")
    return notes


_TRUTH_FIELDS = {"estimated", "check", "G", "G_se", "S", "S_se", "mean", "mean_se", "sigma", "sigma_se", "samples",
                 "step", "batches"}


def finite_or_none(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


__all__ = ["build", "call", "check_model_instance", "kernel_record", "key_specs", "prepare", "theta_star_of"]
