"""The config keys of an LDP-SGD path, and the identity its random streams are seeded from.

Every study that runs the recursion of :mod:`.kernels` takes these keys:
the model and its own keys (``tau``, ``mechanism``, ``delta``,
``covariates``, ``clip``; ``dim``, ``mu``, ``budget`` for the online models
of 004), the privacy budget, the step size
``eta_i = c i^-gamma``, the start ``theta0``, the mini-batch size and ``n``.
A setting's path depends on them alone, so two studies (or two settings of
one study that differ only in how they analyse the path) given the same
values draw the same paths from the same seed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import math

import numpy as np

from ..engine.runs import usercode
from ..engine.runs.config import ConfigError, Key, Range, show
from ..models import MODELS, canonical_model, is_user_model, model_class
from ..models import user as user_models
from ..models.covariates import COVARIATES
from ..models.mean import parse_law
from ..models.quantile import parse_law as parse_quantile_law
from ..privacy.mechanisms import Mechanism, names
from ..privacy.online import parse_budget


def parse_data_law(name: str, value) -> str:
    """A ``law`` value of any model that has one, in its canonical spelling; each model refuses the others' laws.

    The mean model's (``uniform``, ``beta(a, b)``) or the quantile model's (``normal``, ``cauchy``).
    """
    for parse in (parse_law, parse_quantile_law):
        try:
            return parse(name, value)
        except ConfigError:
            pass
    raise ConfigError(f"{name} = {value!r} is not a data law; allowed: uniform, or beta(a, b) with integers a, b >= 1 "
                      "and a + b <= 200 (model mean); normal or cauchy (model quantile)")


#: The built-in mechanisms' names, as configs spell them (every entry of the registry, in its order).
MECHANISM_NAMES = names()


def _mechanism_value(name: str, value):
    """A ``mechanism`` value: a built-in's name, or a user's mechanism class with its source hash."""
    if isinstance(value, str) and value in MECHANISM_NAMES:
        return value
    if isinstance(value, type) or usercode.looks_like_spec(value):
        return usercode.canonical(value, Mechanism, name)
    raise ConfigError(f"{name} = {show(value)} is not one of: {', '.join(MECHANISM_NAMES)}; or a user's mechanism "
                      "as 'path/to/file.py:Class'")


def _streams_value(name: str, value):
    """A ``streams`` value: the model whose random streams a setting draws (a built-in's name or a user's model)."""
    if isinstance(value, str) and value in MODELS:
        return value
    return canonical_model(name, value)

#: Grid keys of a path, in grid order (``n``, :data:`N_KEY`, goes last, after a study's own keys).
PATH_KEYS = (
    Key("model", "any", "quantile", convert=canonical_model,
        help="model (see Models), or a user's: path/to/file.py:Class (docs/extending.md)",
        label=f"one of: {', '.join(MODELS)}, or path/to/file.py:Class"),
    Key("tau", "float", 0.5, range=Range("(0, 1)"), help="quantile level (quantile models)"),
    Key("epsilon", "float", 1.0, range=Range("(0, inf]"), help="privacy budget per observation; inf: non-private"),
    Key("mechanism", "any", None, convert=_mechanism_value, nullable=True,
        help="privacy mechanism; default: the model's first; a user's: path/to/file.py:Class",
        label=f"one of: {', '.join(MECHANISM_NAMES)}, or path/to/file.py:Class"),
    Key("delta", "float", 1e-5, range=Range("(0, 1)"), help="delta of the Gaussian mechanisms"),
    Key("covariates", "choice", "truncnorm", choices=COVARIATES, help="covariate law of the regression models"),
    Key("clip", "float", 1.0, range=Range("(0, inf]"),
        help="residual clip of the linear model; gradient norm clip of the *_clip models"),
    Key("dim", "int", None, range=Range("[1, 1000]"), nullable=True,
        help="covariates d besides the intercept, x = (1, z), z in R^d: online models (default 5), regression "
             "models (default 3)"),
    Key("law", "any", None, nullable=True, convert=parse_data_law,
        label="uniform or beta(a, b) (model mean); normal or cauchy (model quantile)",
        help="data law: mean model on [0, 1], uniform (default) or beta(a, b) with integers a, b >= 1; quantile "
             "model, normal (default) or cauchy"),
    Key("mu", "float", 1.0, range=Range("(0, inf]"), help="GDP budget per user (mechanism gdp); inf: non-private"),
    Key("budget", "any", None, nullable=True, convert=parse_budget,
        help="per-user budget law of the online models, {uniform: [a, b]}; default: the constant mu / epsilon"),
    Key("batch_size", "int", 1, range=Range("[1, inf)"), help="observations per step, each privatized"),
    Key("c", "float", 1.0, range=Range("(0, inf)"), help="step size eta_i = c i^-gamma"),
    Key("gamma", "float", 0.51, range=Range("(0, 1]"), help="step-size exponent"),
    Key("theta0", "float", 0.0, range=Range("(-inf, inf)", "the finite reals"), help="starting value, every coordinate"),
    Key("streams", "any", None, convert=_streams_value, nullable=True,
        help="draw the random streams of this model instead of the setting's own (common random numbers: a "
             "user's re-implementation of a built-in model reproduces its numbers)"),
    Key("truth_check", "any", True, convert=lambda name, value: _boolean(name, value),
        help="users' models: refuse one whose declared G or S (or theta*) disagrees with its Monte Carlo estimate; "
             "false runs it anyway, and meta.json says so"),
)
#: The number of SGD steps, the last grid key (it varies fastest, as the tables' columns).
#: The kernels count steps in int64 and as doubles (the random-scaling sums weigh step i by float(i)):
#: exact up to 2^53, which is also far beyond any run's time (a year per replication at 20 ns a step).
MAX_STEPS = 2 ** 53
N_KEY = Key("n", "int", 1_000_000, range=Range(f"[2, {MAX_STEPS}]", "[2, 2^53]"), help="SGD steps (observations)")
#: Keys that only some models read (``Model.keys``); blank in other models' settings.
MODEL_KEYS = ("tau", "mechanism", "delta", "covariates", "clip", "dim", "law", "mu", "budget")
#: Names a user's model may not give its keys: those of every run, and the study's that are not model keys.
RESERVED = ("reps", "seed", "study", "model", "epsilon", "streams", "truth_check")
#: Keys declared by users' models of this process (beyond the studies' own), blank for the other models.
_USER_KEYS: set[str] = set()


def with_model_keys(keys: tuple, mapping: dict) -> tuple:
    """A study's keys plus those of the users' models a raw config names (after the built-in model keys).

    A user's model declares its keys as the parameters of its ``__init__``
    (:mod:`ldpsim.models.user`): a built-in key's name (``tau``) is validated
    as the built-in one, with the model's default; a new name by its
    default's type and the model's ``ranges``.
    """
    raw = mapping.get("model")
    values = raw if isinstance(raw, list) else [raw]
    by_name = {k.name: k for k in keys}
    added: dict[str, Key] = {}
    for value in values:
        if value is None or not (isinstance(value, type) or usercode.looks_like_spec(value)):
            continue
        cls = model_class(canonical_model("model", value))
        if not cls.declared:
            continue
        for name, default, range_text, text in user_models.key_specs(cls):
            if name in RESERVED or (name in by_name and name not in MODEL_KEYS):
                what = by_name[name].help if name in by_name else "a key of every run"
                raise ConfigError(f"model = {usercode.shown(value)!r}: its parameter {name!r} has the name of the "
                                  f"config key {name} ({what}); rename the parameter")
            if name in by_name:  # a built-in key's name: its check, with the model's default, range and help if given
                key = by_name[name]
                changes = {}
                if default is not inspect.Parameter.empty and default != key.default:
                    changes["default"] = default
                if range_text:
                    changes["range"] = Range(range_text)
                if text:
                    changes["help"] = text
                if changes and name not in added:
                    by_name[name] = added[name] = dataclasses.replace(key, **changes)
                continue
            if name in added:
                continue
            added[name] = _user_key(cls, name, default, range_text, text)
    if not added:
        return keys
    _USER_KEYS.update(k for k in added if k not in {key.name for key in keys})
    new = [k for k in added.values() if k.name not in {key.name for key in keys}]
    out = [by_name.get(k.name, k) for k in keys]
    at = next((i + 1 for i, k in enumerate(out) if k.name == MODEL_KEYS[-1]), 1)
    return tuple(out[:at] + new + out[at:])


def _user_key(cls, name: str, default, range_text, text: str) -> Key:
    """The config key of a parameter of a user's model: its kind from its default's type."""
    rng = Range(range_text) if range_text else None
    help_text = text or f"key of model {cls.name!r}"
    if default is inspect.Parameter.empty:
        return Key(name, "any", None, convert=_required(cls, name), help=f"{help_text} (required)")
    if isinstance(default, bool):
        return Key(name, "any", default, convert=_boolean, help=help_text)
    if isinstance(default, int):  # rate=1 makes an integer key: say so when 0.5 is refused
        return Key(name, "int", default, range=rng, help=help_text,
                   hint=f"({cls.__name__}.__init__ gives {name} the integer default {default}, which makes it an "
                        f"integer key: write {float(default)!r} there for a key that takes any number)")
    if isinstance(default, float):
        return Key(name, "float", default, range=rng, help=help_text)
    if isinstance(default, str):
        return Key(name, "any", default, convert=_text, help=help_text)
    return Key(name, "any", default, nullable=default is None, help=help_text)


def _required(cls, name):
    def convert(key, value):
        return value
    return convert


def _boolean(name: str, value):
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{name} = {show(value)} is not true or false")


def _text(name: str, value):
    if isinstance(value, str):
        return value
    raise ConfigError(f"{name} = {show(value)} is not a string")


def model_keys_of(values: dict) -> tuple:
    """The keys that only some models read: the built-in ones and those users' models declared."""
    return MODEL_KEYS + tuple(k for k in sorted(_USER_KEYS) if k in values)


