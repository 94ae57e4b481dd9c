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

import hashlib
import json
import math

import numpy as np

from ..engine.config import ConfigError, Key, Range, show
from ..models import MODELS
from ..models.covariates import COVARIATES
from ..privacy.mechanisms import MECHANISMS
from ..privacy.online import ONLINE_MECHANISMS, parse_budget

#: Grid keys of a path, in grid order (``n``, :data:`N_KEY`, goes last, after a study's own keys).
PATH_KEYS = (
    Key("model", "choice", "quantile", choices=tuple(MODELS), help="model (see Models)"),
    Key("tau", "float", 0.5, range=Range("(0, 1)"), help="quantile level (quantile models)"),
    Key("epsilon", "float", 1.0, range=Range("(0, inf]"), help="privacy budget per observation; inf: non-private"),
    Key("mechanism", "choice", None, choices=MECHANISMS + tuple(m for m in ONLINE_MECHANISMS if m not in MECHANISMS),
        nullable=True, help="privacy mechanism; default: the model's first"),
    Key("delta", "float", 1e-5, range=Range("(0, 1)"), help="delta of the Gaussian mechanisms"),
    Key("covariates", "choice", "truncnorm", choices=COVARIATES, help="covariate law of the regression models"),
    Key("clip", "float", 1.0, range=Range("(0, inf]"),
        help="residual clip of the linear model; gradient norm clip of the *_clip models"),
    Key("dim", "int", 5, range=Range("[1, 1000]"), help="covariates d of the online models (x = (1, z), z in R^d)"),
    Key("mu", "float", 1.0, range=Range("(0, inf]"), help="GDP budget per user (mechanism gdp); inf: non-private"),
    Key("budget", "any", None, nullable=True, convert=parse_budget,
        help="per-user budget law of the online models, {uniform: [a, b]}; default: the constant mu / epsilon"),
    Key("batch_size", "int", 1, range=Range("[1, inf)"), help="observations per step, each privatized"),
    Key("c", "float", 1.0, range=Range("(0, inf)"), help="step size eta_i = c i^-gamma"),
    Key("gamma", "float", 0.51, range=Range("(0, 1]"), help="step-size exponent"),
    Key("theta0", "float", 0.0, range=Range("(-inf, inf)", "the finite reals"), help="starting value, every coordinate"),
)
#: The number of SGD steps, the last grid key (it varies fastest, as the tables' columns).
#: The kernels count steps in int64 and as doubles (the random-scaling sums weigh step i by float(i)):
#: exact up to 2^53, which is also far beyond any run's time (a year per replication at 20 ns a step).
MAX_STEPS = 2 ** 53
N_KEY = Key("n", "int", 1_000_000, range=Range(f"[2, {MAX_STEPS}]", "[2, 2^53]"), help="SGD steps (observations)")
#: Keys that only some models read (``Model.keys``); blank in other models' settings.
MODEL_KEYS = ("tau", "mechanism", "delta", "covariates", "clip", "dim", "mu", "budget")


def path_values(values: dict) -> dict:
    """Blank the keys the model does not read and fill in its default mechanism.

    A grid over models then holds each distinct run once, and a setting
    shows only what applies to it (``tau`` is blank for ``linear``).
    """
    model = MODELS[values["model"]]
    values = {**values, **{k: None for k in MODEL_KEYS if k not in model.keys}}
    if "mechanism" in model.keys:
        if values["mechanism"] is not None and values["mechanism"] not in model.mechanisms:
            raise ConfigError(f"mechanism = {values['mechanism']!r} is not available for model {model.name!r}; "
                              f"allowed: {', '.join(model.mechanisms)}")
    return model.complete_values(values)


def path_seed_key(values: dict) -> int:
    """Integer identity of a setting's random paths: a hash of the model's path keys.

    Replication ``r`` draws from ``SeedSequence(root, spawn_key=(seed_key, r))``:
    a setting's numbers do not depend on which other settings run, nor on
    their order, and settings that differ only in keys that do not touch
    the path (``beta``, ``B``, ``level``, ``multiplier``, a study's
    checkpoints) share their paths (common random numbers).
    """
    identity = {"model": values["model"], **{k: values[k] for k in MODELS[values["model"]].path_keys}}
    if values["batch_size"] != 1:  # so that adding the key left every earlier seed as it was
        identity["batch_size"] = values["batch_size"]
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
    model = MODELS[setting.model]
    return (setting.model, setting.epsilon, setting.batch_size) + tuple(getattr(setting, k) for k in model.keys)


#: Model identity -> what stops it from being computed (None: nothing); one build per distinct model
#: (a gamma x beta grid builds one; the logistic model's G is a quadrature).
_MODEL_PROBLEMS: dict[tuple, str | None] = {}


def _model_problem(setting) -> str | None:
    identity = _model_identity(setting)
    if identity not in _MODEL_PROBLEMS:
        if len(_MODEL_PROBLEMS) > 1024:
            _MODEL_PROBLEMS.clear()
        _MODEL_PROBLEMS[identity] = _build_problem(setting)
    return _MODEL_PROBLEMS[identity]


def _build_problem(setting) -> str | None:
    from ..models import build_model

    try:
        with np.errstate(all="ignore"):
            model = build_model(setting)
            model.kernel_params()
            theta_star = np.asarray(model.theta_star(), dtype=float)
            if getattr(model, "clipped", False):  # where a clipped recursion converges: a root search, done now
                theta_star = np.r_[theta_star, np.asarray(model.limit(), dtype=float)]
            try:
                sigma = np.asarray(model.sigma(setting.batch_size), dtype=float)
            except NotImplementedError:  # a model without G or S (004's clipped recursions): no oracle to check
                sigma = None
    except (ArithmeticError, ValueError, np.linalg.LinAlgError, RuntimeError) as exc:  # RuntimeError: a root search
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}"
    if not np.isfinite(theta_star).all():
        return "its theta* (or the clipped recursion's limit) is not finite"
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
    if problem is not None:
        model = MODELS[setting.model]
        keys = ["epsilon", *model.keys, *(["batch_size"] if setting.batch_size != 1 else [])]
        values = ", ".join(f"{k} = {getattr(setting, k)}" for k in keys if getattr(setting, k) is not None)
        raise ConfigError(f"model {setting.model!r} cannot be computed in floating point at {values}: {problem}")


#: Cost of one observation of a path step, ``STEP_NS[0] + STEP_NS[1] x dim`` nanoseconds: the coverage and
#: trajectory kernels measured on a 2-core laptop under load (quantile 22-36 ns a step at d = 1, quantile
#: regression 160 at d = 4, the online Huber model 180, 690 and 2800 ns at d = 7, 22 and 102; 2026-11).
STEP_NS = (10.0, 30.0)


def path_seconds(setting) -> float:
    """Estimated seconds of one path of ``setting``: ``n`` steps of ``batch_size`` observations each."""
    dim = MODELS[setting.model].dimension(setting)
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
           "path_seconds", "path_seed_key", "path_values", "validate_path"]