def path_values(values: dict) -> dict:
    """Blank the keys the model does not read and fill in its default mechanism.

    A grid over models then holds each distinct run once, and a setting
    shows only what applies to it (``tau`` is blank for ``linear``).
    """
    model = model_class(values["model"])
    if model.declared and "mechanism" not in model.keys and values.get("mechanism") is not None:
        # a user's model that takes no mechanism ran without it, silently (built-in models refuse one they lack)
        raise ConfigError(f"mechanism = {usercode.shown(values['mechanism'])!r} is not available for model "
                          f"{model.name!r}: its __init__ takes no mechanism (its gradient privatizes itself)")
    values = {**values, **{k: None for k in model_keys_of(values) if k not in model.keys}}
    if not model.declared and "truth_check" in values:  # the built-in models' truth is ldpsim's own, tested
        values["truth_check"] = None
    if "mechanism" in model.keys:
        mech = values["mechanism"]
        if mech is not None and mech not in model.mechanisms and not (
                usercode.looks_like_spec(mech) and getattr(model, "user_mechanisms", False)):
            users = [m for m, cls in MODELS.items() if getattr(cls, "user_mechanisms", False)]
            hint = (f"; a user's mechanism runs with {', '.join(users)}" if usercode.looks_like_spec(mech)
                    else f"; allowed: {', '.join(model.mechanisms)}")
            raise ConfigError(f"mechanism = {usercode.shown(mech)!r} is not available for model {model.name!r}{hint}")
    return model.complete_values(values)


def stream_name(values: dict) -> str:
    """The name a setting's random streams are seeded with: its model's (``streams`` may name another)."""
    chosen = values.get("streams") or values["model"]
    return chosen if not is_user_model(chosen) else model_class(chosen).name


def path_seed_key(values: dict) -> int:
    """Integer identity of a setting's random paths: a hash of the model's path keys.

    Replication ``r`` draws from ``SeedSequence(root, spawn_key=(seed_key, r))``:
    a setting's numbers do not depend on which other settings run, nor on
    their order, and settings that differ only in keys that do not touch
    the path (``beta``, ``B``, ``level``, ``multiplier``, a study's
    checkpoints) share their paths (common random numbers). A user's model
    or mechanism is named by its ``name``, not its file, so moving the file
    (or the clone) does not change its numbers; ``streams`` names the model
    whose streams to draw.
    """
    model = model_class(values["model"])
    identity = {"model": stream_name(values), **{k: values[k] for k in model.path_keys}}
    mech = identity.get("mechanism")
    if isinstance(mech, str) and usercode.looks_like_spec(mech):
        # a user's mechanism by its name, as a user's model: its canonical value holds the file's absolute path,
        # and a clone elsewhere (CI's) must draw the same numbers
        cls = usercode.resolve(mech, Mechanism, "mechanism")
        identity["mechanism"] = "user:" + (getattr(cls, "name", "") or cls.__name__)
    # keys added after runs were committed enter only away from the value those runs had: their seeds stay
    for key, before in {"batch_size": 1, **model.late_path_keys}.items():
        if values[key] != before:
            identity[key] = values[key]
    return int(hashlib.sha256(json.dumps(identity, sort_keys=True, allow_nan=True).encode()).hexdigest()[:16], 16)


def validate_path(setting) -> None:
    """Checks of the path keys taken together, and that the model can be computed at them."""
    clip = setting.clip
    if clip is not None and math.isinf(clip) and setting.mechanism is not None:
        budget = f"epsilon = {setting.epsilon}" if setting.epsilon is not None else f"mechanism = {setting.mechanism}"
        raise ConfigError(f"clip = inf leaves the gradient unbounded: a private run ({budget}) needs a finite clip")
    if setting.n * setting.batch_size > MAX_STEPS:  # the kernels count observations in int64 and doubles too
        raise ConfigError(f"batch_size = {show(setting.batch_size)} at n = {setting.n} makes n x batch_size = "
                          f"{float(setting.n * setting.batch_size):.3g} observations, more than 2^53")
    check_model(setting)


def _model_identity(setting) -> tuple:
    model = model_class(setting.model)
    return ((setting.model, setting.epsilon, setting.batch_size, getattr(setting, "truth_check", None))
            + tuple(getattr(setting, k) for k in model.keys))


#: Model identity -> what stops it from being computed (None: nothing); one build per distinct model
#: (a gamma x beta grid builds one; the logistic model's G is a quadrature).
_MODEL_PROBLEMS: dict[tuple, str | None] = {}
#: Settings whose check waits for a Monte Carlo truth (:func:`ldpsim.models.truth.deferred`), by identity.
_PENDING: dict[tuple, object] = {}


def _model_problem(setting) -> str | None:
    identity = _model_identity(setting)
    if identity not in _MODEL_PROBLEMS:
        if len(_MODEL_PROBLEMS) > 1024:
            _MODEL_PROBLEMS.clear()
        _MODEL_PROBLEMS[identity] = _build_problem(setting, defer=True)
        if _MODEL_PROBLEMS[identity] is _DEFERRED:
            _MODEL_PROBLEMS[identity] = None
            _PENDING[identity] = setting
    return _MODEL_PROBLEMS[identity]


#: What :func:`_build_problem` returns for a model whose variance waits for its Monte Carlo truth.
_DEFERRED = object()


def settle_truths() -> None:
    """Estimate the truths that validation left for later (:func:`check_model`) and check what they give.

    A built-in model whose noise variance is estimated (NPRR's) is checked
    before the run without it; the run's compile step calls this beside the
    kernels' compilation (:func:`ldpsim.engine.runs.compiling.prepare`), and a
    setting whose variance is then not a positive finite number is refused
    as :func:`check_model` refuses it.
    """
    pending = list(_PENDING.items())
    _PENDING.clear()
    for identity, setting in pending:
        _MODEL_PROBLEMS[identity] = _build_problem(setting)
        check_model(setting)


def _build_problem(setting, defer: bool = False) -> str | None:
    from ..models import build_model
    from ..models.truth import TruthPending, deferred

    if is_user_model(setting.model):  # a user's model: its own one-line errors, raised (and remembered) here
        try:
            user_models.preflight(setting, bool(getattr(setting, "truth_check", True)))
        except ConfigError as exc:
            return exc
    try:
        with np.errstate(all="ignore"):
            model = build_model(setting)
            model.kernel_params()
            theta_star = np.asarray(model.theta_star(), dtype=float)
            if getattr(model, "clipped", False):  # where a clipped recursion converges: a root search, done now
                theta_star = np.r_[theta_star, np.asarray(model.limit(), dtype=float)]
            try:
                # a built-in model's estimated truth is left for the compile step (settle_truths); a user's is
                # estimated here, where its errors name the user's file
                with deferred() if defer and not is_user_model(setting.model) else contextlib.nullcontext():
                    sigma = np.asarray(model.sigma(setting.batch_size), dtype=float)
            except NotImplementedError:  # a model without G or S (004's clipped recursions): no oracle to check
                sigma = None
            except TruthPending:
                sigma = _DEFERRED
    except ConfigError as exc:  # a user's mechanism refused by its own checks: that line, not a float problem
        return exc
    except (ArithmeticError, ValueError, np.linalg.LinAlgError, RuntimeError) as exc:  # RuntimeError: a root search
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}"
    if not np.isfinite(theta_star).all():
        return "its theta* (or the clipped recursion's limit) is not finite"
    if sigma is _DEFERRED:
        return _DEFERRED
    if sigma is not None and not (np.isfinite(sigma).all() and (np.diag(sigma) > 0).all()):
        return "its asymptotic variance is not a positive finite number"
    return None


def check_model(setting) -> None:
    """Refuse a setting whose model cannot be computed in floating point (one line naming its keys).

    ``epsilon = 1e-300`` makes randomized response's variance overflow,
    ``epsilon = 1e300`` its flip probability underflow through ``exp``,
    ``tau = 1e-300`` the quantile's density vanish: the kernels would run for
    nothing, or the workers crash. What the model reads is named in the message.
    """
    problem = _model_problem(setting)
    if isinstance(problem, ConfigError):
        raise problem
    if problem is not None:
        model = model_class(setting.model)
        keys = ["epsilon", *model.keys, *(["batch_size"] if setting.batch_size != 1 else [])]
        values = ", ".join(f"{k} = {getattr(setting, k)}" for k in keys if getattr(setting, k) is not None)
        raise ConfigError(f"model {setting.model!r} cannot be computed in floating point at {values}: {problem}"
                          + _budget_edge(setting))


def _budget_edge(setting) -> str:
    """``; allowed: epsilon <= X ...`` when the budget's size alone stops a built-in model, else ``""``.

    A model computable at ``epsilon = 1`` but not at the epsilon given (randomized response: ``e^epsilon``
    beyond the largest float above 709.78; its variance beyond it below about 1e-154) is computable up to (or
    down to) an edge, found by bisection in ``log epsilon`` and said to four digits on the side that computes:
    the largest (smallest) usable value, not only the floating-point error (issue 44).
    """
    eps = getattr(setting, "epsilon", None)
    mech = getattr(setting, "mechanism", None)
    if (is_user_model(setting.model) or (isinstance(mech, str) and usercode.looks_like_spec(mech))
            or isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0
            or eps == 1.0):
        return ""

    def computes(value: float) -> bool:
        return _build_problem(setting.replace(epsilon=value), defer=True) in (None, _DEFERRED)

    if not computes(1.0):  # not the budget's problem alone
        return ""
    good, bad = 0.0, math.log(eps)  # log epsilon: computes at good, not at bad
    while abs(bad - good) > 1e-7 * max(1.0, abs(good)):
        mid = (good + bad) / 2.0
        good, bad = (mid, bad) if computes(math.exp(mid)) else (good, mid)
    edge = math.exp(good)
    toward = -1.0 if eps > 1.0 else 1.0  # round toward epsilon = 1, where it computes
    step = 10.0 ** (math.floor(math.log10(edge)) - 3)
    shown = float(f"{edge:.4g}")
    for _ in range(20):
        if computes(shown):
            break
        shown = float(f"{shown + toward * step:.4g}")
    else:
        return ""
    if eps > 1.0:
        return f"; allowed here: epsilon <= {shown:g} (the largest it computes at), or epsilon = inf (non-private)"
    return f"; allowed here: epsilon >= {shown:g} (the smallest it computes at)"


#: Cost of one observation of a path step, ``STEP_NS[0] + STEP_NS[1] x dim`` nanoseconds: the coverage and
#: trajectory kernels measured on a 2-core laptop under load (quantile 22-36 ns a step at d = 1, quantile
#: regression 160 at d = 4, the online Huber model 180, 690 and 2800 ns at d = 7, 22 and 102; 2026-11).
STEP_NS = (10.0, 30.0)


def path_seconds(setting) -> float:
    """Estimated seconds of one path of ``setting``: ``n`` steps of ``batch_size`` observations each."""
    dim = model_class(setting.model).dimension(setting)
    return setting.n * setting.batch_size * (STEP_NS[0] + STEP_NS[1] * dim) * 1e-9


def gamma_warnings(setting) -> list[tuple[str, str]]:
    """Warnings on the step-size exponent: the average has a CLT only for gamma in (1/2, 1)."""
    if setting.gamma <= 0.5:
        return [("gamma_low", f"gamma = {setting.gamma} <= 1/2: the average of the iterates has no central limit "
                              "theorem")]
    if setting.gamma >= 1.0:
        return [("gamma_high", f"gamma = {setting.gamma}: the theory needs gamma in (1/2, 1)")]
    return []


#: Kinds of :func:`gamma_warnings`.
GAMMA_WARNING_KINDS = {
    "gamma_low": ("gamma <= 1/2", "the average of the iterates has no central limit theorem"),
    "gamma_high": ("gamma >= 1", "the theory needs gamma in (1/2, 1)"),
}

__all__ = ["GAMMA_WARNING_KINDS", "MAX_STEPS", "MODEL_KEYS", "N_KEY", "check_model", "PATH_KEYS", "gamma_warnings",
           "path_seconds", "path_seed_key", "path_values", "settle_truths", "validate_path"]
